//go:build unix

package main

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
)

// livekitPyDir is the LiveKit Agents (Python) adapter; .ci/run makes its
// virtual environment (.venv) from its lock file.
const livekitPyDir = "../../pipeline/monitor/livekit-agents-py"

// liveKitPython returns the virtual environment's python with
// livekit-agents installed, or skips the test.
func liveKitPython(t *testing.T) string {
	t.Helper()
	py, err := filepath.Abs(filepath.Join(livekitPyDir, ".venv", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		t.Skip("the LiveKit Agents (Python) adapter's virtual environment is missing: .ci/run makes it (pipeline/monitor/livekit-agents-py/.venv from requirements.lock, pipeline/monitor/pyclient on its path)")
	}
	for _, want := range []string{"livekit/agents", "underrun-monitor.pth"} {
		if m, _ := filepath.Glob(filepath.Join(livekitPyDir, ".venv", "lib", "python3*", "site-packages", want)); len(m) == 0 {
			t.Skipf("%s is not in pipeline/monitor/livekit-agents-py/.venv: .ci/run installs livekit-agents from requirements.lock and puts pipeline/monitor/pyclient on the path", want)
		}
	}
	return py
}

// liveKitPySession runs example.py, the real LiveKit Python pipeline (its
// args added), against a mock of turns, reporting to a monitor process
// (its args added), as liveKitSession runs the Node one.
func liveKitPySession(t *testing.T, turns []*pipeline.Turn, n int, args []string, monitorArgs ...string) ([]playerTurn, []heardEvent) {
	t.Helper()
	py := liveKitPython(t)
	var player []playerTurn
	evs := adapterSession(t, turns, n, func(llm, monitor, out string) *exec.Cmd {
		cmd := exec.Command(py, append([]string{"example.py", "--llm", llm, "--tts", llm,
			"--monitor", monitor, "--session", "lkpy", "--out", out, "--turns", strconv.Itoa(n)}, args...)...)
		cmd.Dir = livekitPyDir
		return cmd
	}, &player, monitorArgs...)
	return player, evs
}

// TestLiveKitPythonThroughMonitor runs a real livekit-agents 1.8.9 pipeline
// (AgentSession, openai.LLM, openai.TTS behind LiveKit's StreamAdapter and
// its blingfire sentence tokenizer; no LiveKit server) against the mock
// with two stalls and espeak-ng speaking, reporting through the adapter
// into a monitor process: per turn (LiveKit's speech id), the monitor's
// heard gaps are the adapter's paced player's within 20 ms, and the engine
// given the measured timings predicts the same gaps.
func TestLiveKitPythonThroughMonitor(t *testing.T) {
	t.Parallel()
	liveKitPython(t)
	turns, _, err := scenarioTurns(context.Background(), "testdata/speak/stalls.yaml", 0)
	if err != nil {
		t.Fatal(err)
	}
	player, evs := liveKitPySession(t, turns, 2, nil, "--stack", "livekit-openai")
	heard := map[string]heardEvent{}
	for _, ev := range evs {
		if ev.Type == "heard" {
			heard[ev.Turn] = ev
		}
	}
	gaps := 0
	for _, p := range player {
		ev, ok := heard[p.Turn]
		if !ok {
			t.Fatalf("no heard event for turn %s (LiveKit's speech id); got %v", p.Turn, heard)
		}
		checkHeard(t, p, ev)
		gaps += len(ev.Heard)
	}
	if gaps == 0 {
		t.Error("no gap heard in two turns with a 1 s stall mid-sentence")
	}
}

// TestLiveKitPythonToolCall: the real LiveKit Python pipeline with a
// function tool, against a mock turn that calls it ("Sure, let me check.",
// get_weather for 2 s, "It is sunny."): one turn across the call, the
// tool's silence heard by the player and the monitor alike, and predicted
// as the tool call's.
func TestLiveKitPythonToolCall(t *testing.T) {
	t.Parallel()
	liveKitPython(t)
	player, evs := liveKitPySession(t, []*pipeline.Turn{toolCallTurn(t)}, 1, []string{"--tool", "get_weather", "--tool-ms", "2000"},
		"--stack", "livekit-openai")
	var heard, call heardEvent
	for _, ev := range evs {
		switch ev.Type {
		case "heard":
			heard = ev
		case "tool_call":
			call = ev
		}
	}
	if call.Name != "get_weather" || call.Turn != player[0].Turn {
		t.Fatalf("tool_call event %+v, want get_weather in turn %s", call, player[0].Turn)
	}
	checkHeard(t, player[0], heard)
	var gap gapJSON
	for _, g := range heard.Predicted {
		if g.DurationMs > gap.DurationMs {
			gap = g
		}
	}
	if gap.Cause != string(pipeline.CauseTool) || gap.DurationMs < 300 || gap.AtMs < call.AtMs {
		t.Errorf("the longest predicted gap %+v: want the tool call's, after it (%.1f ms), of 300 ms or more", gap, call.AtMs)
	}
}
