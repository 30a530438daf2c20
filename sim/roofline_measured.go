package sim

import (
	"bytes"
	_ "embed"
	"encoding/csv"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// The metrics a Measurement can name.
const (
	// MetricTPOT is the mean time per output token after the first, per
	// request (vLLM bench serve's TPOT).
	MetricTPOT = "tpot"
	// MetricITL is AIPerf's or LLMPerf's inter-token latency: per request
	// (E2E - TTFT) / (tokens - 1), which the model predicts as TPOT.
	MetricITL = "itl"
	// MetricLatency is the end-to-end time of a static batch (vLLM's
	// benchmark_latency.py): every prompt prefilled, then output-1 decode
	// steps over the whole batch.
	MetricLatency = "latency"
)

// The sets a Measurement belongs to.
const (
	// SetFit marks the points the defaults were fitted on.
	SetFit = "fit"
	// SetHeld marks the points kept out of the fit.
	SetHeld = "held"
)

// MeasuredBudget is the chunked-prefill step budget of the closed-loop
// measurements: TensorRT-LLM's max_num_tokens and the chunk size of vLLM
// V1 and SGLang on 80 GB GPUs.
const MeasuredBudget = 8192

// maxMeasurementTokens bounds the lengths and concurrency a Measurement
// may name, so that predicting one stays cheap.
const maxMeasurementTokens = 1 << 17

// Measurement is one published decode measurement: the deployment (GPU,
// tensor-parallel size, model and number formats), the load (concurrency
// and lengths), what was measured, and where it was published.
type Measurement struct {
	// ID names the point.
	ID string
	// Set is SetFit or SetHeld.
	Set string
	// Source and Engine say who measured it and with what.
	Source, Engine string
	// GPU and Model are built-in profile names; GPUs is the
	// tensor-parallel size.
	GPU   string
	GPUs  int
	Model string
	// Weights and KVCache are number formats (Dtypes).
	Weights, KVCache string
	// Concurrency is the closed loop's clients (MetricTPOT, MetricITL) or
	// the static batch (MetricLatency).
	Concurrency int
	// Input and Output are the prompt and answer lengths in tokens.
	Input, Output int
	// Metric is MetricTPOT, MetricITL or MetricLatency.
	Metric string
	// Measured is the published value.
	Measured time.Duration
	// URL is where it was published; Note says what was read there and
	// how any field was derived.
	URL, Note string
}

var measurementColumns = []string{"id", "set", "source", "engine", "gpu", "gpus", "model", "weights", "kv_cache",
	"concurrency", "input_tokens", "output_tokens", "metric", "measured_ms", "url", "note"}

// ErrMeasurements reports a measurement table that cannot be read.
var ErrMeasurements = errors.New("invalid measurement table")

// ParseMeasurements reads a measurement table: CSV with the header
// id,set,source,engine,gpu,gpus,model,weights,kv_cache,concurrency,
// input_tokens,output_tokens,metric,measured_ms,url,note and lines
// starting with # as comments. An error names the line and the field.
func ParseMeasurements(r io.Reader) ([]Measurement, error) {
	cr := csv.NewReader(r)
	cr.Comment = '#'
	cr.FieldsPerRecord = len(measurementColumns)
	cr.ReuseRecord = true
	header, err := cr.Read()
	if err != nil {
		return nil, measurementError(cr, "header", err)
	}
	if !slices.Equal(header, measurementColumns) {
		return nil, fmt.Errorf("%w: line 1: want the header %s, got %s", ErrMeasurements,
			strings.Join(measurementColumns, ","), strings.Join(header, ","))
	}
	var out []Measurement
	ids := map[string]bool{}
	for {
		rec, err := cr.Read()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return nil, measurementError(cr, "row", err)
		}
		m, field, err := parseMeasurement(rec)
		if err == nil && ids[m.ID] {
			field, err = "id", fmt.Errorf("%q appears twice", m.ID)
		}
		if err != nil {
			line, _ := cr.FieldPos(0)
			return nil, fmt.Errorf("%w: line %d: %s: %w", ErrMeasurements, line, field, err)
		}
		ids[m.ID] = true
		out = append(out, m)
	}
}

func measurementError(cr *csv.Reader, what string, err error) error {
	var pe *csv.ParseError
	if errors.As(err, &pe) {
		return fmt.Errorf("%w: line %d: %s: %w", ErrMeasurements, pe.Line, what, pe.Err)
	}
	return fmt.Errorf("%w: %s: %w", ErrMeasurements, what, err)
}

// parseMeasurement decodes one row; on error it names the field.
func parseMeasurement(rec []string) (Measurement, string, error) {
	m := Measurement{ID: rec[0], Set: rec[1], Source: rec[2], Engine: rec[3], GPU: rec[4], Model: rec[6],
		Weights: rec[7], KVCache: rec[8], Metric: rec[12], URL: rec[14], Note: rec[15]}
	ints := []struct {
		field string
		text  string
		to    *int
		hi    int
	}{
		{"gpus", rec[5], &m.GPUs, 4096},
		{"concurrency", rec[9], &m.Concurrency, maxMeasurementTokens},
		{"input_tokens", rec[10], &m.Input, maxMeasurementTokens},
		{"output_tokens", rec[11], &m.Output, maxMeasurementTokens},
	}
	for _, f := range ints {
		v, err := strconv.Atoi(f.text)
		if err != nil || v < 1 || v > f.hi {
			return m, f.field, fmt.Errorf("want a whole number in 1..%d, got %q", f.hi, f.text)
		}
		*f.to = v
	}
	ms, err := strconv.ParseFloat(rec[13], 64)
	if err != nil || !(ms > 0) || ms > 1e9 {
		return m, "measured_ms", fmt.Errorf("want a positive number of milliseconds, got %q", rec[13])
	}
	m.Measured = time.Duration(ms * float64(time.Millisecond))
	switch {
	case m.ID == "":
		return m, "id", errors.New("want a name")
	case m.Set != SetFit && m.Set != SetHeld:
		return m, "set", fmt.Errorf("want %s or %s, got %q", SetFit, SetHeld, m.Set)
	case m.Metric != MetricTPOT && m.Metric != MetricITL && m.Metric != MetricLatency:
		return m, "metric", fmt.Errorf("want %s, %s or %s, got %q", MetricTPOT, MetricITL, MetricLatency, m.Metric)
	case m.Output < 2:
		return m, "output_tokens", fmt.Errorf("want at least 2 tokens (a TPOT needs two), got %d", m.Output)
	case m.Source == "" || m.URL == "":
		return m, "source", errors.New("want the source and its url")
	}
	if _, err := LookupGPU(m.GPU); err != nil {
		return m, "gpu", err
	}
	if _, err := LookupModel(m.Model); err != nil {
		return m, "model", err
	}
	for _, f := range []struct{ field, v string }{{"weights", m.Weights}, {"kv_cache", m.KVCache}} {
		if _, ok := Dtypes[f.v]; !ok {
			return m, f.field, fmt.Errorf("want one of %s, got %q", dtypeNames(), f.v)
		}
	}
	return m, "", nil
}

// Roofline returns the model of the measured deployment with the package
// defaults: the measured batch, the prompt as the turn's own, the others
// halfway through their answers; a closed loop (chunked, MeasuredBudget)
// for MetricTPOT and MetricITL, no other requests for MetricLatency.
func (m Measurement) Roofline() (Roofline, error) {
	gpu, err := LookupGPU(m.GPU)
	if err != nil {
		return Roofline{}, err
	}
	model, err := LookupModel(m.Model)
	if err != nil {
		return Roofline{}, err
	}
	r := Roofline{GPU: gpu, Model: model, GPUs: m.GPUs, Weights: m.Weights, KVCache: m.KVCache,
		Batch: m.Concurrency, Prompt: m.Input, Context: m.Input + m.Output/2}
	if m.Metric != MetricLatency {
		r.Prefill = Prefill{ClosedLoop: true, Output: Lengths{Dist: Dist{Mean: float64(m.Output)}},
			Chunked: true, Budget: MeasuredBudget}
	}
	return r, nil
}

// measuredTurns is the number of simulated turns a prediction averages:
// the closed loop's phases are random.
const measuredTurns = 16

// Predict returns what the roofline r predicts for the measurement: the
// mean TPOT of simulated turns of Output tokens, or for MetricLatency the
// batch's prefill plus Output-1 of its decode steps. The turns are
// seeded, so the same r gives the same prediction.
func (m Measurement) Predict(r Roofline) (time.Duration, error) {
	if err := r.Validate(); err != nil {
		return 0, fmt.Errorf("%s: %w", m.ID, err)
	}
	p := r.NewPacer()
	var sum float64
	for turn := range measuredTurns {
		rng := rand.New(rand.NewPCG(uint64(turn), 0x5eed))
		p.Begin(rng)
		var decode time.Duration
		for k := 1; k < m.Output; k++ {
			decode += p.Step(rng, k, k)
		}
		sum += float64(decode) / float64(m.Output-1)
	}
	step := time.Duration(sum / measuredTurns)
	if m.Metric == MetricLatency {
		return r.PrefillTime(m.Concurrency*m.Input) + time.Duration(m.Output-1)*step, nil
	}
	return step, nil
}

// Ratio returns predicted over measured for the model with the defaults.
func (m Measurement) Ratio() (float64, error) {
	r, err := m.Roofline()
	if err != nil {
		return 0, err
	}
	got, err := m.Predict(r)
	if err != nil {
		return 0, err
	}
	return float64(got) / float64(m.Measured), nil
}

// Accuracy summarizes predicted over measured ratios: above 1 the model
// is pessimistic (slower than measured), below 1 optimistic.
type Accuracy struct {
	// Points is the number of measurements.
	Points int `json:"points"`
	// Median is the median ratio.
	Median float64 `json:"median"`
	// Within20 is the share of ratios within 20% of 1.
	Within20 float64 `json:"within_20pct"`
	// Low and High are the smallest and largest ratios: the worst
	// optimistic and the worst pessimistic miss.
	Low  float64 `json:"low"`
	High float64 `json:"high"`
	// P10 and P90 are the 10th and 90th percentiles of the ratios.
	P10 float64 `json:"p10"`
	P90 float64 `json:"p90"`
}

// Summarize computes the accuracy of the ratios.
func Summarize(ratios []float64) Accuracy {
	if len(ratios) == 0 {
		return Accuracy{}
	}
	s := slices.Sorted(slices.Values(ratios))
	a := Accuracy{Points: len(s), Low: s[0], High: s[len(s)-1],
		Median: pipeline.Percentile(s, 50), P10: pipeline.Percentile(s, 10), P90: pipeline.Percentile(s, 90)}
	in := 0
	for _, r := range s {
		if math.Abs(r-1) <= 0.2+1e-12 {
			in++
		}
	}
	a.Within20 = float64(in) / float64(len(s))
	return a
}

// String says the band in one phrase.
func (a Accuracy) String() string {
	return fmt.Sprintf("median %.2fx measured, %.0f%% of %d points within 20%%, 80%% between %.2fx and %.2fx, worst optimistic %.2fx, worst pessimistic %.2fx",
		a.Median, 100*a.Within20, a.Points, a.P10, a.P90, a.Low, a.High)
}

//go:embed testdata/roofline-measurements.csv
var measurementsCSV []byte

// Measurements returns the published decode measurements the defaults
// were fitted and checked on (testdata/roofline-measurements.csv).
func Measurements() ([]Measurement, error) {
	return ParseMeasurements(bytes.NewReader(measurementsCSV))
}

// RooflineAccuracy returns how the roofline model with the defaults
// compares with every published measurement, computed once.
var RooflineAccuracy = sync.OnceValues(func() (Accuracy, error) {
	ms, err := Measurements()
	if err != nil {
		return Accuracy{}, err
	}
	ratios := make([]float64, 0, len(ms))
	for _, m := range ms {
		r, err := m.Ratio()
		if err != nil {
			return Accuracy{}, err
		}
		ratios = append(ratios, r)
	}
	return Summarize(ratios), nil
})
