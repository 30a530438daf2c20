package main

import (
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeBadInputExitsTwo: input that cannot be read exits 2 with a
// message naming the line or field, also when it is a single line of
// garbage for a format named with --format, or counts and times past what
// the rest of the tool can hold.
func TestAnalyzeBadInputExitsTwo(t *testing.T) {
	t.Parallel()
	long := `{"type":"chunk","turn":"a","t_ns":1,"text":"` + strings.Repeat("x", 2<<20) + "\"}\n"
	cases := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"sse garbage", "garbage", []string{"--format", "sse"}, "stdin:1: not a JSON object"},
		{"sse garbage lines", "garbage\nmore garbage\n", []string{"--format", "sse"}, "stdin:1: not a JSON object"},
		{"native garbage", "garbage", []string{"--format", "native"}, "stdin:1: not a JSON object"},
		{"long first line", long, nil, "stdin:1: line longer than"},
		{"long second line", `{"type":"header"}` + "\n" + long, []string{"--format", "native"}, "stdin:2: line longer than"},
		{"a million tokens, with --wav", `{"type":"chunk","turn":"a","t_ns":1,"tokens":1000000}` + "\n",
			[]string{"--wav", "WAV", "--audio-engine", "synthetic"}, `stdin:1: chunk of turn "a" has tokens 1000000; want a count from 0 to 262144`},
		{"a turn that speaks for hours, with --wav", `{"type":"chunk","turn":"a","t_ns":1,"tokens":200000}` + "\n",
			[]string{"--wav", "WAV", "--audio-engine", "synthetic", "--chunking", "token"}, `--wav: turn "a" plays for`},
		{"a million tokens, for mock --trace", `{"type":"chunk","turn":"a","t_ns":1,"tokens":1000000}` + "\n",
			[]string{"MOCK"}, `chunk of turn "a" has tokens 1000000; want a count from 0 to 262144`},
		{"t_ns past a year", `{"type":"chunk","turn":"a","t_ns":9223372036854775807,"text":"Hi"}` + "\n", nil, "t_ns 9223372036854775807; want a time from 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"analyze"}, tc.args...)
			for i, a := range args {
				if a == "WAV" {
					args[i] = filepath.Join(t.TempDir(), "out.wav")
				}
			}
			if len(tc.args) == 1 && tc.args[0] == "MOCK" {
				// the mock reads the trace before it listens
				args = []string{"mock", "--trace", "-", "--listen", "127.0.0.1:0"}
			}
			code, _, stderr := runCLI(t, tc.stdin, args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, tc.want)
			}
		})
	}
}

// TestAnalyzeVLLMPastTheHead: a vLLM result whose identifying keys come
// after its first 64 KiB (here: keys sorted by name, a long text first)
// is told from its content when analyze reads it from a file.
func TestAnalyzeVLLMPastTheHead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sorted.json")
	text := strings.Repeat("Sure, here it is. ", 5000)
	in := `{"completed": 1, "errors": [""], "generated_texts": ["` + text + `"], "itls": [[0.02, 0.02]], "output_lens": [3], "ttfts": [0.1]}`
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "", "analyze", "--per-turn", path)
	if code == exitUsage || !strings.Contains(stdout, "vllm "+path) {
		t.Errorf("exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
}

// copyFixture copies a tool fixture into dir under name.
func copyFixture(t *testing.T, dir, fixture, name string) string {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(toolFixtures, fixture))
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, name)
	if err := os.WriteFile(path, b, 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// TestAnalyzeSummaryOnly: files that hold a tool's summary and no
// per-request timings print the saved figures in the tool table, say what
// the speech analysis needs and how to get it, and exit 0; a file that
// cannot be read at all still exits 2.
func TestAnalyzeSummaryOnly(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	vllm := filepath.Join(dir, "vllm-summary.json")
	os.WriteFile(vllm, []byte(`{"backend": "vllm", "tokenizer_id": "m", "completed": 100, "duration": 12.5, "mean_ttft_ms": 120.5, "median_ttft_ms": 110.0, "std_ttft_ms": 30.0, "p99_ttft_ms": 250.0, "mean_itl_ms": 21.0, "p99_itl_ms": 45.0}`), 0o644)
	sglang := filepath.Join(dir, "sglang.jsonl")
	os.WriteFile(sglang, []byte(`{"backend": "sglang", "completed": 10, "mean_e2e_latency_ms": 900.0, "mean_ttft_ms": 80.0, "p99_ttft_ms": 90.0}`+"\n"), 0o644)
	cases := []struct {
		name, file string
		want       []string
	}{
		{"vllm", vllm, []string{"vllm " + vllm + ": figures as that tool saved them, over 100 requests", "ttft", "120.50", "250.00", "--save-result --save-detailed"}},
		{"sglang", sglang, []string{"figures as that tool saved them, over 10 requests", "80.00", "--output-details"}},
		{"aiperf summary", copyFixture(t, dir, "aiperf/basic/profile_export_aiperf.json", "profile_export_aiperf.json"),
			[]string{"time_to_first_token", "123.88", "this is AIPerf's summary; pass profile_export.jsonl"}},
		{"genai-perf summary", copyFixture(t, dir, "genaiperf/basic/profile_export_genai_perf.json", "profile_export_genai_perf.json"),
			[]string{"this is GenAI-Perf's summary; pass profile_export.json"}},
	}
	for _, tc := range cases {
		code, stdout, stderr := runCLI(t, "", "analyze", tc.file)
		if code != exitOK {
			t.Errorf("%s: exit %d, stderr %s", tc.name, code, stderr)
		}
		for _, w := range append(tc.want, "verdict: NONE", "the speech analysis needs every request's chunk times") {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: output does not say %q:\n%s", tc.name, w, stdout)
			}
		}
	}
	code, stdout, _ := runCLI(t, "", "analyze", "--report", "json", vllm)
	if code != exitOK || !strings.Contains(stdout, `"saved_only": true`) || !strings.Contains(stdout, `"saved_ms"`) || !strings.Contains(stdout, `"result": "none"`) {
		t.Errorf("json: exit %d\n%s", code, stdout)
	}
	bad := filepath.Join(dir, "bad.json")
	os.WriteFile(bad, []byte(`{"mean_ttft_ms": 1, "p99_ttft_ms": "x"}`), 0o644)
	if code, _, stderr := runCLI(t, "", "analyze", bad); code != exitUsage || !strings.Contains(stderr, `"p99_ttft_ms"`) {
		t.Errorf("unreadable summary: exit %d, stderr %s", code, stderr)
	}
}

// TestAnalyzeAIPerfSibling: AIPerf's export is compared with the summary
// AIPerf wrote beside it (profile_export_aiperf.json), found there or
// given as the next file, as vLLM's saved summary is.
func TestAnalyzeAIPerfSibling(t *testing.T) {
	t.Parallel()
	beside := t.TempDir()
	export := copyFixture(t, beside, "aiperf/basic/profile_export.jsonl", "profile_export.jsonl")
	copyFixture(t, beside, "aiperf/basic/profile_export_aiperf.json", "profile_export_aiperf.json")
	other := t.TempDir()
	export2 := copyFixture(t, other, "aiperf/basic/profile_export.jsonl", "run.jsonl")
	summary := copyFixture(t, t.TempDir(), "aiperf/basic/profile_export_aiperf.json", "summary.json")
	for _, args := range [][]string{{export}, {export2, summary}} {
		_, stdout, stderr := runCLI(t, "", append([]string{"analyze"}, args...)...)
		if !strings.Contains(stdout, "saved summary: all 56 values match") || !strings.Contains(stdout, "compared with AIPerf's summary") ||
			strings.Contains(stdout, "figures as that tool saved them") {
			t.Errorf("%v: stderr %s, stdout:\n%s", args, stderr, stdout)
		}
	}
	// a summary that disagrees is listed
	raw, _ := os.ReadFile(summary)
	os.WriteFile(summary, []byte(strings.Replace(string(raw), `"avg": 123.875`, `"avg": 130.0`, 1)), 0o644)
	_, stdout, _ := runCLI(t, "", "analyze", export2, summary)
	if !strings.Contains(stdout, "time_to_first_token.avg: saved 130.0000, computed 123.8750") {
		t.Errorf("mismatch not listed:\n%s", stdout)
	}
}

// TestAnalyzeGoodput: --goodput takes vLLM's pairs (space-separated as
// vLLM writes them, or by commas), counts request goodput as vLLM does on
// the file's own times, compares it with the saved request_goodput, and
// joins the verdict (--goodput-min).
func TestAnalyzeGoodput(t *testing.T) {
	t.Parallel()
	path := filepath.Join(toolFixtures, "vllm/tight/result.json")
	slo := []string{"--goodput", "ttft:100.00000005", "tpot:20.0000000005", "e2el:300"}
	code, stdout, stderr := runCLI(t, "", append(append([]string{"analyze"}, slo...), path)...)
	line := "request goodput, counted as vLLM does: 6 of 40 requests (15.0%) met every SLO (ttft:100.00000005 tpot:20.0000000005 e2el:300), 2.40 requests/s over 2.5 s"
	if code != exitFail || strings.Count(stdout, line) != 2 || !strings.Contains(stdout, "want at least 100.0%") || !strings.Contains(stdout, "all 18 values match") {
		t.Errorf("exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
	code, stdout, _ = runCLI(t, "", "analyze", "--goodput", "ttft:100.00000005,tpot:20.0000000005,e2el:300", "--goodput-min", "0.1", "--report", "json", path)
	// the verdict fails for the failed request only (no reply), not for
	// goodput
	if code != exitFail || !strings.Contains(stdout, `"request_goodput": {`) || !strings.Contains(stdout, `"good": 6`) ||
		strings.Contains(stdout, "want at least") || !strings.Contains(stdout, "1 of 40 turns got no reply: the request failed") {
		t.Errorf("exit %d:\n%s", code, stdout)
	}
	for _, bad := range [][]string{{"--goodput", "itl:5"}, {"--goodput", "ttft"}, {"--goodput", "ttft:5", "--goodput-min", "2"}} {
		if code, _, stderr := runCLI(t, "", append(append([]string{"analyze"}, bad...), path)...); code != exitUsage || !strings.Contains(stderr, "--goodput") {
			t.Errorf("%v: exit %d, stderr %s", bad, code, stderr)
		}
	}
}

// TestAnalyzeLLMPerfGuideLLM: llmperf's individual responses (compared
// with the _summary.json beside them) and GuideLLM's benchmarks.json read
// as they are, with their own figures, and the report says the ITL tail
// is not measured; llmperf's summary alone prints its saved figures.
func TestAnalyzeLLMPerfGuideLLM(t *testing.T) {
	t.Parallel()
	cases := []struct {
		file string
		code int
		want []string
	}{
		{"llmperf/basic/example-voice-8b_550_80_individual_responses.json", exitFail,
			[]string{"figures as that tool computes them, over 8 requests", "saved summary: all 31 values match", "no ITL tail can be known", "compared with llmperf's summary"}},
		{"guidellm/basic/benchmarks.json", exitFail,
			[]string{"figures as that tool computes them, over 7 requests", "saved summary: all 65 values match", "the ITL tail is not measured"}},
		{"llmperf/basic/example-voice-8b_550_80_summary.json", exitOK,
			[]string{"figures as that tool saved them, over 8 requests", "this is llmperf's summary; pass example-voice-8b_550_80_individual_responses.json", "verdict: NONE"}},
	}
	for _, tc := range cases {
		code, stdout, stderr := runCLI(t, "", "analyze", filepath.Join(toolFixtures, tc.file))
		if code != tc.code {
			t.Errorf("%s: exit %d, want %d; stderr %s", tc.file, code, tc.code, stderr)
		}
		for _, w := range tc.want {
			if !strings.Contains(stdout, w) {
				t.Errorf("%s: output does not say %q:\n%s", tc.file, w, stdout)
			}
		}
	}
}

// TestAnalyzeOutputThatIsNotSpeech: a vLLM file whose generated text is
// random-dataset gibberish (256 tokens of 1,024 characters and no space)
// is spoken per token, with a note, not as one word of a minute and more
// after the stream ends; a turn whose text is only spaces and bars counts
// among the turns without speech; a turn no TPOT can interrupt says "at
// least 10s", not the search's cap in ms; and the header's per-token time
// shows only where some token had no text.
func TestAnalyzeOutputThatIsNotSpeech(t *testing.T) {
	t.Parallel()
	itls := "[" + strings.TrimSuffix(strings.Repeat("0.02, ", 255), ", ") + "]"
	gibberish := strings.Repeat("xQz9", 256)
	in := `{"tokenizer_id": "m", "ttfts": [0.1, 0.1, 0.1], "itls": [` + itls + `, [0.02, 0.02], []], "output_lens": [256, 3, 1],
		"generated_texts": ["` + gibberish + `", "  |  |  |", "Hi."], "errors": ["", "", ""]}`
	path := filepath.Join(t.TempDir(), "random.json")
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	_, stdout, stderr := runCLI(t, "", "analyze", "--per-turn", path)
	for _, w := range []string{
		"note: the text of 1 turn is not speech (fewer than one word per 20 tokens",
		"(245 ms per text-less token)",
		"3 turns (3 ok, 0 failed, 1 without speech)",
	} {
		if !strings.Contains(stdout, w) {
			t.Errorf("output does not say %q; stderr %s\n%s", w, stderr, stdout)
		}
	}
	if strings.Contains(stdout, "10000.0 ms") {
		t.Errorf("the inversion's cap is printed as a figure:\n%s", stdout)
	}
	// spoken per token: about 256 x 245 ms, not one 1,024-letter word
	_, stdout, _ = runCLI(t, "", "analyze", "--report", "json", "--per-turn", path)
	var r struct {
		TurnsNotSpeech int `json:"turns_not_speech"`
		PerTurn        []struct {
			SpeechMs float64 `json:"speech_ms"`
		} `json:"per_turn"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	if r.TurnsNotSpeech != 1 || len(r.PerTurn) != 3 || r.PerTurn[0].SpeechMs < 60000 || r.PerTurn[0].SpeechMs > 66000 {
		t.Errorf("turns not speech %d, per turn %+v", r.TurnsNotSpeech, r.PerTurn)
	}

	hi := filepath.Join(t.TempDir(), "hi.jsonl")
	os.WriteFile(hi, []byte(`{"type":"chunk","turn":"a","t_ns":100000000,"text":"Hi."}`+"\n"), 0o644)
	_, stdout, _ = runCLI(t, "", "analyze", hi)
	if !strings.Contains(stdout, "at least 10s, the most the search tries") || strings.Contains(stdout, "per text-less token") {
		t.Errorf("capped inversion or header:\n%s", stdout)
	}
}
