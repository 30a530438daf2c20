package trace

import (
	"bytes"
	"errors"
	"io"
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
		per := map[Tool]string{ToolAIPerf: "pass profile_export.jsonl", ToolGenAIPerf: "pass profile_export.json,"}[fx.tool]
		if !strings.Contains(s[0].Hint, per) {
			t.Errorf("%s: hint %q; want it to say %q", fx.path, s[0].Hint, per)
		}
		if _, ok := s[0].Values["time_to_first_token.p99"]; !ok {
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
