package main

import (
	"bytes"
	"context"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// runCLI runs the command line and returns its exit code and output.
func runCLI(t *testing.T, stdin string, args ...string) (code int, stdout, stderr string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code = run(context.Background(), args, strings.NewReader(stdin), &out, &errOut)
	return code, out.String(), errOut.String()
}

func golden(t *testing.T, name, got string) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, []byte(got), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if got != string(want) {
		t.Errorf("output differs from %s (go test -update rewrites it):\n got:\n%s\nwant:\n%s", path, got, want)
	}
}

func TestDefaultRun(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "")
	if code != exitFail {
		t.Fatalf("exit %d, want %d (the default turn interrupts); stderr %s", code, exitFail, errOut)
	}
	golden(t, "default.txt", out)
	code, out, _ = runCLI(t, "", "--report", "json")
	if code != exitFail {
		t.Fatalf("json: exit %d", code)
	}
	golden(t, "default.json", out)
}

func TestAnalyzeJSONKeys(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "", "analyze", "--report", "json", "testdata/analyze/handcheck.jsonl")
	if code != exitFail {
		t.Fatalf("exit %d; stderr %s", code, errOut)
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatal(err)
	}
	for _, key := range []string{"turns", "ttft_ms", "tpot_ms", "itl_ms", "e2el_ms", "ttfa_ms", "underruns", "glitches", "interruptions", "speech_goodput", "min_preroll_ms", "verdict"} {
		if _, ok := report[key]; !ok {
			t.Errorf("JSON report has no %q", key)
		}
	}
	for _, key := range []string{"mean", "median", "std", "min", "max", "p50", "p90", "p95", "p99", "p99.9"} {
		if _, ok := report["itl_ms"].(map[string]any)[key]; !ok {
			t.Errorf("itl_ms has no %q", key)
		}
	}
	for _, key := range []string{"count", "total_ms"} {
		if _, ok := report["interruptions"].(map[string]any)[key]; !ok {
			t.Errorf("interruptions has no %q", key)
		}
	}
	v := report["verdict"].(map[string]any)
	if v["result"] != "fail" || len(v["reasons"].([]any)) == 0 {
		t.Errorf("verdict %v", v)
	}
}

// TestTokenAudioByHand checks what a user checks by hand: with
// --token-audio 250ms, token chunking, no TTS latency and RTF 0, a player
// plays each token for 250 ms the moment it arrives. Turn t1's tokens
// arrive at 300, 340, 900, 1000, 1900 ms: it plays 300-550, 550-800, gap
// 800-900, 900-1150, 1150-1400, gap 1400-1900. Turn t2 arrives at 200,
// 240, 280: no gap.
func TestTokenAudioByHand(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	events := filepath.Join(dir, "events.jsonl")
	code, out, errOut := runCLI(t, "", "analyze", "--token-audio", "250ms", "--chunking", "token", "--tts-latency", "0", "--rtf", "0",
		"--report", "json", "--events", events, "testdata/analyze/handcheck.jsonl")
	if code != exitFail {
		t.Fatalf("exit %d; stderr %s", code, errOut)
	}
	var report struct {
		Underruns, Glitches, Interruptions struct {
			Count   int     `json:"count"`
			TotalMs float64 `json:"total_ms"`
		}
		MinPrerollMs float64 `json:"min_preroll_ms"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatal(err)
	}
	if report.Underruns.Count != 2 || report.Underruns.TotalMs != 600 || report.Glitches.Count != 1 || report.Interruptions.Count != 1 || report.Interruptions.TotalMs != 500 {
		t.Errorf("report %+v, want 2 underruns (100 ms glitch, 500 ms interruption)", report)
	}
	data, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	var underruns []map[string]any
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev map[string]any
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		if ev["event"] == "underrun" {
			underruns = append(underruns, ev)
		}
	}
	want := []struct{ start, duration, itl float64 }{{800, 100, 560}, {1400, 500, 900}}
	if len(underruns) != len(want) {
		t.Fatalf("%d underrun events, want %d", len(underruns), len(want))
	}
	for i, w := range want {
		u := underruns[i]
		if u["start_ms"] != w.start || u["duration_ms"] != w.duration || u["itl_ms"] != w.itl || u["turn"] != "t1" {
			t.Errorf("event %d = %v, want start %v duration %v itl %v", i, u, w.start, w.duration, w.itl)
		}
		for _, key := range []string{"class", "cause", "token", "tolerance_ms"} {
			if _, ok := u[key]; !ok {
				t.Errorf("event %d has no %q", i, key)
			}
		}
	}
}

func TestAnalyzeStdin(t *testing.T) {
	t.Parallel()
	in, err := os.ReadFile("testdata/analyze/handcheck.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	code, out, _ := runCLI(t, string(in), "analyze", "--tpot-slo", "1s", "--interruption", "10s", "--max-tpot=false")
	if code != exitOK || !strings.Contains(out, "verdict: PASS") {
		t.Errorf("exit %d, output:\n%s", code, out)
	}
}

func TestBadInputExitsTwo(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		args []string
		want string
	}{
		{"non-monotonic", []string{"analyze", "testdata/analyze/bad_order.jsonl"}, "bad_order.jsonl:3: chunk of turn \"t1\" has t_ns 200000000, before the previous"},
		{"not JSON", []string{"analyze", "testdata/analyze/bad_json.jsonl"}, "bad_json.jsonl:2: not a JSON object"},
		{"missing file", []string{"analyze", "testdata/analyze/nope.jsonl"}, "no such file"},
		{"bad flag value", []string{"analyze", "--chunking", "paragraph", "testdata/analyze/handcheck.jsonl"}, "--chunking: unknown chunking policy \"paragraph\""},
		{"bad report format", []string{"--report", "xml"}, "--report: want text or json"},
		{"unknown flag", []string{"analyze", "--frobnicate"}, "unknown flag --frobnicate"},
		{"negative rtf", []string{"--rtf", "-1"}, "real-time factor"},
		{"bad tts mode", []string{"--tts-mode", "batch"}, "--tts-mode: invalid synthesizer: unknown timing mode \"batch\""},
		{"negative continuation", []string{"--tts-continuation", "-1ms"}, "--tts-continuation must not be negative"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			code, _, errOut := runCLI(t, "", tt.args...)
			if code != exitUsage || !strings.Contains(errOut, tt.want) {
				t.Errorf("exit %d, stderr %q; want 2 and %q", code, errOut, tt.want)
			}
		})
	}
	code, _, errOut := runCLI(t, "", "analyze")
	if code != exitUsage || !strings.Contains(errOut, "stdin: empty input") {
		t.Errorf("empty stdin: exit %d, %q", code, errOut)
	}
}

// TestDefaultRunExplainsExit1: the first command a new user runs fails by
// design, and its output says so, rather than leaving "exit status 1"
// unexplained; JSON output carries no such note.
func TestDefaultRunExplainsExit1(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, "")
	if code != exitFail {
		t.Fatalf("exit %d, want %d", code, exitFail)
	}
	tail := out[max(0, len(out)-400):]
	for _, want := range []string{"exits with status 1", "by design", "1 failing verdict"} {
		if !strings.Contains(tail, want) {
			t.Errorf("the default run's output does not end by explaining its exit status (%q missing):\n%s", want, tail)
		}
	}
	if _, out, _ = runCLI(t, "", "--report", "json"); strings.Contains(out, "by design") {
		t.Error("the JSON report carries the text note")
	}
	if _, out, _ = runCLI(t, "", "analyze", "testdata/analyze/handcheck.jsonl"); strings.Contains(out, "by design") {
		t.Error("analyze of a user's file says its failure is by design")
	}
}

// usageCase is a command line that must be refused as a usage error whose
// message mentions has.
type usageCase struct {
	args []string
	has  string
}

// checkUsage runs each case and checks it exits with exitUsage, naming has
// on standard error.
func checkUsage(t *testing.T, cases []usageCase) {
	t.Helper()
	for _, tc := range cases {
		code, _, errOut := runCLI(t, "", tc.args...)
		if code != exitUsage || !strings.Contains(errOut, tc.has) {
			t.Errorf("%v: exit %d, stderr %q; want %d mentioning %q", tc.args, code, errOut, exitUsage, tc.has)
		}
	}
}

// TestVerdictListens: three turns at TPOT 60 ms whose speech never
// starves pass (exit 0), the answer saying that the buffer absorbed the
// TPOT; a TPOT or TTFT SLO fails them only when given.
func TestVerdictListens(t *testing.T) {
	t.Parallel()
	path := filepath.Join("testdata", "analyze", "tpot60.jsonl")
	for _, tc := range []struct {
		args  []string
		code  int
		lines []string
	}{
		{nil, exitOK, []string{"PASS: listeners hear no gap in the 3 turns\n",
			"  - TPOT 60.0 ms > 50 ms in 3 of 3 turns, yet no listener hears a gap in them: the buffer absorbed it\n",
			"largest constant TPOT with no interruption (every turn): ", "(the usual target 50 ms)\n", "\nverdict: PASS\n"}},
		{[]string{"--tpot-slo", "50ms"}, exitFail, []string{"FAIL: listeners hear no gap in the 3 turns\n",
			"(SLO 50ms)\n", "\nverdict: FAIL\n  - 3 of 3 turns have TPOT above the 50ms SLO (worst 60.0 ms)\n"}},
		{[]string{"--ttft-slo", "250ms"}, exitFail, []string{"FAIL: listeners hear no gap in the 3 turns\n", "\nverdict: FAIL\n  - 3 of 3 turns have TTFT above the 250ms SLO (worst 300.0 ms)\n"}},
		{[]string{"--tpot-slo", "-1ms"}, exitUsage, nil},
	} {
		code, out, errOut := runCLI(t, "", append(append([]string{"analyze"}, tc.args...), path)...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d; stderr %s", tc.args, code, tc.code, errOut)
		}
		for _, l := range tc.lines {
			if !strings.Contains(out, l) {
				t.Errorf("%v: the report lacks %q:\n%s", tc.args, l, out)
			}
		}
		if tc.lines != nil && !strings.HasPrefix(out, tc.lines[0]) {
			t.Errorf("%v: the report does not open with its answer:\n%s", tc.args, out)
		}
	}
}

// TestOneStory: the default turn's gap is 242 ms by the voice model, and
// another length when espeak-ng's measured durations replace the model
// (--wav): the report says whose timing it is and why the two differ, by
// the speech before the gap, and the two lengths differ by just that.
func TestOneStory(t *testing.T) {
	t.Parallel()
	code, out, _ := runCLI(t, "")
	if code != exitFail || !strings.Contains(out, "\ntiming: the voice model's (184 wpm articulation, 177 wpm with its pauses on this text), no real synthesizer\n") {
		t.Fatalf("exit %d; the model's report does not say its timing is the model's:\n%s", code, out)
	}
	if _, err := exec.LookPath("espeak-ng"); err != nil {
		t.Skip("espeak-ng is not installed (apt-get install espeak-ng): skipping its measured timing")
	}
	code, out, errOut := runCLI(t, "", "--wav", filepath.Join(t.TempDir(), "d.wav"))
	if code != exitFail {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	m := regexp.MustCompile(`\ntiming: espeak-ng measured \(each sentence spoken whole, its length shared out to the chunks that hold it\): ` +
		`its speech durations replace the voice model's; latency and RTF are the model's; the voice model alone puts the (\d+) ms gap at 242 ms: ` +
		`espeak-ng speaks the text before it in (\d+) ms, the voice model in 445 ms\n`).FindStringSubmatch(out)
	if m == nil {
		t.Fatalf("the report does not say whose timing it is and why:\n%s", out)
	}
	gap, before := atoi(t, m[1]), atoi(t, m[2])
	if d := (gap - 242) - (445 - before); d < -1 || d > 1 {
		t.Errorf("the gap grew by %d ms, the speech before it shrank by %d ms", gap-242, 445-before)
	}
	if !strings.HasPrefix(out, "underrun: the built-in default turn") || !strings.Contains(out, fmt.Sprintf("FAIL: listeners hear 1 gap of %d ms in 1 of 1 turns", gap)) {
		t.Errorf("the answer does not give espeak-ng's gap:\n%s", out)
	}
}

func atoi(t *testing.T, s string) int {
	t.Helper()
	n, err := strconv.Atoi(s)
	if err != nil {
		t.Fatal(err)
	}
	return n
}
