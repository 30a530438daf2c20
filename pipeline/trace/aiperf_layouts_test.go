package trace

import (
	"os"
	"strings"
	"testing"
)

// run1 is AIPerf's own example run (ai-dynamo/aiperf commit 7c31f579,
// examples/artifacts/run1; see testdata/aiperf/SOURCE.md): its
// per-request export and its summary in the "records" layout of AIPerf
// 0.1, and the same summary in the flat layout of AIPerf 0.2 and later
// (written from it by testdata/aiperf/flat_layout.py, by the rules of
// commit 43b78902).
const (
	run1Export  = "testdata/aiperf/run1/profile_export.jsonl"
	run1Records = "testdata/aiperf/run1/profile_export_aiperf.json"
	run1Flat    = "testdata/aiperf/run1-flat/profile_export_aiperf.json"
)

// savedSummary reads a summary file as analyze does.
func savedSummary(t *testing.T, path string, tool Tool) []ToolSummary {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	head := make([]byte, SniffLen)
	n, _ := f.Read(head)
	if got := Detect(head[:n]); got != "aiperf-summary" && tool == ToolAIPerf {
		t.Fatalf("%s is told as %q; want aiperf-summary", path, got)
	}
	f.Seek(0, 0)
	d := NewSummaryReader(f, path, tool)
	if _, err := d.Next(); err == nil || err.Error() != "EOF" {
		t.Fatalf("%s: %v", path, err)
	}
	return d.ToolSummaries()
}

// TestAIPerfSummaryLayouts: both layouts of AIPerf's summary read to the
// same saved figures, and AIPerf's own example run, recomputed from its
// per-request export, agrees with every one of them: the TTFT (tagged
// ttft then), TPOT, ITL and E2E statistics, the 89 completed requests,
// and the 11 failed ones in all (error_request_count) and by kind
// (error_summary: 11 cancelled by the client, 499).
func TestAIPerfSummaryLayouts(t *testing.T) {
	t.Parallel()
	records := savedSummary(t, run1Records, ToolAIPerf)
	flat := savedSummary(t, run1Flat, ToolAIPerf)
	if len(records) != 1 || len(flat) != 1 {
		t.Fatalf("%d and %d summaries", len(records), len(flat))
	}
	r, fl := records[0], flat[0]
	if got, want := r.Values["ttft.avg"], 2343.219436988764; got != want {
		t.Errorf("records layout: ttft.avg %v; want %v", got, want)
	}
	if got, want := fl.Values["time_to_first_token.avg"], 2343.219436988764; got != want {
		t.Errorf("flat layout: time_to_first_token.avg %v; want %v", got, want)
	}
	if len(r.Values) != len(fl.Values) || len(r.Values) < 40 {
		t.Errorf("records layout: %d values, flat: %d", len(r.Values), len(fl.Values))
	}
	for key, v := range fl.Values {
		old := strings.Replace(strings.Replace(key, "time_to_first_token.", "ttft.", 1), "time_to_second_token.", "ttst.", 1)
		if r.Values[old] != v {
			t.Errorf("%s: flat %v, records %v", key, v, r.Values[old])
		}
	}
	const cancelled = "RequestCancellationError (499): Request was cancelled after 0.000 seconds"
	for _, s := range []ToolSummary{r, fl} {
		if s.Completed != 89 || s.Failed == nil || *s.Failed != 11 || len(s.FailedBy) != 1 || s.FailedBy[cancelled] != 11 ||
			s.DurationS != 9.317788951 {
			t.Errorf("completed %d, failed %v, by kind %v, duration %v", s.Completed, s.Failed, s.FailedBy, s.DurationS)
		}
	}

	for _, tc := range []struct {
		name  string
		saved []ToolSummary
	}{{"records", records}, {"flat", flat}} {
		p, td := parityOf(t, run1Export, "", nil)
		figs := p.Figures(tc.saved)
		if len(figs) != 1 {
			t.Fatalf("%s: %d figures", tc.name, len(figs))
		}
		f := figs[0]
		// 4 metrics of 13 statistics each (avg, min, max, p1 ... p99 but
		// p10, std), the completed count, error_request_count and the
		// one kind of error_summary
		if f.Requests != 89 || f.Checked != 4*12+3 || len(f.Mismatches) != 0 {
			t.Errorf("%s: %d requests, %d checked, mismatches %+v", tc.name, f.Requests, f.Checked, f.Mismatches)
		}
		if note := strings.Join(f.Notes, "\n"); !strings.Contains(note, "failed requests: 11 in the file, the summary's error_summary: 11 x "+cancelled+" (error_request_count 11)") {
			t.Errorf("%s: notes %q", tc.name, note)
		}
		if td.Tool() != ToolAIPerf {
			t.Errorf("tool %s", td.Tool())
		}
	}
}

// TestAIPerfSummaryFailures: what the per-request file and the summary
// count differently is a mismatch by name, in all and by kind.
func TestAIPerfSummaryFailures(t *testing.T) {
	t.Parallel()
	s := summaryOf(t, `{"records": {"error_request_count": {"tag": "error_request_count", "unit": "requests", "avg": 12.0, "count": 1},
		"ttft": {"unit": "ms", "avg": 1}}, "error_summary": [
		{"error_details": {"code": 499, "type": "RequestCancellationError", "message": "Request was cancelled after 0.000 seconds"}, "count": 10},
		{"error_details": {"code": null, "type": "TimeoutError", "message": "late"}, "count": 2}]}`)
	p, _ := parityOf(t, run1Export, "", nil)
	f := p.Figures([]ToolSummary{s})[0]
	got := map[string][2]float64{}
	for _, m := range f.Mismatches {
		got[m.Key] = [2]float64{m.Saved, m.Computed}
	}
	want := map[string][2]float64{
		"error_request_count": {12, 11},
		"error_summary[RequestCancellationError (499): Request was cancelled after 0.000 seconds]": {10, 11},
		"error_summary[TimeoutError: late]": {2, 0},
		"ttft.avg":                          {1, 2343.219436988764},
	}
	for k, w := range want {
		if g, ok := got[k]; !ok || g[0] != w[0] || !within(g[1], w[1]) {
			t.Errorf("%s: saved, computed %v; want %v", k, g, w)
		}
	}
	if len(got) != len(want) {
		t.Errorf("mismatches %v", got)
	}
}
