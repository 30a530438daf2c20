package trace

import (
	"math"
	"regexp"
	"slices"
	"strconv"

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
// the tool's own key names ("mean_ttft_ms", "p99_itl_ms", ...), in
// milliseconds.
type ToolSummary struct {
	// Run is the index of the run, as ToolDecoder.Run gives it.
	Run int
	// Label names the run for people ("line 3"), or is empty.
	Label string
	// Values are the saved statistics by the tool's key names.
	Values map[string]float64
	// Completed is the saved count of successful requests (-1: none saved).
	Completed int
}

// toolMetric is one of the four latency metrics, by the tool's name.
type toolMetric struct {
	name, ours string
	pick       func(*parityRun) *pipeline.Sample
}

func (t Tool) metrics() []toolMetric {
	ttft := func(r *parityRun) *pipeline.Sample { return &r.ttft }
	tpot := func(r *parityRun) *pipeline.Sample { return &r.tpot }
	itl := func(r *parityRun) *pipeline.Sample { return &r.itl }
	e2e := func(r *parityRun) *pipeline.Sample { return &r.e2el }
	switch t {
	case ToolVLLM:
		return []toolMetric{{"ttft", "TTFT", ttft}, {"tpot", "TPOT", tpot}, {"itl", "ITL", itl}, {"e2el", "E2E latency", e2e}}
	case ToolSGLang:
		return []toolMetric{{"ttft", "TTFT", ttft}, {"tpot", "TPOT", tpot}, {"itl", "ITL per token", itl}, {"e2e_latency", "E2E latency", e2e}}
	case ToolAIPerf:
		return []toolMetric{{"time_to_first_token", "TTFT", ttft}, {"inter_token_latency", "TPOT", tpot}, {"inter_chunk_latency", "ITL", itl}, {"request_latency", "E2E latency", e2e}}
	case ToolGenAIPerf:
		return []toolMetric{{"time_to_first_token", "TTFT", ttft}, {"inter_token_latency", "TPOT", tpot}, {"chunk gaps", "ITL", itl}, {"request_latency", "E2E latency", e2e}}
	}
	return nil
}

// Parity computes a benchmark file's latency statistics the way the tool
// that wrote it does, run by run:
//
//   - vLLM: successful requests only; TTFT and E2E per request; TPOT is
//     (E2E - TTFT) / (output_len - 1), leaving out requests of one token;
//     ITL pools every gap between chunks.
//   - SGLang: as vLLM, but the gap before a chunk of k tokens counts as k
//     inter-token latencies of gap/k each.
//   - AIPerf: empty chunks dropped; inter_token_latency (our TPOT) is
//     (request_latency - TTFT) / (output_sequence_length - 1), only for
//     requests with two chunks or more; inter_chunk_latency pools the gaps.
//   - GenAI-Perf: empty chunks dropped; inter_token_latency (our TPOT) as
//     AIPerf, rounded to a whole nanosecond per request.
//
// Statistics follow numpy: mean, population std, linear percentiles; an
// empty set counts as 0, as the tools' `np.mean(x or 0)` does.
type Parity struct {
	tool  Tool
	runs  map[int]*parityRun
	order []int
}

type parityRun struct {
	requests              int
	ttft, tpot, itl, e2el pipeline.Sample
}

// NewParity returns an empty Parity following tool's conventions.
func NewParity(tool Tool) *Parity {
	return &Parity{tool: tool, runs: map[int]*parityRun{}}
}

// Add accounts one turn of run.
func (p *Parity) Add(run int, t *pipeline.Turn) {
	r := p.runs[run]
	if r == nil {
		r = &parityRun{}
		p.runs[run] = r
		p.order = append(p.order, run)
	}
	r.add(p.tool, t)
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

func (r *parityRun) add(tool Tool, t *pipeline.Turn) {
	if t.Status != pipeline.StatusOK && t.Status != "" {
		return
	}
	chunks := t.Chunks
	if tool == ToolAIPerf || tool == ToolGenAIPerf {
		chunks = nonEmpty(chunks)
	}
	if len(chunks) == 0 {
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
	r.ttft.AddDuration(first)
	r.e2el.AddDuration(last)
	span := float64(last - first)
	switch tool {
	case ToolVLLM, ToolSGLang:
		if n > 1 {
			r.tpot.Add(span / float64(n-1) / 1e6)
		}
	case ToolAIPerf:
		if n > 1 && len(chunks) > 1 {
			r.tpot.Add(span / float64(n-1) / 1e6)
		}
	case ToolGenAIPerf:
		if n > 1 {
			r.tpot.Add(math.RoundToEven(span/float64(n-1)) / 1e6)
		}
	}
	for i := 1; i < len(chunks); i++ {
		gap := chunks[i].At - chunks[i-1].At
		if tool == ToolSGLang {
			k := chunks[i].TokenCount()
			each := float64(gap) / float64(k) / 1e6
			for range k {
				r.itl.Add(each)
			}
			continue
		}
		r.itl.AddDuration(gap)
	}
}

var summaryKey = regexp.MustCompile(`^(mean|median|std|min|max|p[0-9]+(?:\.[0-9]+)?)_([a-z0-9_]+)_ms$`)

// statOf returns a statistic of a sample by the tools' names: mean,
// median, std, min, max, or pNN. An empty sample gives 0.
func statOf(s *pipeline.Sample, stat string) (float64, bool) {
	if s.Len() == 0 {
		return 0, true
	}
	v := s.Values()
	switch stat {
	case "mean", "std":
		sum := s.Summary()
		if stat == "mean" {
			return sum.Mean, true
		}
		return sum.Std, true
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

// Figures returns the statistics of every run, each compared with the
// summary saved for it, if any.
func (p *Parity) Figures(saved []ToolSummary) []pipeline.ToolFigures {
	bySaved := map[int]ToolSummary{}
	for _, s := range saved {
		bySaved[s.Run] = s
		if p.runs[s.Run] == nil {
			p.runs[s.Run] = &parityRun{}
			p.order = append(p.order, s.Run)
		}
	}
	metrics := p.tool.metrics()
	var out []pipeline.ToolFigures
	for _, run := range p.order {
		r := p.runs[run]
		f := pipeline.ToolFigures{Tool: string(p.tool), Requests: r.requests, Mismatches: []pipeline.ToolMismatch{}}
		if len(p.order) > 1 {
			f.Run = "run " + strconv.Itoa(run+1)
		}
		for _, m := range metrics {
			f.Metrics = append(f.Metrics, pipeline.ToolMetric{Name: m.name, Ours: m.ours, Summary: m.pick(r).Summary()})
		}
		switch p.tool {
		case ToolAIPerf:
			f.Notes = append(f.Notes, "AIPerf saves its summary beside this file, in profile_export_aiperf.json; its inter_token_latency is underrun's TPOT")
		case ToolGenAIPerf:
			f.Notes = append(f.Notes, "GenAI-Perf saves its summary beside this file, in profile_export_genai_perf.json; it counts tokens with the model's tokenizer, underrun with the usage chunk or one per chunk")
		}
		s, ok := bySaved[run]
		if ok {
			if s.Label != "" {
				f.Run = s.Label
			}
			p.compare(&f, r, s, metrics)
		}
		out = append(out, f)
	}
	return out
}

func (p *Parity) compare(f *pipeline.ToolFigures, r *parityRun, s ToolSummary, metrics []toolMetric) {
	keys := make([]string, 0, len(s.Values))
	for k := range s.Values {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	skippedE2E := false
	for _, key := range keys {
		m := summaryKey.FindStringSubmatch(key)
		if m == nil {
			continue
		}
		var metric *toolMetric
		for i := range metrics {
			if metrics[i].name == m[2] {
				metric = &metrics[i]
			}
		}
		if metric == nil {
			continue
		}
		if p.tool == ToolSGLang && (m[2] == "e2e_latency" || m[2] == "tpot") {
			skippedE2E = true
			continue
		}
		got, ok := statOf(metric.pick(r), m[1])
		if !ok {
			continue
		}
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
	if skippedE2E {
		f.Notes = append(f.Notes, "tpot and e2e_latency not compared: SGLang times a request's end when the stream closes, after the last chunk, and the file keeps no per-request end; underrun's E2E (and so TPOT) ends at the last chunk")
	}
}

// agree reports whether a saved value and a recomputed one agree within
// pipeline.ToolToleranceMs (relative for values above 10 s); two NaNs agree.
func agree(want, got float64) bool {
	if math.IsNaN(want) || math.IsNaN(got) {
		return math.IsNaN(want) && math.IsNaN(got) || math.IsNaN(want) && got == 0
	}
	return math.Abs(want-got) <= max(pipeline.ToolToleranceMs, 1e-6*math.Abs(want))
}
