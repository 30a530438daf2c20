package trace

import (
	"cmp"
	"fmt"
	"maps"
	"math"
	"math/bits"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// Tool names a benchmark tool whose result files underrun reads, and
// whose arithmetic Parity follows.
type Tool string

// The benchmark tools underrun reads the files of.
const (
	ToolVLLM      Tool = "vllm"       // vllm bench serve --save-result --save-detailed
	ToolSGLang    Tool = "sglang"     // python -m sglang.bench_serving --output-details
	ToolAIPerf    Tool = "aiperf"     // aiperf profile: profile_export.jsonl
	ToolGenAIPerf Tool = "genai-perf" // genai-perf profile: profile_export.json
)

// ToolDecoder is a Decoder of a file a benchmark tool wrote. Analyze uses
// it to print the file's figures the way the tool computes them and to
// compare them with the summary the tool saved.
type ToolDecoder interface {
	Decoder
	// Tool names the tool that wrote the file.
	Tool() Tool
	// Run returns the index of the benchmark run the turn Next returned
	// last belongs to (0 for files of one run).
	Run() int
	// ToolSummaries returns the summaries the tool saved in the file, one
	// per run that has one. It is complete once Next has returned io.EOF.
	ToolSummaries() []ToolSummary
}

// ToolSummary is the summary a tool saved for one run: its statistics by
// the tool's own key names, in milliseconds: "mean_ttft_ms", "p99_itl_ms"
// (vLLM, SGLang), "time_to_first_token.avg" (AIPerf and GenAI-Perf's JSON
// summaries), "ttft_s.p50" (llmperf, converted from seconds).
type ToolSummary struct {
	// Run is the index of the run, as ToolDecoder.Run gives it.
	Run int
	// Label names the run for people ("line 3"), or is empty.
	Label string
	// Values are the saved statistics by the tool's key names.
	Values map[string]float64
	// Completed is the saved count of successful requests (-1: none saved).
	Completed int
	// DurationS is the run's saved length in seconds (0: none saved), and
	// RequestGoodput its saved request goodput per second, if any.
	DurationS      float64
	RequestGoodput *float64
	// Failed is the saved count of failed requests (nil: none saved), and
	// FailedBy the saved count of each kind of failure, by the text a
	// reader gives a failed turn's Error (nil: none saved): AIPerf's
	// error_request_count and error_summary.
	Failed   *int
	FailedBy map[string]int
	// Notes say what the reader knows of how the tool computed the saved
	// values, where that explains a difference ("this version timed a
	// request's end at [DONE]").
	Notes []string
	// Hint says how to get the per-request timings a summary-only file
	// lacks ("save it with vllm bench serve --save-result --save-detailed").
	Hint string
}

// savedStat splits a saved key into the statistic (mean, median, std,
// min, max, pNN) and the metric it is of; ok is false for keys that are
// not statistics.
func savedStat(key string) (stat, metric string, ok bool) {
	if m := summaryKey.FindStringSubmatch(key); m != nil {
		return m[1], m[2], true
	}
	metric, stat, ok = strings.Cut(key, ".")
	if !ok || !statKey.MatchString(stat) {
		return "", "", false
	}
	if stat == "avg" {
		stat = "mean"
	}
	return stat, metric, true
}

var statKey = regexp.MustCompile(`^(avg|mean|median|std|min|max|p[0-9]+(?:\.[0-9]+)?)$`)

// toolMetric is one of the four latency metrics, by the tool's name and
// the other names its saved summaries have used for it.
type toolMetric struct {
	name, ours string
	aliases    []string
	pick       func(*parityRun) *pipeline.Pool
	// weighted, for GuideLLM, picks the weighted values instead
	weighted func(*parityRun) *weightedSample
}

func (t Tool) metrics() []toolMetric {
	ttft := func(r *parityRun) *pipeline.Pool { return &r.ttft }
	tpot := func(r *parityRun) *pipeline.Pool { return &r.tpot }
	itl := func(r *parityRun) *pipeline.Pool { return &r.itl }
	e2e := func(r *parityRun) *pipeline.Pool { return &r.e2el }
	switch t {
	case ToolVLLM:
		// benchmark_serving.py of 2024 and its forks saved E2E as
		// *_e2e_ms or *_latency_ms
		return []toolMetric{{"ttft", "TTFT", nil, ttft, nil}, {"tpot", "TPOT", nil, tpot, nil}, {"itl", "ITL", nil, itl, nil},
			{"e2el", "E2E latency", []string{"e2e", "latency"}, e2e, nil}}
	case ToolSGLang:
		return []toolMetric{{"ttft", "TTFT", nil, ttft, nil}, {"tpot", "TPOT", nil, tpot, nil}, {"itl", "ITL per token", nil, itl, nil}, {"e2e_latency", "E2E latency", nil, e2e, nil}}
	case ToolAIPerf:
		// AIPerf 0.1 tagged the TTFT ttft
		return []toolMetric{{"time_to_first_token", "TTFT", []string{"ttft"}, ttft, nil}, {"inter_token_latency", "TPOT", nil, tpot, nil}, {"inter_chunk_latency", "ITL", nil, itl, nil}, {"request_latency", "E2E latency", nil, e2e, nil}}
	case ToolGenAIPerf:
		return []toolMetric{{"time_to_first_token", "TTFT", nil, ttft, nil}, {"inter_token_latency", "TPOT", nil, tpot, nil}, {"chunk gaps", "ITL", nil, itl, nil}, {"request_latency", "E2E latency", nil, e2e, nil}}
	case ToolGuideLLM:
		w := func(k int) func(*parityRun) *weightedSample {
			return func(r *parityRun) *weightedSample { return &r.weighted[k] }
		}
		return []toolMetric{{"time_to_first_token_ms", "TTFT", nil, ttft, w(0)}, {"inter_token_latency_ms", "TPOT", nil, tpot, w(1)},
			{"time_per_output_token_ms", "last token / tokens", nil, itl, w(2)}, {"request_latency", "E2E latency", nil, e2e, w(3)}}
	case ToolLLMPerf:
		// llmperf's inter_token_latency_s is the time to the last token
		// over the tokens, the first one's wait included
		return []toolMetric{{"ttft_s", "TTFT", nil, ttft, nil}, {"inter_token_latency_s", "last token / tokens", nil, itl, nil}, {"end_to_end_latency_s", "E2E to the stream's end", nil, e2e, nil}}
	}
	return nil
}

// sampleStd reports whether the tool's std divides by n - 1 (pandas'
// Series.std), not by n (numpy's).
func (t Tool) sampleStd() bool { return t == ToolLLMPerf }

// Title is the tool's name as its makers write it.
func (t Tool) Title() string {
	switch t {
	case ToolVLLM:
		return "vLLM"
	case ToolSGLang:
		return "SGLang"
	case ToolAIPerf:
		return "AIPerf"
	case ToolGenAIPerf:
		return "GenAI-Perf"
	case ToolLLMPerf:
		return "llmperf"
	case ToolGuideLLM:
		return "GuideLLM"
	}
	return string(t)
}

// inSeconds reports whether the tool measures in seconds (floats from
// time.perf_counter) rather than whole nanoseconds.
func (t Tool) inSeconds() bool { return t == ToolVLLM || t == ToolSGLang || t == ToolLLMPerf }

// toMs converts a statistic in the tool's own unit to milliseconds, as
// the tool does: vLLM and SGLang multiply seconds by 1000, AIPerf and
// GenAI-Perf divide nanoseconds by 10^6.
func (t Tool) toMs(v float64) float64 {
	switch {
	case t == ToolGuideLLM:
		return v // kept in ms, as GuideLLM's *_ms figures
	case t.inSeconds():
		return v * 1000
	}
	return v / 1e6
}

// exactTimes is one request's timing as the file records it, in seconds
// at the file's own precision (finer than the nanoseconds of a Turn).
type exactTimes struct {
	ttft       float64
	itls       []float64
	latency    float64
	hasLatency bool
	perToken   float64 // llmperf's inter_token_latency_s
}

// exactTimer is a decoder that kept the exact times of the turn Next
// returned last; they are valid until the next call of Next.
type exactTimer interface {
	exactTimes() *exactTimes
}

// Parity computes a benchmark file's latency statistics the way the tool
// that wrote it does, run by run:
//
//   - vLLM: successful requests only; TTFT and E2E (the saved latency,
//     else TTFT plus the ITLs) per request; TPOT is (E2E - TTFT) /
//     (output_len - 1), leaving out requests of one token; ITL pools every
//     gap between chunks.
//   - SGLang: as vLLM, but the file keeps the gap before a chunk of k
//     tokens as k inter-token latencies of gap/k each, and pools those.
//   - AIPerf: empty chunks dropped; inter_token_latency (our TPOT) is
//     (request_latency - TTFT) / (output_sequence_length - 1), only for
//     requests with two chunks or more; inter_chunk_latency pools the gaps.
//   - GenAI-Perf: empty chunks dropped; inter_token_latency (our TPOT) as
//     AIPerf (two responses or more, and two tokens or more), rounded to a
//     whole nanosecond per request.
//
// vLLM and SGLang compute on the floats of seconds the file keeps (read
// at their full precision, see AddFrom), AIPerf and GenAI-Perf on whole
// nanoseconds; statistics follow numpy (mean, population std, linear
// percentiles) in that unit and are then converted to milliseconds, as
// the tools do. An empty set counts as 0, as the tools' `np.mean(x or 0)`
// does.
type Parity struct {
	tool  Tool
	runs  map[int]*parityRun
	order []int
	gaps  []float64 // scratch: a turn's gaps, when it has no exact times
	slos  []pipeline.SLO
	// shared are, per run, the ITLs pooled here as a report pools them
	// (vLLM's floats of seconds to whole nanoseconds), last those of the
	// turn added last (nil: not pooled here)
	shared map[int]*pipeline.SharedITLs
	last   *pipeline.SharedITLs
}

type parityRun struct {
	requests              int
	failed                int            // turns not ok
	failedBy              map[string]int // failed turns by their Error
	ttft, tpot, itl, e2el pipeline.Pool  // in the tool's unit
	weighted              [4]weightedSample
	goodput               *pipeline.Goodput
}

// countFailed counts a failed turn by its error text, the kinds bounded
// as a summary's (the rest are "other").
func (r *parityRun) countFailed(text string) {
	r.failed++
	if r.failedBy == nil {
		r.failedBy = map[string]int{}
	}
	if _, ok := r.failedBy[text]; !ok && len(r.failedBy) >= maxFailureKinds {
		text = "other"
	}
	r.failedBy[text]++
}

// CountGoodput makes Parity count request goodput for slos as vLLM does,
// on the times as the file has them, and compare it with the request
// goodput the file saved. Call it before the first Add.
func (p *Parity) CountGoodput(slos []pipeline.SLO) { p.slos = slos }

// NewParity returns an empty Parity following tool's conventions.
func NewParity(tool Tool) *Parity {
	return &Parity{tool: tool, runs: map[int]*parityRun{}}
}

// Add accounts one turn of run, timed by its chunks.
func (p *Parity) Add(run int, t *pipeline.Turn) { p.add(run, t, nil) }

// AddFrom accounts the turn d returned last, in the run d says, with the
// times at the precision of d's file where d keeps them (vLLM and SGLang
// keep floats of seconds that whole nanoseconds would round).
func (p *Parity) AddFrom(d ToolDecoder, t *pipeline.Turn) {
	var ex *exactTimes
	if et, ok := d.(exactTimer); ok {
		ex = et.exactTimes()
	}
	p.add(d.Run(), t, ex)
}

// run returns the accumulator of a run, making it the first time.
func (p *Parity) run(run int) *parityRun {
	r := p.runs[run]
	if r == nil {
		r = &parityRun{}
		if len(p.slos) > 0 {
			r.goodput = pipeline.NewGoodput(p.slos)
		}
		p.runs[run] = r
		p.order = append(p.order, run)
	}
	return r
}

func (p *Parity) add(run int, t *pipeline.Turn, ex *exactTimes) {
	r := p.run(run)
	p.last = nil
	if t.Status != pipeline.StatusOK && t.Status != "" {
		r.countFailed(t.Error)
		if r.goodput != nil {
			r.goodput.Add(false, 0, 0, 0)
		}
		return
	}
	if p.tool == ToolGuideLLM && ex != nil {
		// GuideLLM's own per-request figures, weighted as its metrics
		// weigh them (a figure it lacks counts as 0)
		n := float64(t.OutputTokens)
		r.requests++
		r.weighted[0].add(ex.ttft*1000, 1)
		r.weighted[1].add(ex.itls[0]*1000, max(n, 1)-1)
		r.weighted[2].add(ex.perToken*1000, n)
		r.weighted[3].add(ex.latency*1000, 1)
		if r.goodput != nil {
			r.goodput.AddTurn(t)
		}
		return
	}
	if p.tool == ToolLLMPerf && ex != nil {
		// llmperf's own per-request figures, every successful request
		r.requests++
		r.ttft.Add(ex.ttft)
		r.itl.Add(ex.perToken)
		r.e2el.Add(ex.latency)
		if r.goodput != nil {
			r.goodput.AddTurn(t)
		}
		return
	}
	chunks := t.Chunks
	if p.tool == ToolAIPerf || p.tool == ToolGenAIPerf {
		chunks = nonEmpty(chunks)
	}
	if len(chunks) == 0 {
		if r.goodput != nil {
			r.goodput.Add(false, 0, 0, 0)
		}
		return
	}
	n := t.OutputTokens
	if n <= 0 {
		for _, c := range chunks {
			n += c.TokenCount()
		}
	}
	r.requests++
	first, last := chunks[0].At, chunks[len(chunks)-1].At
	if p.tool.inSeconds() {
		ttft, itls := first.Seconds(), p.gapsOf(chunks)
		lat := last.Seconds()
		if ex != nil {
			ttft, itls = ex.ttft, ex.itls
			lat = ttft
			for _, g := range itls {
				lat += g
			}
			if ex.hasLatency {
				lat = ex.latency
			}
		}
		r.ttft.Add(ttft)
		r.e2el.Add(lat)
		tpot := 0.0 // as vLLM's goodput takes a request of one token
		if n > 1 {
			tpot = (lat - ttft) / float64(n-1)
			r.tpot.Add(tpot)
		}
		for _, g := range itls {
			r.itl.Add(g)
		}
		if ex != nil && p.tool == ToolVLLM {
			p.share(run, r, t.Chunks, itls, secondsToNs)
		}
		if r.goodput != nil {
			r.goodput.Add(true, ttft, tpot, lat)
		}
		return
	}
	if r.goodput != nil {
		r.goodput.AddTurn(t)
	}
	// AIPerf and GenAI-Perf: whole nanoseconds
	r.ttft.Add(float64(first))
	r.e2el.Add(float64(last))
	if n > 1 && len(chunks) > 1 {
		tpot := float64(last-first) / float64(n-1)
		if p.tool == ToolGenAIPerf {
			tpot = math.RoundToEven(tpot)
		}
		r.tpot.Add(tpot)
	}
	p.gaps = p.gaps[:0]
	for i := 1; i < len(chunks); i++ {
		gap := float64(chunks[i].At - chunks[i-1].At)
		r.itl.Add(gap)
		p.gaps = append(p.gaps, gap)
	}
	p.share(run, r, t.Chunks, p.gaps, floatNs)
}

// SharedITLs returns where the ITLs between the chunks of the turn added
// last are pooled, for a report to take them from (Report.ITLsElsewhere)
// rather than pool them again; nil when they are not pooled here.
func (p *Parity) SharedITLs() *pipeline.SharedITLs { return p.last }

// share records that the ITLs of a request, just pooled in r.itl in the
// tool's unit, are the ITLs between its chunks as a report pools them,
// each dur(itl) (whole nanoseconds: for vLLM rounded from the float of
// seconds, for AIPerf and GenAI-Perf the float of nanoseconds itself).
// Where the two differ (a vLLM decimal at a half nanosecond, or with more
// digits than its float keeps; AIPerf's empty chunks left out of its
// ITLs) the report's values are noted instead of those.
func (p *Parity) share(run int, r *parityRun, chunks []pipeline.Chunk, itls []float64, dur func(float64) time.Duration) {
	sh := p.shared[run]
	if sh == nil {
		if p.shared == nil {
			p.shared = map[int]*pipeline.SharedITLs{}
		}
		sh = &pipeline.SharedITLs{Pool: &r.itl, Duration: dur}
		p.shared[run] = sh
	}
	if len(itls) == len(chunks)-1 {
		for i, x := range itls {
			if d, gap := dur(x), chunks[i+1].At-chunks[i].At; d != gap {
				sh.Missing, sh.Extra = append(sh.Missing, d), append(sh.Extra, gap)
			}
		}
	} else {
		for _, x := range itls {
			sh.Missing = append(sh.Missing, dur(x))
		}
		for i := 1; i < len(chunks); i++ {
			sh.Extra = append(sh.Extra, chunks[i].At-chunks[i-1].At)
		}
	}
	p.last = sh
}

// secondsToNs is x seconds in whole nanoseconds, rounded as the readers
// round a decimal (halves away from zero), from x's exact binary value;
// it never decreases where x grows.
func secondsToNs(x float64) time.Duration {
	if x != x {
		return 0
	}
	neg := math.Signbit(x)
	b := math.Float64bits(math.Abs(x))
	e, m := int(b>>52), b&(1<<52-1)
	if e == 0x7ff {
		return clampNs(math.MaxUint64, neg) // infinite
	}
	if e == 0 {
		e = 1
	} else {
		m |= 1 << 52
	}
	// x = m 2^(e-1075); x 1e9 = hi:lo 2^(e-1075)
	hi, lo := bits.Mul64(m, 1e9)
	var v uint64
	switch s := 1075 - e; {
	case s <= 0:
		if hi != 0 || s < -63 || lo>>(64+s) != 0 {
			return clampNs(math.MaxUint64, neg)
		}
		v = lo << -s
	case s >= 128:
		v = 0 // x 1e9 < 2^83 <= half of 2^s
	case s >= 64:
		v = hi >> (s - 64)
		if s-1 >= 64 {
			v += hi >> (s - 1 - 64) & 1
		} else {
			v += lo >> 63
		}
	default:
		if hi>>s != 0 {
			return clampNs(math.MaxUint64, neg)
		}
		v = hi<<(64-s) | lo>>s
		v += lo >> (s - 1) & 1
	}
	return clampNs(v, neg)
}

// floatNs is a float of nanoseconds as a Duration (exact below 2^53 ns,
// 104 days), clamped to a Duration's range; it never decreases where v
// grows.
func floatNs(v float64) time.Duration {
	switch {
	case v != v:
		return 0
	case v >= math.MaxInt64:
		return math.MaxInt64
	case v <= math.MinInt64:
		return math.MinInt64
	}
	return time.Duration(v)
}

func clampNs(v uint64, neg bool) time.Duration {
	v = min(v, math.MaxInt64)
	if neg {
		return -time.Duration(v)
	}
	return time.Duration(v)
}

// gapsOf returns the gaps between chunks in seconds, as vLLM keeps them;
// for SGLang the gap before a chunk of k tokens is k gaps of gap/k.
func (p *Parity) gapsOf(chunks []pipeline.Chunk) []float64 {
	p.gaps = p.gaps[:0]
	for i := 1; i < len(chunks); i++ {
		gap := (chunks[i].At - chunks[i-1].At).Seconds()
		k := 1
		if p.tool == ToolSGLang {
			k = chunks[i].TokenCount()
		}
		for range k {
			p.gaps = append(p.gaps, gap/float64(k))
		}
	}
	return p.gaps
}

func nonEmpty(chunks []pipeline.Chunk) []pipeline.Chunk {
	for i, c := range chunks {
		if !c.Textless && c.Text == "" {
			out := slices.Clone(chunks[:i])
			for _, c := range chunks[i+1:] {
				if c.Textless || c.Text != "" {
					out = append(out, c)
				}
			}
			return out
		}
	}
	return chunks
}

var summaryKey = regexp.MustCompile(`^(mean|median|std|min|max|p[0-9]+(?:\.[0-9]+)?)_([a-z0-9_]+)_ms$`)

// statOf returns a statistic of a sample by the tools' names (mean,
// median, std, min, max, or pNN) in the tool's own unit. An empty sample
// gives 0.
func statOf(s *pipeline.Sample, stat string) (float64, bool) {
	if s.Len() == 0 {
		return 0, true
	}
	v := s.Values()
	switch stat {
	case "mean":
		return s.Summary().Mean, true
	case "std":
		return s.Summary().Std, true
	case "median":
		return pipeline.Percentile(v, 50), true
	case "min":
		return v[0], true
	case "max":
		return v[len(v)-1], true
	}
	p, err := strconv.ParseFloat(stat[1:], 64)
	if err != nil || p < 0 || p > 100 {
		return 0, false
	}
	return pipeline.Percentile(v, p), true
}

// sampleStd turns a summary's population std into the sample std (NaN
// for a single value, as pandas gives).
func sampleStd(s pipeline.Summary) float64 {
	if s.Count < 2 {
		return math.NaN()
	}
	n := float64(s.Count)
	return math.Sqrt(s.Std * s.Std * n / (n - 1))
}

// summaryMs is the summary of a sample in the tool's unit, converted to
// milliseconds statistic by statistic as the tool converts them.
func (t Tool) summaryMs(s *pipeline.Sample) pipeline.Summary {
	sum := s.Summary()
	if t.sampleStd() {
		sum.Std = sampleStd(sum)
	}
	for _, f := range []*float64{&sum.Mean, &sum.Median, &sum.Std, &sum.Min, &sum.Max, &sum.P50, &sum.P90, &sum.P95, &sum.P99, &sum.P999} {
		*f = t.toMs(*f)
	}
	return sum
}

// Figures returns the statistics of every run, each compared with the
// summary saved for it, if any.
func (p *Parity) Figures(saved []ToolSummary) []pipeline.ToolFigures {
	bySaved := map[int]ToolSummary{}
	for _, s := range saved {
		bySaved[s.Run] = s
		p.run(s.Run)
	}
	metrics := p.tool.metrics()
	var out []pipeline.ToolFigures
	for _, run := range p.order {
		r := p.runs[run]
		f := pipeline.ToolFigures{Tool: string(p.tool), Requests: r.requests, Mismatches: []pipeline.ToolMismatch{}}
		if len(p.order) > 1 {
			f.Run = "run " + strconv.Itoa(run+1)
		}
		s, hasSaved := bySaved[run]
		if hasSaved && s.Label != "" {
			f.Run = s.Label
		}
		if r.requests == 0 && hasSaved && (len(s.Values) > 0 || s.Completed >= 0) {
			// a summary without per-request timings: its own figures
			p.savedOnly(&f, s, metrics)
			out = append(out, f)
			continue
		}
		for _, m := range metrics {
			sum := p.tool.summaryMs(m.pick(r).Sample())
			if m.weighted != nil {
				sum = m.weighted(r).summary()
			}
			f.Metrics = append(f.Metrics, pipeline.ToolMetric{Name: m.name, Ours: m.ours, Summary: &sum})
		}
		switch p.tool {
		case ToolAIPerf:
			if !hasSaved {
				f.Notes = append(f.Notes, "AIPerf saves its summary beside this file, in profile_export_aiperf.json (give it as a second file to compare); its inter_token_latency is underrun's TPOT")
			}
		case ToolGenAIPerf:
			f.Notes = append(f.Notes, "GenAI-Perf saves its summary beside this file, in profile_export_genai_perf.json; it counts tokens with the model's tokenizer, underrun with the usage chunk or one per chunk")
		case ToolLLMPerf:
			f.Notes = append(f.Notes, "llmperf keeps no per-chunk times, so no ITL and no ITL tail can be known: the speech analysis spaces each request's tokens evenly from its first token to its last (inter_token_latency_s x number_output_tokens); its std divides by n - 1 (pandas)")
		case ToolGuideLLM:
			f.Notes = append(f.Notes, "GuideLLM times only the first and the last token iteration: the iterations between are spaced evenly, as GuideLLM spaces them itself, so the ITL tail is not measured; its metrics weigh inter_token_latency by tokens - 1 and time_per_output_token by tokens, and take percentiles by nearest rank")
		}
		if r.goodput != nil {
			r.goodput.Close(s.DurationS)
			f.Goodput = r.goodput
		}
		if hasSaved {
			p.compare(&f, r, s, metrics)
		}
		out = append(out, f)
	}
	return out
}

// savedOnly fills the figures of a run from its saved summary alone.
func (p *Parity) savedOnly(f *pipeline.ToolFigures, s ToolSummary, metrics []toolMetric) {
	f.SavedOnly = true
	f.Requests = s.Completed
	for _, m := range metrics {
		tm := pipeline.ToolMetric{Name: m.name, Ours: m.ours, Saved: map[string]float64{}}
		for key, v := range s.Values {
			stat, metric, ok := savedStat(key)
			if ok && (metric == m.name || slices.Contains(m.aliases, metric)) {
				tm.Saved[stat] = v
			}
		}
		if len(tm.Saved) > 0 {
			f.Metrics = append(f.Metrics, tm)
		}
	}
	if s.FailedBy != nil || s.Failed != nil {
		f.Notes = append(f.Notes, "failed requests: "+failedKinds(s))
	}
	f.Notes = append(f.Notes, s.Notes...)
	hint := s.Hint
	if hint == "" {
		hint = "save the run with its per-request details"
	}
	f.Notes = append(f.Notes, "the file holds "+p.tool.Title()+"'s summary only: the speech analysis needs every request's chunk times; "+hint)
}

// lookupMetric finds the metric a saved key's name stands for.
func lookupMetric(metrics []toolMetric, name string) *toolMetric {
	for i := range metrics {
		if metrics[i].name == name || slices.Contains(metrics[i].aliases, name) {
			return &metrics[i]
		}
	}
	return nil
}

func (p *Parity) compare(f *pipeline.ToolFigures, r *parityRun, s ToolSummary, metrics []toolMetric) {
	keys := make([]string, 0, len(s.Values))
	for k := range s.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	skippedE2E := false
	for _, key := range keys {
		stat, name, ok := savedStat(key)
		if !ok {
			continue
		}
		metric := lookupMetric(metrics, name)
		if metric == nil {
			continue
		}
		if p.tool == ToolSGLang && (name == "e2e_latency" || name == "tpot") {
			skippedE2E = true
			continue
		}
		got, ok := statOf(metric.pick(r).Sample(), stat)
		if metric.weighted != nil {
			got, ok = metric.weighted(r).stat(stat)
		}
		if !ok {
			continue
		}
		if stat == "std" && p.tool.sampleStd() {
			got = sampleStd(metric.pick(r).Summary())
		}
		got = p.tool.toMs(got)
		f.Checked++
		if want := s.Values[key]; !agree(want, got) {
			f.Mismatches = append(f.Mismatches, pipeline.ToolMismatch{Key: key, Saved: want, Computed: got})
		}
	}
	if s.Completed >= 0 {
		f.Checked++
		if s.Completed != r.requests {
			f.Mismatches = append(f.Mismatches, pipeline.ToolMismatch{Key: "completed", Saved: float64(s.Completed), Computed: float64(r.requests)})
		}
	}
	p.compareFailed(f, r, s)
	if g := r.goodput; g != nil && s.RequestGoodput != nil {
		f.Checked++
		if want := *s.RequestGoodput; g.PerSecond == nil || !(math.Abs(want-*g.PerSecond) <= 1e-9*math.Abs(want)) {
			got := math.NaN()
			if g.PerSecond != nil {
				got = *g.PerSecond
			}
			f.Mismatches = append(f.Mismatches, pipeline.ToolMismatch{Key: "request_goodput", Saved: want, Computed: got})
			f.Notes = append(f.Notes, "request_goodput differs: the file does not keep the SLOs it was counted for; compare with the --goodput vLLM ran with")
		}
	}
	if skippedE2E {
		f.Notes = append(f.Notes, "tpot and e2e_latency not compared: SGLang times a request's end when the stream closes, after the last chunk, and the file keeps no per-request end; underrun's E2E (and so TPOT) ends at the last chunk")
	}
	f.Notes = append(f.Notes, s.Notes...)
}

// compareFailed compares the saved counts of failed requests, in all and
// by kind, with the failed turns of the run.
func (p *Parity) compareFailed(f *pipeline.ToolFigures, r *parityRun, s ToolSummary) {
	if s.Failed != nil {
		f.Checked++
		if *s.Failed != r.failed {
			f.Mismatches = append(f.Mismatches, pipeline.ToolMismatch{Key: "error_request_count", Saved: float64(*s.Failed), Computed: float64(r.failed)})
		}
	}
	if s.FailedBy == nil {
		return
	}
	kinds := make([]string, 0, len(s.FailedBy)+len(r.failedBy))
	for k := range s.FailedBy {
		kinds = append(kinds, k)
	}
	for k := range r.failedBy {
		if _, ok := s.FailedBy[k]; !ok {
			kinds = append(kinds, k)
		}
	}
	slices.Sort(kinds)
	for _, k := range kinds {
		f.Checked++
		if saved, got := s.FailedBy[k], r.failedBy[k]; saved != got {
			f.Mismatches = append(f.Mismatches, pipeline.ToolMismatch{Key: "error_summary[" + k + "]", Saved: float64(saved), Computed: float64(got)})
		}
	}
	if len(kinds) > 0 {
		f.Notes = append(f.Notes, fmt.Sprintf("failed requests: %d in the file, %s", r.failed, failedKinds(s)))
	}
}

// failedKinds says what a summary saved of its failed requests.
func failedKinds(s ToolSummary) string {
	var b strings.Builder
	b.WriteString("the summary's error_summary")
	kinds := slices.Sorted(maps.Keys(s.FailedBy))
	for i, k := range kinds {
		sep := ": "
		if i > 0 {
			sep = "; "
		}
		fmt.Fprintf(&b, "%s%d x %s", sep, s.FailedBy[k], k)
	}
	if s.Failed != nil {
		fmt.Fprintf(&b, " (error_request_count %d)", *s.Failed)
	}
	return b.String()
}

// agree reports whether a saved value and a recomputed one agree within
// pipeline.ToolToleranceMs (relative for values above 10 s); two NaNs agree.
func agree(want, got float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got) || math.IsNaN(want) && got == 0
	}
	return math.Abs(want-got) <= max(pipeline.ToolToleranceMs, 1e-6*math.Abs(want))
}

// weightedSample is a set of values with weights, summed up as GuideLLM's
// DistributionSummary does: equal values merged, zero weights dropped, a
// probability for each value in proportion to its weight; the mean and
// the (population) variance weighted; a percentile the first value whose
// cumulative probability reaches it (numpy's searchsorted, side left), the
// median the 50th; count the sum of the weights.
type weightedSample struct {
	values, weights []float64
}

func (w *weightedSample) add(v, weight float64) {
	w.values = append(w.values, v)
	w.weights = append(w.weights, weight)
}

// pdf returns the distinct values, ascending, and their probabilities.
func (w *weightedSample) pdf() (values, probs []float64, total float64) {
	idx := make([]int, len(w.values))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int { return cmp.Compare(w.values[a], w.values[b]) })
	for _, i := range idx {
		v, wt := w.values[i], w.weights[i]
		if n := len(values); n > 0 && values[n-1] == v {
			probs[n-1] += wt
			continue
		}
		values, probs = append(values, v), append(probs, wt)
	}
	k := 0
	for i := range values {
		if probs[i] > 0 {
			values[k], probs[k] = values[i], probs[i]
			total += probs[i]
			k++
		}
	}
	values, probs = values[:k], probs[:k]
	for i := range probs {
		probs[i] /= total
	}
	return values, probs, total
}

// percentile is GuideLLM's: the first value whose cumulative probability
// reaches q (0 to 1).
func percentileOf(values, probs []float64, q float64) float64 {
	cum := 0.0
	for i, p := range probs {
		if cum += p; cum >= q {
			return values[i]
		}
	}
	return values[len(values)-1]
}

func (w *weightedSample) summary() pipeline.Summary {
	values, probs, total := w.pdf()
	if len(values) == 0 {
		return pipeline.Summary{}
	}
	mean, variance := 0.0, 0.0
	for i, v := range values {
		mean += v * probs[i]
	}
	for i, v := range values {
		variance += (v - mean) * (v - mean) * probs[i]
	}
	return pipeline.Summary{
		Count: int(math.Round(total)), Mean: mean, Std: math.Sqrt(variance),
		Median: percentileOf(values, probs, 0.5), Min: values[0], Max: values[len(values)-1],
		P50: percentileOf(values, probs, 0.5), P90: percentileOf(values, probs, 0.9), P95: percentileOf(values, probs, 0.95),
		P99: percentileOf(values, probs, 0.99), P999: percentileOf(values, probs, 0.999),
	}
}

// stat returns a statistic by the tools' names (mean, median, std, min,
// max, pNN).
func (w *weightedSample) stat(stat string) (float64, bool) {
	sum := w.summary()
	switch stat {
	case "mean":
		return sum.Mean, true
	case "median":
		return sum.Median, true
	case "std":
		return sum.Std, true
	case "min":
		return sum.Min, true
	case "max":
		return sum.Max, true
	}
	p, err := strconv.ParseFloat(stat[1:], 64)
	if err != nil || p < 0 || p > 100 {
		return 0, false
	}
	values, probs, _ := w.pdf()
	if len(values) == 0 {
		return 0, true
	}
	return percentileOf(values, probs, p/100), true
}
