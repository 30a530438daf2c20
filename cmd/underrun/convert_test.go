package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

const toolFixtures = "../../pipeline/trace/testdata"

// TestConvertThenAnalyze converts every benchmark format to a native
// trace, and checks that analyzing the native trace gives the same
// latency figures as analyzing the original file.
func TestConvertThenAnalyze(t *testing.T) {
	t.Parallel()
	for _, file := range []string{
		"vllm/basic/result.json",
		"sglang/basic/result.jsonl",
		"aiperf/basic/profile_export.jsonl",
		"genaiperf/basic/profile_export.json",
		"llmperf/basic/example-voice-8b_550_80_individual_responses.json",
		"guidellm/basic/benchmarks.json",
	} {
		t.Run(filepath.Dir(filepath.Dir(file)), func(t *testing.T) {
			t.Parallel()
			in := filepath.Join(toolFixtures, file)
			out := filepath.Join(t.TempDir(), "trace.jsonl")
			code, stdout, stderr := runCLI(t, "", "convert", in, "-o", out)
			if code != exitOK || stdout != "" {
				t.Fatalf("convert: exit %d, stdout %q, stderr %s", code, stdout, stderr)
			}
			figures := func(args ...string) map[string]any {
				_, stdout, stderr := runCLI(t, "", append([]string{"analyze", "--report", "json"}, args...)...)
				var r map[string]any
				if err := json.Unmarshal([]byte(stdout), &r); err != nil {
					t.Fatalf("analyze %v: %v; stderr %s", args, err, stderr)
				}
				return r
			}
			orig, conv := figures(in), figures(out)
			for _, k := range []string{"turns", "turns_failed", "turns_silent", "ttft_ms", "ttfst_ms", "tpot_ms", "itl_ms", "e2el_ms", "underruns"} {
				a, _ := json.Marshal(orig[k])
				b, _ := json.Marshal(conv[k])
				if string(a) != string(b) {
					t.Errorf("%s: original %s, converted %s", k, a, b)
				}
			}
			if orig["tool_figures"] == nil || conv["tool_figures"] != nil {
				t.Errorf("tool figures: original %v, converted %v; want them for the tool's file only", orig["tool_figures"] != nil, conv["tool_figures"] != nil)
			}
		})
	}
}

// TestConvertStdinAndErrors: a piped vLLM file converts (it is copied to a
// temporary file first); a bad file exits 2 naming the field; an unknown
// format is a usage error.
func TestConvertStdinAndErrors(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(toolFixtures, "vllm/basic/result.json"))
	if err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, string(raw), "convert")
	if code != exitOK || !strings.HasPrefix(stdout, `{"type":"header"`) || strings.Count(stdout, `"type":"end"`) != 5 {
		t.Fatalf("exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
	bad := strings.Replace(string(raw), `[0.05]`, `[0.05, "x"]`, 1)
	code, _, stderr = runCLI(t, bad, "convert")
	if code != exitUsage || !strings.Contains(stderr, `stdin:23: "itls"[1]: want a number`) {
		t.Errorf("bad file: exit %d, stderr %q", code, stderr)
	}
	code, _, stderr = runCLI(t, "{}", "convert", "--format", "nope")
	if code != exitUsage || !strings.Contains(stderr, `unknown format "nope"`) {
		t.Errorf("unknown format: exit %d, stderr %q", code, stderr)
	}
	out := filepath.Join(t.TempDir(), "half.jsonl")
	code, _, _ = runCLI(t, bad, "convert", "-o", out)
	if _, err := os.Stat(out); code != exitUsage || err == nil {
		t.Errorf("a failed conversion left %s behind (exit %d)", out, code)
	}
}

// TestAnalyzeReportsToolMismatch: a saved summary that does not match the
// data is reported in the text report.
func TestAnalyzeReportsToolMismatch(t *testing.T) {
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(toolFixtures, "vllm/basic/result.json"))
	if err != nil {
		t.Fatal(err)
	}
	bad := strings.Replace(string(raw), `"mean_ttft_ms": 187.5`, `"mean_ttft_ms": 190.0`, 1)
	_, stdout, stderr := runCLI(t, bad, "analyze")
	if !strings.Contains(stdout, "saved summary: 1 of 17 values differ") || !strings.Contains(stdout, "mean_ttft_ms: saved 190.0000, computed 187.5000") {
		t.Errorf("stdout:\n%s\nstderr %s", stdout, stderr)
	}
}

// TestConvertSummaryOnly: a file that holds a tool's summary and no
// requests has nothing to convert: exit 2, saying how to save the details.
func TestConvertSummaryOnly(t *testing.T) {
	t.Parallel()
	code, stdout, stderr := runCLI(t, `{"tokenizer_id": "m", "completed": 10, "mean_ttft_ms": 120.5}`, "convert")
	if code != exitUsage || !strings.Contains(stderr, "vLLM's summary only, no requests to convert; run vllm bench serve with --save-result --save-detailed") {
		t.Errorf("exit %d, stdout %q, stderr %q", code, stdout, stderr)
	}
}
