//go:build unix

package main

import (
	"context"
	"flag"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strconv"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// livekitPyDir is the LiveKit Agents (Python) adapter; .ci/run makes its
// virtual environment (.venv) from its lock file.
const livekitPyDir = "../../pipeline/monitor/livekit-agents-py"

var recordLiveKitPy = flag.Bool("livekit-py-releases", false,
	"record LiveKit Python's release points on the chunking fixtures into tts/testdata/chunking/expect/livekit-agents-py.jsonl")

// liveKitPython returns the virtual environment's python with
// livekit-agents installed, or skips the test.
func liveKitPython(t *testing.T) string {
	t.Helper()
	return pythonVenv(t, livekitPyDir, "livekit/agents", "livekit-agents")
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
	turns, _, err := scenarioTurns(context.Background(), "testdata/speak/stalls.yaml", 0)
	if err != nil {
		t.Fatal(err)
	}
	player, evs := liveKitRun(t, liveKitPython(t), turns, 2, []string{"--turns", "2"}, "--stack", "livekit-openai")
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
	player, evs := liveKitRun(t, liveKitPython(t), []*pipeline.Turn{toolCallTurn(t)}, 1, []string{"--tool", "get_weather", "--tool-ms", "2000"},
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
	checkToolGap(t, heard, call)
}

// TestLiveKitPythonReleasePoints records, through the real LiveKit Python
// pipeline, the sentences its StreamAdapter's tokenizer emits for every
// reply of the chunking fixtures (each LLM chunk let through once the one
// before it has gone as far as it goes; text transforms off), and checks
// the committed recording (tts/testdata/chunking/expect/livekit-agents-py.jsonl);
// -livekit-py-releases rewrites it. tts's TestPresetsAgainstLiveKitPython
// holds the livekit preset to it.
func TestLiveKitPythonReleasePoints(t *testing.T) {
	if testing.Short() && !*recordLiveKitPy {
		t.Skip("-short: 102 replies through LiveKit take about a minute")
	}
	t.Parallel()
	py := liveKitPython(t)
	e := streamtest.Espeak(t, 450)
	ids, turns := fixtureTurns(t)
	srv := httptest.NewServer(&openai.Mock{Turns: turns, Speech: e})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "releases.jsonl")
	cmd := exec.Command(py, "example.py", "--llm", srv.URL+"/v1", "--tts", srv.URL+"/v1",
		"--turns", strconv.Itoa(len(turns)), "--releases", out)
	cmd.Dir = livekitPyDir
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the LiveKit Python pipeline: %v\n%s", err, b)
	}
	checkReleases(t, out, ids, "livekit-agents-py", "livekit-py-releases", *recordLiveKitPy)
}
