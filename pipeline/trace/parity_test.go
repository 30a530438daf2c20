package trace

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
)

// The tools' statistics, re-derived here from numpy's definitions
// independently of pipeline.Summary: mean, population std, and the linear
// percentile; an empty list counts as [0] (np.mean(x or 0)).
func npStats(v []float64) map[string]float64 {
	if len(v) == 0 {
		v = []float64{0}
	}
	s := slices.Sorted(slices.Values(v))
	pct := func(p float64) float64 {
		h := float64(len(s)-1) * p / 100
		lo := int(h)
		if lo+1 >= len(s) {
			return s[len(s)-1]
		}
		return s[lo] + (h-float64(lo))*(s[lo+1]-s[lo])
	}
	mean := 0.0
	for _, x := range s {
		mean += x
	}
	mean /= float64(len(s))
	ss := 0.0
	for _, x := range s {
		ss += (x - mean) * (x - mean)
	}
	return map[string]float64{
		"mean": mean, "median": pct(50), "std": math.Sqrt(ss / float64(len(s))),
		"min": s[0], "max": s[len(s)-1], "p90": pct(90), "p95": pct(95), "p99": pct(99),
	}
}

// figures runs a fixture through Parity as analyze does.
func figures(t *testing.T, path string) []pipeline.ToolFigures {
	t.Helper()
	p, td := parityOf(t, path, "", nil)
	return p.Figures(td.ToolSummaries())
}

// parityOf runs a file (or, with path "", the input in) through Parity as
// analyze does, counting request goodput for slos.
func parityOf(t *testing.T, path, in string, slos []pipeline.SLO) (*Parity, ToolDecoder) {
	t.Helper()
	var r io.Reader = strings.NewReader(in)
	if path != "" {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		r = f
	}
	dec, err := Open(r, path, "")
	if err != nil {
		t.Fatal(err)
	}
	td := dec.(ToolDecoder)
	p := NewParity(td.Tool())
	p.CountGoodput(slos)
	for {
		turn, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		p.AddFrom(td, turn)
	}
	return p, td
}

func metricOf(t *testing.T, f pipeline.ToolFigures, name string) pipeline.Summary {
	t.Helper()
	for _, m := range f.Metrics {
		if m.Name == name {
			return *m.Summary
		}
	}
	t.Fatalf("no metric %q in %+v", name, f.Metrics)
	return pipeline.Summary{}
}

// within reports whether got is want to 1e-9 relative (exactly, for 0):
// the parity the tools' figures are held to.
func within(got, want float64) bool {
	return got == want || math.Abs(got-want) <= 1e-9*math.Abs(want)
}

// checkStats compares a summary with the re-derived statistics.
func checkStats(t *testing.T, label string, got pipeline.Summary, want map[string]float64, count int) {
	t.Helper()
	if got.Count != count {
		t.Errorf("%s: count %d, want %d", label, got.Count, count)
	}
	for stat, w := range want {
		g := map[string]float64{"mean": got.Mean, "median": got.Median, "std": got.Std, "min": got.Min,
			"max": got.Max, "p90": got.P90, "p95": got.P95, "p99": got.P99}[stat]
		if count == 0 {
			continue // an empty summary is all zero; the tools' [0] is too
		}
		if !within(g, w) {
			t.Errorf("%s %s = %.17g, want %.17g (relative difference %.2g)", label, stat, g, w, math.Abs(g-w)/math.Abs(w))
		}
	}
}

// TestVLLMParity re-derives vLLM's arithmetic from the raw arrays of the
// fixture, checks it against the summary vLLM saved, and checks that
// underrun computes the same, and reports no mismatch.
func TestVLLMParity(t *testing.T) {
	t.Parallel()
	const path = "testdata/vllm/basic/result.json"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var res struct {
		TTFTs      []float64   `json:"ttfts"`
		ITLs       [][]float64 `json:"itls"`
		OutputLens []int       `json:"output_lens"`
		Errors     []string    `json:"errors"`
	}
	var saved map[string]any
	if err := json.Unmarshal(raw, &res); err != nil {
		t.Fatal(err)
	}
	json.Unmarshal(raw, &saved)
	var ttft, tpot, itl, e2el []float64
	for i := range res.TTFTs {
		if res.Errors[i] != "" {
			continue // vLLM leaves failed requests out of every statistic
		}
		latency := res.TTFTs[i]
		for _, g := range res.ITLs[i] {
			latency += g
			itl = append(itl, g*1000) // pooled, per chunk
		}
		ttft = append(ttft, res.TTFTs[i]*1000)
		e2el = append(e2el, latency*1000)
		if n := res.OutputLens[i]; n > 1 { // single-token requests have no TPOT
			tpot = append(tpot, (latency-res.TTFTs[i])/float64(n-1)*1000)
		}
	}
	derived := map[string][]float64{"ttft": ttft, "tpot": tpot, "itl": itl, "e2el": e2el}
	// the fixture's saved summary is what vLLM's arithmetic gives
	for name, v := range derived {
		st := npStats(v)
		for _, stat := range []string{"mean", "median", "std", "p99"} {
			key := fmt.Sprintf("%s_%s_ms", stat, name)
			if got := saved[key].(float64); math.Abs(got-st[stat]) > 1e-9 {
				t.Errorf("fixture %s = %v, vLLM's arithmetic gives %v", key, got, st[stat])
			}
		}
	}
	figs := figures(t, path)
	if len(figs) != 1 {
		t.Fatalf("%d runs, want 1", len(figs))
	}
	f := figs[0]
	if f.Requests != 4 {
		t.Errorf("requests %d, want 4", f.Requests)
	}
	for name, v := range derived {
		checkStats(t, name, metricOf(t, f, name), npStats(v), len(v))
	}
	if f.Checked != 17 || len(f.Mismatches) != 0 {
		t.Errorf("checked %d saved values (want 17), mismatches %+v", f.Checked, f.Mismatches)
	}
}

// TestSGLangParity re-derives SGLang's per-token ITLs (a chunk's gap split
// evenly over its tokens) from the raw arrays and checks each run.
func TestSGLangParity(t *testing.T) {
	t.Parallel()
	const path = "testdata/sglang/basic/result.jsonl"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	figs := figures(t, path)
	lines := strings.Split(strings.TrimSpace(string(raw)), "\n")
	if len(figs) != len(lines) {
		t.Fatalf("%d runs, want %d", len(figs), len(lines))
	}
	for run, line := range lines {
		var res struct {
			TTFTs  []float64   `json:"ttfts"`
			ITLs   [][]float64 `json:"itls"`
			Errors []string    `json:"errors"`
		}
		// Python writes float("inf") as Infinity, which encoding/json rejects
		line = strings.ReplaceAll(line, "Infinity", "null")
		if err := json.Unmarshal([]byte(line), &res); err != nil {
			t.Fatal(err)
		}
		var ttft, itl []float64
		for i := range res.TTFTs {
			if res.Errors[i] != "" {
				continue
			}
			ttft = append(ttft, res.TTFTs[i]*1000)
			for _, g := range res.ITLs[i] {
				itl = append(itl, g*1000)
			}
		}
		f := figs[run]
		checkStats(t, fmt.Sprintf("run %d ttft", run), metricOf(t, f, "ttft"), npStats(ttft), len(ttft))
		checkStats(t, fmt.Sprintf("run %d itl", run), metricOf(t, f, "itl"), npStats(itl), len(itl))
		// ttft (mean, median, std, p99) + itl (mean, median, std, p95, p99, max) + completed
		if f.Checked != 11 || len(f.Mismatches) != 0 {
			t.Errorf("run %d: checked %d (want 11), mismatches %+v", run, f.Checked, f.Mismatches)
		}
		if f.Run != fmt.Sprintf("line %d", run+1) || len(f.Notes) == 0 {
			t.Errorf("run %d: label %q, notes %q", run, f.Run, f.Notes)
		}
	}
}

// TestAIPerfParity re-derives AIPerf's metrics from the records: TTFT,
// request latency, inter_token_latency = (latency - TTFT) / (OSL - 1) for
// requests of two chunks or more, inter_chunk_latency pooled; failed,
// cancelled and warm-up records left out. It also checks them against the
// per-request inter_token_latency the records carry.
func TestAIPerfParity(t *testing.T) {
	t.Parallel()
	const path = "testdata/aiperf/basic/profile_export.jsonl"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	type mv struct {
		Value json.RawMessage `json:"value"`
		Unit  string          `json:"unit"`
	}
	ms := func(m *mv) float64 {
		var v float64
		json.Unmarshal(m.Value, &v)
		if m.Unit == "s" {
			v *= 1000
		}
		return v
	}
	var ttft, itl, icl, lat []float64
	for _, line := range strings.Split(strings.TrimSpace(string(raw)), "\n") {
		var rec struct {
			Metadata map[string]any `json:"metadata"`
			Metrics  map[string]*mv `json:"metrics"`
			Error    any            `json:"error"`
		}
		if err := json.Unmarshal([]byte(line), &rec); err != nil {
			t.Fatal(err)
		}
		if rec.Error != nil || rec.Metadata["benchmark_phase"] == "warmup" {
			continue
		}
		first := rec.Metrics["time_to_first_token"]
		if first == nil {
			first = rec.Metrics["ttft"]
		}
		var gaps []float64
		if m := rec.Metrics["inter_chunk_latency"]; m != nil {
			json.Unmarshal(m.Value, &gaps)
		}
		osl := ms(rec.Metrics["output_sequence_length"])
		l := ms(rec.Metrics["request_latency"])
		ttft = append(ttft, ms(first))
		lat = append(lat, l)
		icl = append(icl, gaps...)
		if len(gaps) >= 1 && osl > 1 {
			v := (l - ms(first)) / (osl - 1)
			itl = append(itl, v)
			if saved := rec.Metrics["inter_token_latency"]; saved != nil && math.Abs(ms(saved)-v) > 1e-9 {
				t.Errorf("fixture inter_token_latency %v, AIPerf's formula gives %v", ms(saved), v)
			}
		}
	}
	figs := figures(t, path)
	f := figs[0]
	if f.Requests != 4 || f.Checked != 0 {
		t.Errorf("requests %d (want 4), checked %d (want 0)", f.Requests, f.Checked)
	}
	checkStats(t, "time_to_first_token", metricOf(t, f, "time_to_first_token"), npStats(ttft), len(ttft))
	checkStats(t, "inter_token_latency", metricOf(t, f, "inter_token_latency"), npStats(itl), len(itl))
	checkStats(t, "inter_chunk_latency", metricOf(t, f, "inter_chunk_latency"), npStats(icl), len(icl))
	checkStats(t, "request_latency", metricOf(t, f, "request_latency"), npStats(lat), len(lat))
}

// TestAIPerfReasoning checks that reasoning chunks are not spoken: the
// report sees the first spoken token after them, and a turn of reasoning
// only as a turn without speech.
func TestAIPerfReasoning(t *testing.T) {
	t.Parallel()
	turns, _ := readToolFile(t, "testdata/aiperf/basic/profile_export.jsonl")
	byID := map[string]*pipeline.Turn{}
	for _, turn := range turns {
		byID[turn.ID] = turn
	}
	tm, _ := byID["req-a"].Timing()
	if !tm.HasSpeech || tm.TTFST != 171250000 || tm.TTFT != 120500000 {
		t.Errorf("req-a: TTFT %v, first spoken %v (speech %v); want 120.5ms and 171.25ms", tm.TTFT, tm.TTFST, tm.HasSpeech)
	}
	if tm, _ := byID["req-think"].Timing(); tm.HasSpeech {
		t.Errorf("req-think is all reasoning but has speech at %v", tm.TTFST)
	}
	if _, ok := byID["req-warm"]; ok {
		t.Error("the warm-up record was read as a turn")
	}
	if got := byID["req-cancel"].Status; got != pipeline.StatusCancelled {
		t.Errorf("req-cancel status %q", got)
	}
	if got := byID["req-err"]; got.Status != pipeline.StatusError || !strings.Contains(got.Error, "InternalServerError (500)") {
		t.Errorf("req-err: %q %q", got.Status, got.Error)
	}
}

// TestGenAIPerfParity re-derives GenAI-Perf's arithmetic from the raw
// responses: responses without content dropped, TTFT and request latency
// from the rest, inter_token_latency = round((latency - TTFT) / (n - 1))
// nanoseconds with n the completion tokens, for requests of two responses
// and two tokens or more.
func TestGenAIPerfParity(t *testing.T) {
	t.Parallel()
	const path = "testdata/genaiperf/basic/profile_export.json"
	raw, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var exp struct {
		Experiments []struct {
			Requests []struct {
				Timestamp int64   `json:"timestamp"`
				Stamps    []int64 `json:"response_timestamps"`
				Outputs   []struct {
					Response string `json:"response"`
				} `json:"response_outputs"`
			} `json:"requests"`
		} `json:"experiments"`
	}
	if err := json.Unmarshal(raw, &exp); err != nil {
		t.Fatal(err)
	}
	figs := figures(t, path)
	if len(figs) != len(exp.Experiments) {
		t.Fatalf("%d runs, want %d", len(figs), len(exp.Experiments))
	}
	for e, ex := range exp.Experiments {
		var ttft, itl, lat []float64
		for _, rq := range ex.Requests {
			var kept []int64
			tokens := 0
			for i, out := range rq.Outputs {
				text := ""
				for _, ev := range strings.Split(out.Response, "\n\n") {
					ev = strings.TrimPrefix(strings.TrimSpace(ev), "data: ")
					var chunk struct {
						Choices []struct {
							Delta map[string]any `json:"delta"`
							Text  string         `json:"text"`
						} `json:"choices"`
						Usage *struct {
							CompletionTokens int `json:"completion_tokens"`
						} `json:"usage"`
					}
					if json.Unmarshal([]byte(ev), &chunk) != nil {
						continue
					}
					for _, c := range chunk.Choices {
						for _, k := range []string{"content", "reasoning_content"} {
							if s, ok := c.Delta[k].(string); ok {
								text += s
							}
						}
						text += c.Text
					}
					if chunk.Usage != nil {
						tokens = chunk.Usage.CompletionTokens
					}
				}
				if text != "" {
					kept = append(kept, rq.Stamps[i])
				}
			}
			if tokens == 0 {
				tokens = len(kept)
			}
			first, last := kept[0]-rq.Timestamp, kept[len(kept)-1]-rq.Timestamp
			ttft = append(ttft, float64(first)/1e6)
			lat = append(lat, float64(last)/1e6)
			if len(kept) > 1 && tokens > 1 { // num_responses > 1 and total_output_token > 1
				itl = append(itl, math.RoundToEven(float64(last-first)/float64(tokens-1))/1e6)
			}
		}
		f := figs[e]
		checkStats(t, "time_to_first_token", metricOf(t, f, "time_to_first_token"), npStats(ttft), len(ttft))
		checkStats(t, "inter_token_latency", metricOf(t, f, "inter_token_latency"), npStats(itl), len(itl))
		checkStats(t, "request_latency", metricOf(t, f, "request_latency"), npStats(lat), len(lat))
	}
}

// TestParityReportsMismatch changes one saved value and expects the
// comparison to name it.
func TestParityReportsMismatch(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile("testdata/vllm/basic/result.json")
	if err != nil {
		t.Fatal(err)
	}
	raw = []byte(strings.Replace(string(raw), `"p99_itl_ms": 477.50000000000006`, `"p99_itl_ms": 470.0`, 1))
	path := t.TempDir() + "/result.json"
	if err := os.WriteFile(path, raw, 0o644); err != nil {
		t.Fatal(err)
	}
	f := figures(t, path)[0]
	if len(f.Mismatches) != 1 || f.Mismatches[0].Key != "p99_itl_ms" || f.Mismatches[0].Saved != 470 {
		t.Errorf("mismatches %+v; want p99_itl_ms saved 470", f.Mismatches)
	}
}
