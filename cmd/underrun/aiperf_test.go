package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeAIPerfRun1: AIPerf's own example run folder (ai-dynamo/aiperf
// examples/artifacts/run1, see pipeline/trace/testdata/aiperf/SOURCE.md)
// analyzes with the summary beside it in the "records" layout of AIPerf
// 0.1 and in the flat layout of later releases: every saved figure,
// error_request_count and error_summary included, matches what underrun
// computes from the per-request export.
func TestAnalyzeAIPerfRun1(t *testing.T) {
	t.Parallel()
	for _, summary := range []string{"aiperf/run1/profile_export_aiperf.json", "aiperf/run1-flat/profile_export_aiperf.json"} {
		dir := t.TempDir()
		export := copyFixture(t, dir, "aiperf/run1/profile_export.jsonl", "profile_export.jsonl")
		copyFixture(t, dir, summary, "profile_export_aiperf.json")
		code, stdout, stderr := runCLI(t, "", "analyze", export)
		if code == exitUsage || stderr != "" {
			t.Errorf("%s: exit %d, stderr %s", summary, code, stderr)
		}
		for _, want := range []string{"aiperf " + export + ": figures as that tool computes them, over 89 requests",
			"saved summary: all 51 values match", "compared with AIPerf's summary",
			"failed requests: 11 in the file, the summary's error_summary: 11 x RequestCancellationError (499)"} {
			if !strings.Contains(stdout, want) {
				t.Errorf("%s: output does not say %q:\n%s", summary, want, stdout)
			}
		}
	}
}

// TestAnalyzeAIPerfBadSummary: a summary beside the export, or given,
// that cannot be read is warned of on stderr, and the per-request
// analysis goes on as without it.
func TestAnalyzeAIPerfBadSummary(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	export := copyFixture(t, dir, "aiperf/basic/profile_export.jsonl", "profile_export.jsonl")
	_, alone, _ := runCLI(t, "", "analyze", export)
	for _, bad := range []string{`{"records": {"ttft": {"unit": "ms", "avg": "x"}}}`, `{"input_config": {}}`, ``} {
		os.WriteFile(filepath.Join(dir, "profile_export_aiperf.json"), []byte(bad), 0o644)
		code, stdout, stderr := runCLI(t, "", "analyze", export)
		if code == exitUsage || !strings.Contains(stderr, "underrun: warning: ") || !strings.Contains(stderr, "is analyzed without AIPerf's summary") ||
			!strings.Contains(stdout, "AIPerf's summary "+filepath.Join(dir, "profile_export_aiperf.json")+" could not be read") {
			t.Errorf("%q: exit %d, stderr %s\n%s", bad, code, stderr, stdout)
		}
		// the speech analysis is the one without a summary
		if a, b := stdout[:strings.Index(stdout, "aiperf ")], alone[:strings.Index(alone, "aiperf ")]; a != b {
			t.Errorf("%q: the analysis differs from the one without a summary:\n%s\n---\n%s", bad, a, b)
		}
	}
}

// TestAnalyzeUnknownFieldWarning: a native record's field of a name the
// format does not define is warned of once on stderr, and read past.
func TestAnalyzeUnknownFieldWarning(t *testing.T) {
	t.Parallel()
	in := `{"type":"turn","turn":"a","start_ms":5}
{"type":"chunk","turn":"a","t_ns":300000000,"text":"Hello."}
{"type":"end","turn":"a","status":"ok"}
{"type":"turn","turn":"b","start_ms":9}
{"type":"end","turn":"b","status":"ok"}
`
	for _, cmd := range [][]string{{"analyze"}, {"convert"}} {
		code, _, stderr := runCLI(t, in, cmd...)
		if code == exitUsage || strings.Count(stderr, "underrun: warning: ") != 1 ||
			!strings.Contains(stderr, `underrun: warning: stdin:1: field "start_ms" of a turn record is not one the format defines`) {
			t.Errorf("%v: exit %d, stderr %s", cmd, code, stderr)
		}
	}
}
