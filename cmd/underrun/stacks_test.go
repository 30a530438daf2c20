package main

import (
	"encoding/json"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/tts"
)

func TestStacksCommand(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "", "stacks")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, st := range tts.Stacks {
		if !strings.Contains(out, "  "+st.Name+" ") || !strings.Contains(out, st.Name+": "+st.Sources[0]) {
			t.Errorf("the list lacks %s or its sources:\n%s", st.Name, out)
		}
	}
	code, out, _ = runCLI(t, "", "stacks", "livekit-openai")
	for _, want := range []string{"StreamAdapter", "livekit", "request, first audio 1.071s per chunk", "Picovoice/tts-latency-benchmark", "differs:"} {
		if code != exitOK || !strings.Contains(out, want) {
			t.Errorf("stacks livekit-openai: exit %d, output lacks %q:\n%s", code, want, out)
		}
	}
	code, out, _ = runCLI(t, "", "stacks", "--report", "json")
	var stacks []tts.Stack
	if err := json.Unmarshal([]byte(out), &stacks); code != exitOK || err != nil || len(stacks) != len(tts.Stacks) {
		t.Errorf("json: exit %d, %v, %d stacks", code, err, len(stacks))
	}
	if code, _, errOut := runCLI(t, "", "stacks", "nope"); code != exitUsage || !strings.Contains(errOut, "unknown stack \"nope\"") {
		t.Errorf("unknown stack: exit %d, %q", code, errOut)
	}
}

// TestStackFlag: --stack sets chunking, mode and latencies; a flag given
// wins, and the report says which figures were replaced.
func TestStackFlag(t *testing.T) {
	t.Parallel()
	type config struct {
		Stack          string   `json:"stack"`
		Overridden     []string `json:"stack_overridden"`
		Chunking       string   `json:"chunking"`
		Mode           string   `json:"tts_mode"`
		LatencyMs      float64  `json:"tts_latency_ms"`
		ContinuationMs float64  `json:"tts_continuation_ms"`
	}
	run := func(args ...string) config {
		t.Helper()
		code, out, errOut := runCLI(t, "", append([]string{"analyze", "--report", "json", "testdata/analyze/handcheck.jsonl"}, args...)...)
		if code == exitUsage {
			t.Fatalf("%v: exit %d: %s", args, code, errOut)
		}
		var r struct{ Config config }
		if err := json.Unmarshal([]byte(out), &r); err != nil {
			t.Fatal(err)
		}
		return r.Config
	}
	got := run("--stack", "pipecat-cartesia")
	if want := (config{Stack: "pipecat-cartesia", Chunking: "pipecat", Mode: "stream", LatencyMs: 140, ContinuationMs: 50}); got.Stack != want.Stack ||
		got.Chunking != want.Chunking || got.Mode != want.Mode || got.LatencyMs != want.LatencyMs || got.ContinuationMs != want.ContinuationMs || len(got.Overridden) != 0 {
		t.Errorf("--stack pipecat-cartesia: %+v, want %+v", got, want)
	}
	got = run("--stack", "pipecat-cartesia", "--tts-latency", "300ms", "--chunking", "word")
	if got.LatencyMs != 300 || got.Chunking != "word" || got.Mode != "stream" || strings.Join(got.Overridden, ",") != "chunking,first audio" {
		t.Errorf("--stack with flags: %+v, want word chunking, 300 ms first audio, both overridden", got)
	}
	got = run("--stack", "livekit-openai")
	if got.Mode != "request" || got.LatencyMs != 1071 || got.Chunking != "livekit" {
		t.Errorf("--stack livekit-openai: %+v", got)
	}
	code, out, _ := runCLI(t, "", "analyze", "--stack", "livekit-elevenlabs", "--rtf", "0.3", "testdata/analyze/handcheck.jsonl")
	for _, want := range []string{"stack: livekit-elevenlabs: LiveKit ElevenLabs plugin", "overridden: rtf", "livekit chunking", "TTS stream, first audio 350ms, continuation 50ms, RTF 0.3"} {
		if code == exitUsage || !strings.Contains(out, want) {
			t.Errorf("text header lacks %q:\n%s", want, out)
		}
	}
	if code, _, errOut := runCLI(t, "", "--stack", "nope"); code != exitUsage || !strings.Contains(errOut, "--stack: unknown stack") {
		t.Errorf("bad --stack: exit %d, %q", code, errOut)
	}
}

// simResult is the part of `sim --report json` these tests read.
type simResult struct {
	Report struct {
		Interruptions struct {
			Count int `json:"count"`
		} `json:"interruptions"`
		SpeechGoodput float64 `json:"speech_goodput"`
	} `json:"report"`
	MonteCarlo struct {
		Turns       int     `json:"turns"`
		Interrupted int     `json:"interrupted_turns"`
		Goodput     float64 `json:"speech_goodput"`
	} `json:"monte_carlo"`
	Sweep []struct {
		Label  string `json:"label"`
		Result struct {
			Goodput float64 `json:"speech_goodput"`
		} `json:"result"`
	} `json:"sweep"`
}

func runSimJSON(t *testing.T, args ...string) simResult {
	t.Helper()
	code, out, errOut := runCLI(t, "", append([]string{"sim", "--report", "json"}, args...)...)
	if code == exitUsage {
		t.Fatalf("sim %v: exit %d: %s", args, code, errOut)
	}
	var r simResult
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("sim %v: %v", args, err)
	}
	return r
}

// TestSimPolicyTokenModes: at 300 ms to first audio, token chunking
// interrupts no turn with one context per turn, and nearly every turn with
// a request per token (each waiting for the one before).
func TestSimPolicyTokenModes(t *testing.T) {
	t.Parallel()
	stream := runSimJSON(t, "policy-token", "--tts-latency", "300ms", "--tts-mode", "stream", "--monte-carlo", "200")
	if stream.MonteCarlo.Turns != 200 || stream.MonteCarlo.Interrupted != 0 || stream.Report.Interruptions.Count != 0 {
		t.Errorf("stream: %d of %d turns interrupted, %d interruptions in the report; want none",
			stream.MonteCarlo.Interrupted, stream.MonteCarlo.Turns, stream.Report.Interruptions.Count)
	}
	request := runSimJSON(t, "policy-token", "--tts-latency", "300ms", "--tts-mode", "request", "--monte-carlo", "200")
	if request.MonteCarlo.Interrupted < 190 || request.Report.SpeechGoodput > 0.05 {
		t.Errorf("request: %d of %d turns interrupted (report goodput %v); want nearly all",
			request.MonteCarlo.Interrupted, request.MonteCarlo.Turns, request.Report.SpeechGoodput)
	}
}

// TestSimTTSLatencySweep: the synthesizer's latency changes the answer: a
// request per sentence loses turns as the latency grows, and in stream mode
// a slower first audio gives the player a longer head start.
func TestSimTTSLatencySweep(t *testing.T) {
	t.Parallel()
	request := runSimJSON(t, "stack-openai-speech", "--sweep", "ttfa=250ms:1250ms:1000ms", "--monte-carlo", "200")
	if len(request.Sweep) != 2 || !(request.Sweep[0].Result.Goodput > request.Sweep[1].Result.Goodput+0.05) {
		t.Errorf("request per sentence: sweep %+v, want goodput falling by more than 0.05 from 250 ms to 1.25 s", request.Sweep)
	}
	stream := runSimJSON(t, "stack-pipecat-elevenlabs", "--sweep", "ttfa=0s:500ms:500ms", "--monte-carlo", "200")
	if len(stream.Sweep) != 2 || !(stream.Sweep[1].Result.Goodput > stream.Sweep[0].Result.Goodput) {
		t.Errorf("stream: sweep %+v, want goodput rising from 0 to 500 ms of first audio", stream.Sweep)
	}
}

// TestGoldenModesAndStack: the default turn's report in request mode and
// through a named stack, as golden files.
func TestGoldenModesAndStack(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		file string
		args []string
	}{
		{"default-request.txt", []string{"--tts-mode", "request"}},
		{"default-parallel.txt", []string{"--tts-mode", "parallel", "--rtf", "1.2"}},
		{"default-stack.txt", []string{"--stack", "livekit-openai"}},
	} {
		code, out, errOut := runCLI(t, "", tc.args...)
		if code == exitUsage {
			t.Fatalf("%v: exit %d: %s", tc.args, code, errOut)
		}
		golden(t, tc.file, out)
	}
}

func TestTransportsCommand(t *testing.T) {
	t.Parallel()
	code, out, errOut := runCLI(t, "", "transports")
	if code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	for _, tr := range tts.Transports {
		if !strings.Contains(out, "  "+tr.Name+" ") || !strings.Contains(out, tr.Name+": "+tr.Summary+"\n  source: "+tr.Source) {
			t.Errorf("the list lacks %s or its source:\n%s", tr.Name, out)
		}
	}
	code, out, _ = runCLI(t, "", "transports", "--report", "json", "pipecat")
	var list []tts.Transport
	if err := json.Unmarshal([]byte(out), &list); code != exitOK || err != nil || len(list) != 1 || list[0].Frame != tts.Transports[0].Frame {
		t.Errorf("json: exit %d, %v, %+v", code, err, list)
	}
	// --transport reaches the engine: the default run through Pipecat's
	// transport says so in its header, and a bad one is a usage error
	code, out, _ = runCLI(t, "", "--transport", "pipecat")
	if !strings.Contains(out, "transport: pipecat: 40ms frames") {
		t.Errorf("the default run with --transport pipecat (exit %d) does not name it:\n%s", code, out)
	}
	if code, _, errOut := runCLI(t, "", "--transport", "pipecat,frame=40"); code != exitUsage || !strings.Contains(errOut, `--transport: invalid transport: "pipecat,frame=40": frame: want a duration`) {
		t.Errorf("bad transport: exit %d, %q", code, errOut)
	}
}
