package main

import (
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// TestFillerFlag: --filler reaches the report of analyze and sim, and a bad
// policy is a usage error naming the flag.
func TestFillerFlag(t *testing.T) {
	t.Parallel()
	const trace = "../../pipeline/trace/testdata/native/tool-call.jsonl"
	tests := []struct {
		args []string
		want string
	}{
		// the words before the call are spoken while it runs (the reply
		// ends there); the TPOT leaves the call out, so the default SLO
		// passes
		{[]string{"analyze", trace}, "tool-call silences (not underruns): 1 (2612 ms)\n"},
		{[]string{"analyze", trace}, "TPOT      1    50.0"},
		{[]string{"analyze", trace}, "smallest pre-roll with no underrun: 0 ms\n"},
		{[]string{"analyze", "--filler", "keepalive:800ms", trace}, "filler keepalive:800ms covers 1812 ms, 800 ms stay silent"},
		{[]string{"analyze", "--filler", `after:800ms:"One moment."`, trace}, `filler after:800ms:"One moment." covers 984 ms, 1628 ms stay silent` + "\n"},
		// a phrase asked for 2 s into the 2612 ms silence plays 100 ms
		// later, 512 ms of it in the silence; the rest holds the reply back
		{[]string{"analyze", "--filler", `after:2s:"One moment, please."`, trace}, "covers 512 ms, 2100 ms stay silent\n" +
			"the phrase outlasts 1 silence and holds back the reply after it until it ends: 1007 ms in all\n"},
		{[]string{"analyze", "--filler", `after:2s:"One moment, please."`, "--report", "json", trace}, `"late_ms": 1006.7`},
	}
	for _, tt := range tests {
		t.Run(strings.Join(tt.args, " "), func(t *testing.T) {
			t.Parallel()
			code, out, errOut := runCLI(t, "", tt.args...)
			if code != 0 || !strings.Contains(out, tt.want) {
				t.Errorf("exit %d, stderr %q, output lacks %q:\n%s", code, errOut, tt.want, out)
			}
		})
	}
	checkUsage(t, []usageCase{
		{[]string{"analyze", "--filler", "music:1s", trace}, "--filler"},
		{[]string{"sim", "tool-call", "--filler", "after:1s", "--monte-carlo", "10"}, "--filler"},
	})
}

// TestSpeakAndHeardToolCall: speak replays the tool-call trace through
// real espeak-ng audio: the words before the call are spoken while it
// runs, the silence is heard as predicted and kept apart with --filler's
// cover, the live guard tells it as the tool's; heard finds the same silence in the recording, cause tool_call.
func TestSpeakAndHeardToolCall(t *testing.T) {
	t.Parallel()
	streamtest.Espeak(t, 175)
	const trace = "../../pipeline/trace/testdata/native/tool-call.jsonl"
	dir := t.TempDir()
	wav, rec := filepath.Join(dir, "heard.wav"), filepath.Join(dir, "run.jsonl")
	code, out, errOut := runCLI(t, "", "speak", "--check", "--filler", "keepalive:800ms", "--wav", wav, "--record", rec, trace)
	if code != exitOK {
		t.Fatalf("speak: exit %d: %s\n%s", code, errOut, out)
	}
	// the live guard's lines ("model:") call the silence the tool's too
	for _, want := range []string{"model: silence started: the player ran dry after token 3 arrived, while a tool call runs",
		"model: tool-call silence: 2612.1 ms before token 4 (no underrun)",
		"underruns: 0 (0 ms)", "tool-call silences (not underruns): 1 (", "filler keepalive:800ms covers ", ", 800 ms stay silent", "1 of 1 gaps heard as predicted"} {
		if !strings.Contains(out, want) {
			t.Errorf("speak output lacks %q:\n%s", want, out)
		}
	}
	if strings.Contains(out, "model: underrun:") {
		t.Errorf("the live guard calls the tool's silence an underrun:\n%s", out)
	}
	code, out, errOut = runCLI(t, "", "heard", "--filler", "keepalive:800ms", wav, rec)
	if code != exitOK {
		t.Fatalf("heard: exit %d: %s\n%s", code, errOut, out)
	}
	for _, want := range []string{"interruption, tool_call", "underruns: 0 (0 ms)", "tool-call silences (not underruns): 1 (", ", 800 ms stay silent"} {
		if !strings.Contains(out, want) {
			t.Errorf("heard output lacks %q:\n%s", want, out)
		}
	}
}
