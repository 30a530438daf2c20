package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/sim"
)

// simRun runs the command line and returns exit code, stdout, stderr.
func simRun(t *testing.T, args ...string) (int, string, string) {
	t.Helper()
	var out, errOut bytes.Buffer
	code := run(context.Background(), args, strings.NewReader(""), &out, &errOut)
	return code, out.String(), errOut.String()
}

func TestSimBuiltin(t *testing.T) {
	t.Parallel()
	code, out, stderr := simRun(t, "sim", "tpot-50ms", "--monte-carlo", "50")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	for _, want := range []string{"scenario tpot-50ms", "underrun report: 7 turns", "Monte Carlo: 50 turns", "Wilson", "expectations", "\nverdict: PASS\n"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestSimOneVerdict: sim prints one verdict, first in the listener's
// terms and last with its reasons, and exits by it: the scenario's
// expectations decide it, so a run whose listener hears an interruption
// that the expectations allow passes (exit 0), saying so, and one whose
// listener hears nothing fails (exit 1) when an expectation fails; the
// JSON run, its answer and its report carry the same verdict.
func TestSimOneVerdict(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	clean := filepath.Join(dir, "clean.yaml")
	os.WriteFile(clean, []byte(`name: clean
doc: a steady stream that no listener hears, expected to interrupt
seed: 1
turns: 3
monte_carlo: 0
corpus_file: builtin:texts/assistant.txt
generator:
  kind: constant
  ttft: 300ms
  tpot: 30ms
tts:
  chunking: word
  ttfa: 100ms
  rtf: 0.1
expect:
  interruptions: ">= 1"
`), 0o644)
	cases := []struct {
		args        []string
		code        int
		first, last string
	}{
		// an interruption heard, within the expectations
		{[]string{"sim", "transport-pipecat", "--monte-carlo", "20"}, exitOK,
			"PASS by the expectations: listeners hear 1 gap of 651 ms in 1 of 50 turns",
			"verdict: PASS\n  - all 2 expectations held\n  - heard, and within the expectations: 1 interruption (651 ms of silence) in 1 turn; worst turn t45\n"},
		// nothing heard, an expectation failed
		{[]string{"sim", clean}, exitFail,
			"FAIL by the expectations: listeners hear no gap in the 3 turns",
			"verdict: FAIL\n  - expectation failed: line 16: interruptions >= 1, got 0\n"},
	}
	for _, tc := range cases {
		code, out, stderr := simRun(t, tc.args...)
		if code != tc.code {
			t.Errorf("%v: exit %d, want %d; stderr %s", tc.args, code, tc.code, stderr)
		}
		if !strings.HasPrefix(out, tc.first) || !strings.HasSuffix(out, tc.last) {
			t.Errorf("%v: want the answer %q first and the verdict %q last:\n%s", tc.args, tc.first, tc.last, out)
		}
		if n := strings.Count(out, "verdict:"); n != 1 || strings.Contains(out, "scenario verdict") {
			t.Errorf("%v: %d verdict lines, want one:\n%s", tc.args, n, out)
		}
		code, out, _ = simRun(t, append(tc.args, "--report", "json")...)
		var run struct {
			Verdict string `json:"verdict"`
			Answer  struct {
				Verdict   string `json:"verdict"`
				DecidedBy string `json:"decided_by"`
			} `json:"answer"`
			Report struct {
				Verdict struct{ Result string } `json:"verdict"`
			} `json:"report"`
		}
		if err := json.Unmarshal([]byte(out), &run); err != nil {
			t.Fatalf("%v: %v", tc.args, err)
		}
		want := map[int]string{exitOK: "pass", exitFail: "fail"}[tc.code]
		if code != tc.code || run.Verdict != want || run.Answer.Verdict != want || run.Report.Verdict.Result != want || run.Answer.DecidedBy != "expectations" {
			t.Errorf("%v json: exit %d, verdicts %q, answer %q, report %q; want %q", tc.args, code, run.Verdict, run.Answer.Verdict, run.Report.Verdict.Result, want)
		}
	}
}

// TestSimRooflineSaysItIsAModel: a roofline scenario's report says the
// decode timing is a model and gives its measured error band, in text and
// JSON; other generators say nothing of it.
func TestSimRooflineSaysItIsAModel(t *testing.T) {
	t.Parallel()
	a, err := sim.RooflineAccuracy()
	if err != nil {
		t.Fatal(err)
	}
	code, out, stderr := simRun(t, "sim", "gpu-h100", "--monte-carlo", "20")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	band := fmt.Sprintf("against %d published measurements it predicted %.2f-%.2fx the measured TPOT", a.Points, a.P10, a.P90)
	if !strings.Contains(out, "the decode timing is a model, not a measurement") || !strings.Contains(out, band) {
		t.Errorf("output lacks the model note %q:\n%s", band, out)
	}
	code, out, stderr = simRun(t, "sim", "gpu-h100", "--monte-carlo", "20", "--report", "json")
	if code != exitOK {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	var got struct {
		Scenario struct {
			Accuracy *sim.Accuracy `json:"roofline_accuracy"`
		} `json:"scenario"`
	}
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatal(err)
	}
	if got.Scenario.Accuracy == nil || *got.Scenario.Accuracy != a {
		t.Errorf("roofline_accuracy %+v, want %+v", got.Scenario.Accuracy, a)
	}
	_, out, _ = simRun(t, "sim", "tpot-50ms", "--monte-carlo", "20")
	if strings.Contains(out, "not a measurement") {
		t.Errorf("a constant generator is called a model:\n%s", out)
	}
}

func TestSimSameSeedSameBytes(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	for _, format := range []string{"text", "json"} {
		var outs, events []string
		for i := range 2 {
			ev := filepath.Join(dir, format+string(rune('a'+i))+".jsonl")
			code, out, stderr := simRun(t, "sim", "prefill-unchunked", "--turns", "8", "--monte-carlo", "200", "-o", format, "--per-turn", "--events", ev)
			if code != exitOK {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			data, err := os.ReadFile(ev)
			if err != nil {
				t.Fatal(err)
			}
			outs, events = append(outs, out), append(events, string(data))
		}
		if outs[0] != outs[1] || events[0] != events[1] {
			t.Errorf("%s: the same seed gave different bytes", format)
		}
		if len(events[0]) == 0 {
			t.Errorf("no events written")
		}
	}
	_, a, _ := simRun(t, "sim", "policy-word", "--turns", "5", "--monte-carlo", "100", "--seed", "1")
	_, b, _ := simRun(t, "sim", "policy-word", "--turns", "5", "--monte-carlo", "100", "--seed", "2")
	if a == b {
		t.Errorf("different seeds, same output")
	}
}

func TestSimExpectationFails(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "stall.yaml")
	src := "generator:\n  kind: constant\n  tpot: 40ms\n  stalls: [{token: 3, delay: 2s}]\nturns: 2\nmonte_carlo: 10\nexpect:\n  interruptions: 0\n  tpot_p50_ms: \"< 100\"\n"
	if err := os.WriteFile(file, []byte(src), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, _ := simRun(t, "sim", file)
	if code != exitFail {
		t.Errorf("exit %d, want %d", code, exitFail)
	}
	if !strings.Contains(out, "FAIL") || !strings.Contains(out, "interruptions") {
		t.Errorf("output does not name the failed expectation:\n%s", out)
	}
	code, out, _ = simRun(t, "sim", file, "--report", "json")
	var v struct {
		Verdict      string `json:"verdict"`
		Expectations []struct {
			Metric string   `json:"metric"`
			Pass   bool     `json:"pass"`
			Got    *float64 `json:"got"`
			Line   int      `json:"line"`
		} `json:"expectations"`
		Report map[string]any `json:"report"`
	}
	if err := json.Unmarshal([]byte(out), &v); err != nil {
		t.Fatalf("bad JSON: %v\n%s", err, out)
	}
	if code != exitFail || v.Verdict != "fail" || len(v.Expectations) != 2 || v.Expectations[0].Pass || !v.Expectations[1].Pass || v.Expectations[0].Line != 8 {
		t.Errorf("exit %d, %+v", code, v)
	}
	if v.Report["turns"] != 2.0 {
		t.Errorf("report turns %v", v.Report["turns"])
	}
}

func TestSimBadInput(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "bad.yaml")
	if err := os.WriteFile(file, []byte("generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  chunking: paragraph\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, args := range [][]string{
		{"sim", file},
		{"sim", "no-such-scenario"},
		{"sim", "tpot-50ms", "--sweep", "batch=1:8:1"},
		{"sim", "tpot-50ms", "--sweep", "tpot=fast"},
		{"sim", "tpot-50ms", "--find", "loudness"},
		{"sim", "tpot-50ms", "--goodput-target", "2"},
		{"sim"},
	} {
		code, _, stderr := simRun(t, args...)
		if code != exitUsage || stderr == "" {
			t.Errorf("%v: exit %d, stderr %q", args, code, stderr)
		}
	}
	_, _, stderr := simRun(t, "sim", file)
	if !strings.Contains(stderr, "line 5") || !strings.Contains(stderr, "tts.chunking") {
		t.Errorf("error does not name line and field: %s", stderr)
	}
}

// TestSimFlagsOverride: a speech-model flag overrides the scenario only
// when given.
func TestSimFlagsOverride(t *testing.T) {
	t.Parallel()
	latency := func(args ...string) float64 {
		code, out, stderr := simRun(t, append([]string{"sim", "tpot-50ms", "--monte-carlo", "10", "--report", "json"}, args...)...)
		if code != exitOK && code != exitFail {
			t.Fatalf("exit %d: %s", code, stderr)
		}
		var v struct {
			Report struct {
				Config struct {
					TTSLatencyMs float64 `json:"tts_latency_ms"`
					Chunking     string  `json:"chunking"`
				} `json:"config"`
			} `json:"report"`
		}
		if err := json.Unmarshal([]byte(out), &v); err != nil {
			t.Fatal(err)
		}
		return v.Report.Config.TTSLatencyMs
	}
	if got := latency(); got != 100 {
		t.Errorf("scenario TTS latency %v ms, want its 100", got)
	}
	if got := latency("--tts-latency", "700ms"); got != 700 {
		t.Errorf("--tts-latency 700ms gave %v ms", got)
	}
}

func TestSimSweepAndFind(t *testing.T) {
	t.Parallel()
	code, out, stderr := simRun(t, "sim", "tpot-50ms", "--monte-carlo", "7", "--sweep", "tpot=100ms:250ms:50ms", "--find", "preroll")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"sweep tpot=100ms:250ms:50ms: 4 values", "150ms", "TPOT up to 202.1", "keeps 99% of turns free of interruptions", "pre-roll"} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
}

// TestSimFindWithStack: "what TPOT does my stack need?" answers for the
// stack given, says so, and in the listener's terms.
func TestSimFindWithStack(t *testing.T) {
	t.Parallel()
	answer := func(args ...string) (speech, answer string) {
		code, out, stderr := simRun(t, append([]string{"sim", "tpot-50ms", "--monte-carlo", "50", "--find", "tpot"}, args...)...)
		if code != exitOK {
			t.Fatalf("%v: exit %d: %s", args, code, stderr)
		}
		for _, line := range strings.Split(out, "\n") {
			if strings.HasPrefix(line, "speech: ") {
				speech = line
			}
			if strings.HasPrefix(line, "TPOT up to ") {
				answer = line
			}
		}
		if speech == "" || !strings.Contains(answer, "keeps 99% of turns free of interruptions") {
			t.Fatalf("%v: no speech line or plain answer:\n%s", args, out)
		}
		return speech, answer
	}
	ownSpeech, own := answer()
	speech, withStack := answer("--stack", "pipecat-cartesia")
	if !strings.Contains(speech, "stack pipecat-cartesia: pipecat chunking") || strings.Contains(ownSpeech, "stack") {
		t.Errorf("speech lines %q and %q do not say which stack answers", ownSpeech, speech)
	}
	if own == withStack {
		t.Errorf("--stack changed nothing: %q", own)
	}
	// the answer README.md and simulate.md quote, at the scenario's size
	code, out, _ := simRun(t, "sim", "tpot-50ms", "--stack", "pipecat-cartesia", "--find", "tpot")
	const quoted = "TPOT up\nto 56.12ms keeps 99% of turns free of interruptions"
	readme, err := os.ReadFile("../../README.md")
	if err != nil {
		t.Fatal(err)
	}
	if code != exitOK || !strings.Contains(out, strings.ReplaceAll(quoted, "\n", " ")) || !strings.Contains(string(readme), quoted) {
		t.Errorf("README.md quotes %q; sim answers (exit %d):\n%s", quoted, code, out)
	}
	// the stack's own figures, given as flags, answer the same
	_, byFlags := answer("--chunking", "pipecat", "--tts-latency", "140ms", "--tts-continuation", "50ms")
	if byFlags != withStack {
		t.Errorf("--stack pipecat-cartesia: %q; its figures as flags: %q", withStack, byFlags)
	}
}

func TestScenariosCommand(t *testing.T) {
	t.Parallel()
	code, out, _ := simRun(t, "scenarios")
	if code != exitOK || strings.Count(out, "\n") < 12 || !strings.Contains(out, "prefill-chunked") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = simRun(t, "scenarios", "tpot-50ms")
	if code != exitOK || !strings.Contains(out, "kind: constant") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	code, out, _ = simRun(t, "scenarios", "--metrics")
	if code != exitOK || !strings.Contains(out, "tpot_p50_ms") || !strings.Contains(out, "mc_goodput_low") {
		t.Errorf("exit %d:\n%s", code, out)
	}
	if code, _, _ := simRun(t, "scenarios", "nope"); code != exitUsage {
		t.Errorf("unknown scenario: exit %d", code)
	}
}

// TestSimTTSServer: a scenario with a TTS server says so, the Monte Carlo
// reports the streams, --find sessions answers, and --tts-latency or
// --rtf beside the server is refused.
func TestSimTTSServer(t *testing.T) {
	t.Parallel()
	code, out, stderr := simRun(t, "sim", "tts-server", "--monte-carlo", "200", "--find", "sessions")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	for _, want := range []string{"tts server: riva-fastpitch, 256 sessions", "docs.nvidia.com", "sessions per TTS server up to "} {
		if !strings.Contains(out, want) {
			t.Errorf("output lacks %q:\n%s", want, out)
		}
	}
	code, out, stderr = simRun(t, "sim", "tts-server", "--monte-carlo", "100")
	if code != exitOK || !strings.Contains(out, "tts server streams at once: mean") {
		t.Errorf("exit %d (%s):\n%s", code, stderr, out)
	}
	code, out, _ = simRun(t, "sim", "tts-server", "--monte-carlo", "50", "--sweep", "sessions=16:48:16")
	if code != exitOK || !strings.Contains(out, "TTS streams p50") {
		t.Errorf("sweep: exit %d:\n%s", code, out)
	}
	for _, flag := range []string{"--tts-latency=100ms", "--rtf=0.5"} {
		code, _, stderr := simRun(t, "sim", "tts-server", flag)
		if code != exitUsage || !strings.Contains(stderr, "tts server") {
			t.Errorf("%s: exit %d, stderr %q", flag, code, stderr)
		}
	}
	if code, _, stderr := simRun(t, "sim", "tpot-50ms", "--find", "sessions"); code != exitUsage || !strings.Contains(stderr, "needs a tts server") {
		t.Errorf("sessions without a server: exit %d, stderr %q", code, stderr)
	}
}
