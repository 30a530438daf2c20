package scenarios

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"

	"github.com/goccy/go-yaml"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/sim"
)

// Expectation is one line of a scenario's expect section: a metric, a
// comparison and a value, such as tpot_p50_ms < 50.
type Expectation struct {
	Metric string
	Op     string
	Value  float64
	// Line is the line in the scenario file (0 if unknown).
	Line int
}

// String writes the expectation as a file would.
func (e Expectation) String() string {
	return fmt.Sprintf("%s %s %s", e.Metric, e.Op, strconv.FormatFloat(e.Value, 'g', -1, 64))
}

// Holds reports whether the value v meets the expectation.
func (e Expectation) Holds(v float64) bool {
	if math.IsNaN(v) {
		return false
	}
	switch e.Op {
	case "<":
		return v < e.Value
	case "<=":
		return v <= e.Value
	case ">":
		return v > e.Value
	case ">=":
		return v >= e.Value
	case "!=":
		return v != e.Value
	}
	return v == e.Value
}

var ops = []string{"<=", ">=", "==", "!=", "<", ">", "="}

// ParseExpectation parses the value side of an expectation: a number
// (meaning equal), or an operator and a number such as ">= 0.99".
func ParseExpectation(metric string, value any) (Expectation, error) {
	e := Expectation{Metric: metric, Op: "=="}
	if !slices.Contains(MetricNames(), metric) {
		return e, fmt.Errorf("unknown metric %q: want one of %s", metric, strings.Join(MetricNames(), ", "))
	}
	switch v := value.(type) {
	case uint64:
		e.Value = float64(v)
	case int64:
		e.Value = float64(v)
	case int:
		e.Value = float64(v)
	case float64:
		e.Value = v
	case string:
		s := strings.TrimSpace(v)
		for _, op := range ops {
			if rest, ok := strings.CutPrefix(s, op); ok {
				e.Op, s = op, strings.TrimSpace(rest)
				if op == "=" {
					e.Op = "=="
				}
				break
			}
		}
		f, err := strconv.ParseFloat(s, 64)
		if err != nil || math.IsNaN(f) {
			return e, fmt.Errorf("want a number or a comparison such as \">= 0.99\" or \"< 50\", got %q", v)
		}
		e.Value = f
	default:
		return e, fmt.Errorf("want a number or a comparison such as \">= 0.99\" or \"< 50\", got %v", value)
	}
	return e, nil
}

func (ld *loader) expectations(m yaml.MapSlice) ([]Expectation, error) {
	var out []Expectation
	for _, item := range m {
		key, ok := item.Key.(string)
		if !ok {
			return nil, ld.fieldErrorf("expect", "want metric names as keys, got %v", item.Key)
		}
		field := "expect." + key
		e, err := ParseExpectation(key, item.Value)
		if err != nil {
			return nil, ld.fieldError(field, err)
		}
		e.Line = ld.lines.line(field)
		out = append(out, e)
	}
	return out, nil
}

// Metrics are the named numbers expectations test: the report's (over
// the scenario's turns) and, prefixed mc_, the Monte Carlo run's.
type Metrics map[string]float64

var summaryMetrics = []string{"ttft", "ttfst", "tpot", "itl", "e2el", "ttfa"}

var causes = pipeline.Causes

// NewMetrics collects the metrics of a closed report and a Monte Carlo
// result (either may be nil: its metrics are then missing).
func NewMetrics(r *pipeline.Report, mc *sim.Result) Metrics {
	m := Metrics{}
	if r != nil {
		r.Close()
		m["turns"] = float64(r.Turns)
		m["turns_failed"] = float64(r.TurnsFailed)
		m["turns_over_tpot_slo"] = float64(r.TurnsOverSLO)
		m["underruns"] = float64(r.Underruns.Count)
		m["underrun_ms"] = r.Underruns.TotalMs
		m["glitches"] = float64(r.Glitches.Count)
		m["interruptions"] = float64(r.Interruptions.Count)
		m["interruption_ms"] = r.Interruptions.TotalMs
		m["interruptions_per_minute"] = r.InterruptionsPerMinute
		m["speech_goodput"] = r.SpeechGoodput
		m["speech_s"] = r.SpeechMs / 1000
		m["min_preroll_ms"] = r.MinPrerollMs
		m["tool_silences"] = float64(r.ToolSilences.Count)
		m["tool_silence_ms"] = r.ToolSilences.TotalMs
		m["filler_covered_ms"] = r.FillerCover.TotalMs
		m["filler_late_ms"] = r.FillerLate.TotalMs
		m["max_safe_tpot_ms"] = math.NaN()
		if r.MaxSafeTPOTMs != nil {
			m["max_safe_tpot_ms"] = *r.MaxSafeTPOTMs
		}
		for _, c := range causes {
			m["cause_"+string(c)] = float64(r.Causes[c].Count)
		}
		for i, s := range []pipeline.Summary{r.TTFT, r.TTFST, r.TPOT, r.ITL, r.E2EL, r.TTFA} {
			n := summaryMetrics[i]
			m[n+"_mean_ms"], m[n+"_min_ms"], m[n+"_max_ms"] = s.Mean, s.Min, s.Max
			m[n+"_p50_ms"], m[n+"_p90_ms"], m[n+"_p95_ms"] = s.P50, s.P90, s.P95
			m[n+"_p99_ms"], m[n+"_p999_ms"] = s.P99, s.P999
		}
	}
	if mc != nil {
		m["mc_turns"] = float64(mc.Turns)
		m["mc_speech_goodput"] = mc.Goodput
		m["mc_goodput_low"] = mc.GoodputLow
		m["mc_goodput_high"] = mc.GoodputHigh
		m["mc_interruptions"] = float64(mc.Interruptions)
		m["mc_interrupted_turns"] = float64(mc.Interrupted)
		m["mc_tool_silences"] = float64(mc.ToolSilences)
		m["mc_tool_silence_ms"] = mc.ToolSilenceMs
		m["mc_interruptions_per_minute"] = mc.InterruptionsRate
		m["mc_interruptions_per_minute_p50"] = mc.PerMinute.P50
		m["mc_interruptions_per_minute_p90"] = mc.PerMinute.P90
		m["mc_interruptions_per_minute_p99"] = mc.PerMinute.P99
		m["mc_tpot_mean_ms"], m["mc_tpot_p50_ms"], m["mc_tpot_p99_ms"] = mc.TPOT.Mean, mc.TPOT.P50, mc.TPOT.P99
		m["mc_itl_p50_ms"], m["mc_itl_p99_ms"], m["mc_itl_p999_ms"], m["mc_itl_max_ms"] = mc.ITL.P50, mc.ITL.P99, mc.ITL.P999, mc.ITL.Max
		m["mc_tolerance_p1_ms"], m["mc_tolerance_p10_ms"] = mc.Tolerance.P1, mc.Tolerance.P10
		m["mc_exposed_p99"], m["mc_exposed_p999"] = 0, 0
		// the streams a shared TTS server held at once (NaN: no server)
		m["mc_tts_streams_mean"], m["mc_tts_streams_p99"] = math.NaN(), math.NaN()
		if q := mc.Streams; q != nil {
			m["mc_tts_streams_mean"], m["mc_tts_streams_p99"] = q.Mean, q.P99
		}
		for _, e := range mc.Exposure {
			switch e.Quantile {
			case "p99":
				m["mc_exposed_p99"] = e.Exposed
			case "p99.9":
				m["mc_exposed_p999"] = e.Exposed
			}
		}
	}
	return m
}

// MetricNames lists every metric an expectation may name, sorted.
func MetricNames() []string {
	names := make([]string, 0, 100)
	for k := range NewMetrics(pipeline.NewReport(pipeline.DefaultConfig(), pipeline.ReportOptions{}), &sim.Result{}) {
		names = append(names, k)
	}
	slices.Sort(names)
	return names
}

// Check is the outcome of one expectation.
type Check struct {
	Expectation
	// Got is the metric's value (NaN when it was not computed).
	Got float64
	// Pass reports whether it held.
	Pass bool
}

// Checks evaluates the expectations against the metrics.
func Checks(expect []Expectation, m Metrics) []Check {
	out := make([]Check, len(expect))
	for i, e := range expect {
		v, ok := m[e.Metric]
		if !ok {
			v = math.NaN()
		}
		out[i] = Check{Expectation: e, Got: v, Pass: ok && e.Holds(v)}
	}
	return out
}

// Passed reports whether every check passed.
func Passed(checks []Check) bool {
	for _, c := range checks {
		if !c.Pass {
			return false
		}
	}
	return true
}

// ReportExpectations returns the checks as expectations of the report
// (pipeline.Report.Expect), each saying what was expected, where and what
// was got.
func ReportExpectations(checks []Check) []pipeline.Expectation {
	out := make([]pipeline.Expectation, len(checks))
	for i, c := range checks {
		got := "n/a"
		if !math.IsNaN(c.Got) {
			got = strconv.FormatFloat(c.Got, 'g', 4, 64)
		}
		text := fmt.Sprintf("%s, got %s", c.Expectation, got)
		if c.Line > 0 {
			text = fmt.Sprintf("line %d: %s", c.Line, text)
		}
		out[i] = pipeline.Expectation{Text: text, Held: c.Pass}
	}
	return out
}
