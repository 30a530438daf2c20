package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"io"
	"math"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
)

// TestSummaryReader reads AIPerf's and GenAI-Perf's summaries: no turns,
// the saved times in milliseconds by their keys, the request count, the
// run's length, and a hint naming the file the speech analysis needs.
func TestSummaryReader(t *testing.T) {
	t.Parallel()
	for _, fx := range summaryFixtures {
		dec, err := Open(strings.NewReader(fixture(t, fx.path)), fx.path, "auto")
		if err != nil {
			t.Fatal(err)
		}
		if _, err := dec.Next(); !errors.Is(err, io.EOF) {
			t.Fatalf("%s: Next gave %v; want no turns", fx.path, err)
		}
		td := dec.(ToolDecoder)
		s := td.ToolSummaries()
		if td.Tool() != fx.tool || len(s) != 1 {
			t.Fatalf("%s: tool %s, %d summaries", fx.path, td.Tool(), len(s))
		}
		per := map[Tool]string{ToolAIPerf: "pass profile_export.jsonl", ToolGenAIPerf: "pass profile_export.json,",
			ToolLLMPerf: "pass example-voice-8b_550_80_individual_responses.json"}[fx.tool]
		if !strings.Contains(s[0].Hint, per) {
			t.Errorf("%s: hint %q; want it to say %q", fx.path, s[0].Hint, per)
		}
		key := "time_to_first_token.p99"
		if fx.tool == ToolLLMPerf {
			key = "ttft_s.p99"
		}
		if _, ok := s[0].Values[key]; !ok {
			t.Errorf("%s: values %v", fx.path, s[0].Values)
		}
	}
	s := summaryOf(t, `{"aiperf_version": "1", "time_to_first_token": {"unit": "s", "avg": 0.25, "p50": 0.2},
		"request_count": {"unit": "requests", "avg": 12}, "benchmark_duration": {"unit": "sec", "avg": 30},
		"goodput": {"unit": "requests/sec", "avg": 0.4}, "output_sequence_length": {"unit": "tokens", "avg": 40}}`)
	if s.Values["time_to_first_token.avg"] != 250 || s.Values["time_to_first_token.p50"] != 200 || s.Completed != 12 ||
		s.DurationS != 30 || s.RequestGoodput == nil || *s.RequestGoodput != 0.4 || len(s.Values) != 2 {
		t.Errorf("summary %+v", s)
	}
}

func summaryOf(t *testing.T, in string) ToolSummary {
	t.Helper()
	d := NewSummaryReader(strings.NewReader(in), "s.json", ToolAIPerf)
	if _, err := d.Next(); !errors.Is(err, io.EOF) {
		t.Fatal(err)
	}
	return d.ToolSummaries()[0]
}

// TestSummaryReaderBadInput: what cannot be read is ErrFormat, with the
// field named.
func TestSummaryReaderBadInput(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ in, want string }{
		{`{"time_to_first_token": {"unit": "ms", "avg": "x"}}`, `s.json:1: time_to_first_token: want a number, got a string`},
		{`{"time_to_first_token": {"unit": "ms", "avg": 1}`, "cut off"},
		{`{"input_config": {}}`, "no metrics"},
		{`{"time_to_first_token": {"unit": "ms", "avg": 1}} {}`, "more after the summary"},
		{`[1]`, "want an object"},
	} {
		_, err := NewSummaryReader(strings.NewReader(tc.in), "s.json", ToolAIPerf).Next()
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: error %v; want one saying %q", tc.in, err, tc.want)
		}
	}
}

// FuzzSummaryReader: no input makes the summary reader panic, loop, hold
// memory out of proportion or give turns.
func FuzzSummaryReader(f *testing.F) {
	for _, fx := range summaryFixtures {
		b := []byte(fixture(f, fx.path))
		f.Add(b)
		f.Add(b[:len(b)/2])
	}
	// AIPerf's own example summary, in the "records" layout of AIPerf 0.1
	// and in the flat one of later releases
	for _, path := range []string{run1Records, run1Flat} {
		b := []byte(fixture(f, path))
		f.Add(b)
		f.Add(b[:len(b)/3])
	}
	f.Add([]byte(`{"records": {"ttft": {"unit": "ms", "avg": 1}}, "error_summary": [{"error_details": null, "count": null}, {"count": -1}]}`))
	f.Add([]byte(`{"time_to_first_token": {"unit": "ms", "avg": 1e308, "p99": -1e308}}`))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewSummaryReader(bytes.NewReader(data), "fuzz", ToolAIPerf)
		turn, err := d.Next()
		if turn != nil || err == nil || !errors.Is(err, io.EOF) && !errors.Is(err, ErrFormat) {
			t.Fatalf("turn %v, error %v", turn, err)
		}
		checkFootprint(t, d, data)
		if _, err := d.Next(); err == nil {
			t.Fatal("a second Next gave no error")
		}
	})
}

// TestVLLMSummaryOnlyAndAppended: a vLLM result without per-request
// arrays gives no turns and its saved summary, with the flag that saves
// the details; results appended to one file (--append-result) are runs of
// their own, each compared with its summary.
func TestVLLMSummaryOnlyAndAppended(t *testing.T) {
	t.Parallel()
	turns, err := drain([]byte(`{"completed": 3, "duration": 2.0, "mean_ttft_ms": 12.5, "request_goodput": null}`), "vllm")
	if err != nil || len(turns) != 0 {
		t.Fatalf("turns %v, error %v", turns, err)
	}
	dec, _ := Open(strings.NewReader(`{"completed": 3, "duration": 2.0, "mean_ttft_ms": 12.5}`), "in", "auto")
	dec.Next()
	s := dec.(ToolDecoder).ToolSummaries()
	if len(s) != 1 || s[0].Values["mean_ttft_ms"] != 12.5 || s[0].Completed != 3 || s[0].DurationS != 2 || !strings.Contains(s[0].Hint, "--save-detailed") {
		t.Errorf("summaries %+v", s)
	}
	f := figuresOf(t, `{"completed": 3, "mean_ttft_ms": 12.5, "p99_ttft_ms": 20}`)[0]
	if !f.SavedOnly || f.Requests != 3 || len(f.Metrics) != 1 || f.Metrics[0].Saved["mean"] != 12.5 || f.Metrics[0].Saved["p99"] != 20 {
		t.Errorf("figures %+v", f)
	}

	vllm := fixture(t, "testdata/vllm/basic/result.json")
	one := strings.Join(strings.Fields(vllm), " ")
	figs := figuresOf(t, one+"\n"+one+"\n")
	if len(figs) != 2 || figs[0].Run != "line 1" || figs[1].Run != "line 2" {
		t.Fatalf("%d runs: %+v", len(figs), figs)
	}
	for _, f := range figs {
		if f.Requests != 4 || f.Checked != 17 || len(f.Mismatches) != 0 {
			t.Errorf("%s: requests %d, checked %d, mismatches %v", f.Run, f.Requests, f.Checked, f.Mismatches)
		}
	}
}

// figuresOf runs an input through Parity as analyze does.
func figuresOf(t *testing.T, in string) []pipeline.ToolFigures {
	t.Helper()
	p, td := parityOf(t, "", in, nil)
	return p.Figures(td.ToolSummaries())
}

// TestLLMPerfAndGuideLLM: what the files hold is read as it is (llmperf's
// per-request figures, GuideLLM's first and last token iterations), the
// rest spaced evenly between, and the reports say the ITL tail is not
// measured.
func TestLLMPerfAndGuideLLM(t *testing.T) {
	t.Parallel()
	turns, _ := readToolFile(t, "testdata/llmperf/basic/example-voice-8b_550_80_individual_responses.json")
	var rows []struct {
		TTFT   float64 `json:"ttft_s"`
		ITL    float64 `json:"inter_token_latency_s"`
		Tokens int     `json:"number_output_tokens"`
		Code   any     `json:"error_code"`
	}
	if err := json.Unmarshal([]byte(fixture(t, "testdata/llmperf/basic/example-voice-8b_550_80_individual_responses.json")), &rows); err != nil {
		t.Fatal(err)
	}
	for i, r := range rows {
		turn := turns[i]
		if r.Code != nil {
			if turn.Status != pipeline.StatusError || !strings.Contains(turn.Error, "Too Many Requests") || len(turn.Chunks) != 0 {
				t.Errorf("%d: %+v", i, turn)
			}
			continue
		}
		first, last := turn.Chunks[0].At, turn.Chunks[len(turn.Chunks)-1].At
		if len(turn.Chunks) != r.Tokens || math.Abs(first.Seconds()-r.TTFT) > 1e-9 || math.Abs(last.Seconds()-r.ITL*float64(r.Tokens)) > 1e-9 {
			t.Errorf("%d: %d chunks from %v to %v; want %d from %v s to %v s", i, len(turn.Chunks), first, last, r.Tokens, r.TTFT, r.ITL*float64(r.Tokens))
		}
	}
	f := figures(t, "testdata/llmperf/basic/example-voice-8b_550_80_individual_responses.json")[0]
	if !strings.Contains(strings.Join(f.Notes, " "), "no ITL tail") || f.Requests != 8 {
		t.Errorf("llmperf figures: %+v", f)
	}

	turns, _ = readToolFile(t, "testdata/guidellm/basic/benchmarks.json")
	byID := map[string]*pipeline.Turn{}
	for _, turn := range turns {
		byID[turn.ID] = turn
	}
	if got := byID["req-7"]; got.Status != pipeline.StatusError || got.Error != "HTTP 500: Internal Server Error" {
		t.Errorf("errored request: %+v", got)
	}
	if got := byID["req-8"]; got.Status != pipeline.StatusCancelled {
		t.Errorf("incomplete request: %+v", got)
	}
	if tm, _ := byID["req-2"].Timing(); tm.TTFST <= tm.TTFT || !byID["req-2"].Chunks[0].Reasoning {
		t.Errorf("req-2 thinks for 50 ms first: TTFT %v, first spoken %v", tm.TTFT, tm.TTFST)
	}
	g := figures(t, "testdata/guidellm/basic/benchmarks.json")[0]
	if g.Checked != 65 || len(g.Mismatches) != 0 || !strings.Contains(strings.Join(g.Notes, " "), "ITL tail is not measured") {
		t.Errorf("guidellm figures: checked %d, mismatches %v, notes %q", g.Checked, g.Mismatches, g.Notes)
	}
}

// TestLLMPerfGuideLLMBadInput: what cannot be read names the request and
// the field.
func TestLLMPerfGuideLLMBadInput(t *testing.T) {
	t.Parallel()
	llm := fixture(t, "testdata/llmperf/basic/example-voice-8b_550_80_individual_responses.json")
	guide := fixture(t, "testdata/guidellm/basic/benchmarks.json")
	cases := []struct {
		name, format, input string
		want                []string
	}{
		{"llmperf not an array", "llmperf", `{"ttft_s": 1}`, []string{"in:1", "want llmperf's individual responses"}},
		{"llmperf empty", "llmperf", `[]`, []string{"no responses"}},
		{"llmperf negative ttft", "llmperf", strings.Replace(llm, `"ttft_s": 0.`, `"ttft_s": -0.`, 1), []string{"[0].ttft_s", "out of range"}},
		{"llmperf tokens past the limit", "llmperf", strings.Replace(llm, `"number_output_tokens": `, `"number_output_tokens": 9000000`, 1), []string{"[0].number_output_tokens", "want a count from 0 to 262144"}},
		{"llmperf cut", "llmperf", llm[:len(llm)/2], []string{"cut off"}},
		{"guidellm no benchmarks", "guidellm", `{"metadata": {}}`, []string{`no "benchmarks"`}},
		{"guidellm time backwards", "guidellm", strings.Replace(guide, `"last_token_iteration": 1764670000.`, `"last_token_iteration": 1764660000.`, 1),
			[]string{"benchmarks[0].requests.successful[0]", "last_token_iteration", "want 0 to"}},
		{"guidellm tokens past the limit", "guidellm", strings.Replace(guide, `"output_tokens": `, `"output_tokens": 9000000`, 1), []string{"benchmarks[0].requests.successful[0]", "output_tokens 9000000"}},
		{"guidellm bad status object", "guidellm", strings.Replace(guide, `"requests": {`, `"requests": {5: `, 1), []string{"benchmarks[0].requests", "want a status"}},
		{"guidellm cut", "guidellm", guide[:len(guide)/2], []string{"cut off"}},
	}
	for _, tc := range cases {
		_, err := drain([]byte(tc.input), tc.format)
		if !errors.Is(err, ErrFormat) {
			t.Errorf("%s: error %v", tc.name, err)
			continue
		}
		for _, w := range tc.want {
			if !strings.Contains(err.Error(), w) {
				t.Errorf("%s: error %q does not say %q", tc.name, err, w)
			}
		}
	}
}
