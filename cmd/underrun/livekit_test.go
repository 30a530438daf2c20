//go:build unix

package main

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"math/rand/v2"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// livekitDir is the LiveKit Agents adapter, an npm package.
const livekitDir = "../../pipeline/monitor/livekit-agents-js"

var recordLiveKit = flag.Bool("livekit-releases", false,
	"record LiveKit's release points on the chunking fixtures into tts/testdata/chunking/expect/livekit-agents-js.jsonl")

// needLiveKit skips the test unless node and the adapter's packages are
// there.
func needLiveKit(t *testing.T) {
	t.Helper()
	if _, err := exec.LookPath("node"); err != nil {
		t.Skip("node is not installed (apt-get install nodejs npm): the LiveKit Agents adapter is not tested")
	}
	if _, err := os.Stat(filepath.Join(livekitDir, "node_modules", "@livekit", "agents")); err != nil {
		t.Skip("the adapter's packages are not installed: run npm ci in pipeline/monitor/livekit-agents-js")
	}
}

// heardEvent is the monitor's heard event, as a subscriber reads it.
type heardEvent struct {
	Type, Session, Turn string
	TTFAMs              *float64 `json:"ttfa_ms"`
	Heard, Predicted    []gapJSON
	Fillers             []gapJSON
	Player              *struct {
		TTFAMs *float64 `json:"ttfa_ms"`
		Gaps   []gapJSON
	}
	Agrees         *bool
	SpeechChunks   int `json:"speech_chunks"`
	MeasuredChunks int `json:"measured_chunks"`
	// an underrun, tool_call, tool_silence or stall_warning event's fields
	AtMs       float64 `json:"at_ms"`
	DurationMs float64 `json:"duration_ms"`
	Name       string
	// a tool_silence event's, with --filler
	FillerCoveredMs *float64 `json:"filler_covered_ms"`
	Cause           string
}

type gapJSON struct {
	AtMs       float64 `json:"at_ms"`
	DurationMs float64 `json:"duration_ms"`
	Cause      string
}

// playerTurn is what the adapter's paced player heard of a turn.
type playerTurn struct {
	Turn    string
	StartMs float64
	Gaps    []struct{ StartMs, DurationMs float64 }
}

// liveKitSession runs example.mjs, the real LiveKit pipeline (its args
// added), against a mock of turns with espeak-ng speaking, reporting to
// a monitor process (its args added), and returns what the adapter's
// player heard of each turn and the monitor's events up to the heard
// event of each of the n turns.
func liveKitSession(t *testing.T, turns []*pipeline.Turn, n int, args []string, monitorArgs ...string) ([]playerTurn, []heardEvent) {
	t.Helper()
	var player []playerTurn
	evs := adapterSession(t, turns, n, func(llm, monitor, out string) *exec.Cmd {
		node := exec.Command("node", append([]string{"example.mjs", "--llm", llm, "--tts", llm,
			"--monitor", monitor, "--session", "lk", "--out", out}, args...)...)
		node.Dir = livekitDir
		return node
	}, &player, monitorArgs...)
	return player, evs
}

// TestLiveKitAgentsThroughMonitor runs a real @livekit/agents pipeline
// (AgentSession, openai.LLM, openai.TTS behind LiveKit's StreamAdapter and
// sentence tokenizer; no LiveKit server) against the mock with two stalls
// and espeak-ng speaking, reporting through the adapter into a monitor
// process: the monitor's heard gaps (from the audio frames) are the
// adapter's player's within 20 ms, and the engine given the measured
// timings predicts the same gaps.
func TestLiveKitAgentsThroughMonitor(t *testing.T) {
	t.Parallel()
	needLiveKit(t)
	turns, _, err := scenarioTurns(context.Background(), "testdata/speak/stalls.yaml", 0)
	if err != nil {
		t.Fatal(err)
	}
	const n = 2
	player, evs := liveKitSession(t, turns, n, []string{"--turns", "2"}, "--stack", "livekit-openai")
	heard := map[string]heardEvent{}
	live := map[string][]heardEvent{}
	for _, ev := range evs {
		switch ev.Type {
		case "heard":
			heard[ev.Turn] = ev
		case "underrun":
			live[ev.Turn] = append(live[ev.Turn], ev)
		}
	}
	for _, p := range player {
		ev, ok := heard[p.Turn]
		if !ok {
			t.Fatalf("no heard event for turn %s (LiveKit's speech id); got %v", p.Turn, heard)
		}
		checkHeard(t, p, ev)
		if len(ev.Heard) < 1 {
			// the first stall comes while the tokenizer holds the first
			// sentence (under 20 characters): before the first audio
			t.Errorf("turn %s: no gap heard, want one at the second stall at least", p.Turn)
		}
		// the live guard, with the published timings of --stack livekit-openai
		for _, u := range live[p.Turn] {
			t.Logf("turn %s: the live guard (--stack livekit-openai) predicted %.1f ms at %.1f ms", p.Turn, u.DurationMs, u.AtMs)
		}
	}
}

// TestLiveKitToolCallThroughMonitor: the real LiveKit pipeline with a
// function tool, against a mock turn that calls it (the tool-call trace:
// "Sure, let me check.", get_weather, "It is sunny."). LiveKit speaks the
// text before the call, runs the tool (2 s), and asks the LLM again with
// its result; the adapter reports one turn: the call, its result, and the
// reply's chunks. The player hears the tool's silence as a gap in the
// turn, the monitor hears the same from the frames, the engine predicts
// it as the tool call's (not an underrun), no stall is warned of while
// the tool runs, and the recording keeps the call with the time it ran.
func TestLiveKitToolCallThroughMonitor(t *testing.T) {
	t.Parallel()
	needLiveKit(t)
	turn := toolCallTurn(t)
	rec := filepath.Join(t.TempDir(), "rec.jsonl")
	player, evs := liveKitSession(t, []*pipeline.Turn{turn}, 1, []string{"--turns", "1", "--tool", "get_weather", "--tool-ms", "2000"},
		"--stack", "livekit-openai", "--record", rec, "--warn-tolerance", "150ms", "--filler", "keepalive:100ms")
	p := player[0]
	var heard, call, silence heardEvent
	for _, ev := range evs {
		switch ev.Type {
		case "heard":
			heard = ev
		case "tool_call":
			call = ev
		case "tool_silence":
			silence = ev
		case "underrun":
			if ev.AtMs > call.AtMs && call.Name != "" && ev.AtMs < call.AtMs+2000 {
				t.Errorf("an underrun at %.1f ms, while the tool ran", ev.AtMs)
			}
		case "stall_warning":
			if call.Name != "" && ev.AtMs > call.AtMs {
				t.Errorf("a stall warning at %.1f ms, after the tool call at %.1f ms", ev.AtMs, call.AtMs)
			}
		}
	}
	if call.Name != "get_weather" || call.Turn != p.Turn {
		t.Fatalf("tool_call event %+v, want get_weather in turn %s", call, p.Turn)
	}
	// --filler keepalive:100ms: the sound plays from 100 ms into the silence
	if c := silence.FillerCoveredMs; c == nil || silence.DurationMs <= 100 || math.Abs(*c-(silence.DurationMs-100)) > 1e-6 {
		t.Errorf("tool_silence event %+v: want its filler_covered_ms, all but the first 100 ms", silence)
	}
	checkHeard(t, p, heard)
	checkToolGap(t, heard, call)
	var recorded *pipeline.Turn
	for deadline := time.Now().Add(10 * time.Second); recorded == nil && time.Now().Before(deadline); time.Sleep(20 * time.Millisecond) {
		if b, err := os.ReadFile(rec); err == nil && strings.Contains(string(b), `"type":"end"`) {
			if recorded, err = trace.NewNativeReader(strings.NewReader(string(b)), rec).Next(); err != nil {
				t.Fatal(err)
			}
		}
	}
	if recorded == nil || len(recorded.ToolCalls) != 1 || recorded.ToolCalls[0].Name != "get_weather" || recorded.ToolCalls[0].Duration < 1900*time.Millisecond {
		t.Fatalf("recorded turn %+v: want one get_weather call of the tool's 2 s or more", recorded)
	}
	if n := len(recorded.Chunks); n != len(turn.Chunks) || recorded.Text() != turn.Text() {
		t.Errorf("recorded %d chunks %q, want the trace's %d %q: one turn across the call", n, recorded.Text(), len(turn.Chunks), turn.Text())
	}
	if recorded.OutputTokens != turn.Tokens() {
		t.Errorf("recorded output tokens %d, want the usage of both streams, %d", recorded.OutputTokens, turn.Tokens())
	}
}

// checkToolGap checks that the longest gap predicted in a heard event is
// the tool's silence: after the tool_call event call, as long as the tool
// ran less the speech before it still playing (300 ms or more).
func checkToolGap(t *testing.T, heard, call heardEvent) {
	t.Helper()
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

// toolCallTurn is the one turn of the tool-call trace: "Sure, let me
// check." and a get_weather call before the rest.
func toolCallTurn(t *testing.T) *pipeline.Turn {
	t.Helper()
	f, err := os.Open("../../pipeline/trace/testdata/native/tool-call.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	turn, err := trace.NewNativeReader(f, "tool-call.jsonl").Next()
	if err != nil {
		t.Fatal(err)
	}
	return turn
}

// TestLiveKitFillerHoldsBackTheReply runs the tool-call turn through the
// real LiveKit pipeline twice: as it is, and with the tool saying a filler
// phrase 300 ms after it starts (Monitor.say, session.say), longer than
// the silence it covers. LiveKit plays one speech at a time: the phrase
// starts once the words before the call have played (the silence's
// start, after the TTS's first audio: --filler after:0s), and the reply,
// ready long before, waits for the phrase's end. The wait is what
// pipeline.Filler.Cover calls Late: first audio + phrase - silence. The
// adapter reports the turn once, and the monitor, which hears the LLM's
// speech, the tool's silence as it predicts.
func TestLiveKitFillerHoldsBackTheReply(t *testing.T) {
	t.Parallel()
	needLiveKit(t)
	turn := toolCallTurn(t)
	args := []string{"--turns", "1", "--tool", "get_weather", "--tool-ms", "2000"}
	plain, _ := liveKitSession(t, []*pipeline.Turn{turn}, 1, args, "--stack", "livekit-openai")
	const phrase = "One moment, please, while I look that up for you in the weather service of the town."
	said, evs := liveKitSession(t, []*pipeline.Turn{turn}, 1, append(args, "--say", phrase, "--say-ms", "300"), "--stack", "livekit-openai")
	if len(plain[0].Gaps) != 1 || len(said[0].Gaps) != 2 {
		t.Fatalf("gaps heard: %+v without the phrase, %+v with it; want the tool's silence, then the silences before and after the phrase", plain[0].Gaps, said[0].Gaps)
	}
	silence := plain[0].Gaps[0].DurationMs
	before, after := said[0].Gaps[0], said[0].Gaps[1]
	ttfa := before.DurationMs                                      // the phrase's first audio after the silence began
	length := after.StartMs - (before.StartMs + before.DurationMs) // the phrase's audio
	late := after.StartMs + after.DurationMs - before.StartMs - silence
	t.Logf("without the phrase: %.1f ms of silence; with it: first audio %.1f ms, phrase %.1f ms, then %.1f ms of silence; the reply %.1f ms later",
		silence, ttfa, length, after.DurationMs, late)
	if length < silence+500 {
		t.Fatalf("the phrase plays %.1f ms, not longer than the %.1f ms silence: the test needs a longer one", length, silence)
	}
	if after.DurationMs > 100 {
		t.Errorf("%.1f ms of silence between the phrase and the reply: want the reply, ready long before, at the phrase's end", after.DurationMs)
	}
	if want := ttfa + length - silence; math.Abs(late-want) > 100 {
		t.Errorf("the reply came %.1f ms later than without the phrase; the model's wait (first audio + phrase - silence) is %.1f ms", late, want)
	}
	var heard heardEvent
	for _, ev := range evs {
		if ev.Type == "heard" {
			heard = ev
		}
	}
	// the monitor, told of the phrase's frames, hears what the player did,
	// and predicts it: the tool's silence less the phrase
	checkHeard(t, said[0], heard)
	if len(heard.Fillers) != 1 || math.Abs(heard.Fillers[0].AtMs-(before.StartMs+before.DurationMs)) > 20 || math.Abs(heard.Fillers[0].DurationMs-length) > 20 {
		t.Errorf("the monitor heard the filler %+v; want the phrase, %.1f ms at %.1f ms", heard.Fillers, length, before.StartMs+before.DurationMs)
	}
	for _, g := range heard.Predicted {
		if g.Cause != string(pipeline.CauseTool) {
			t.Errorf("predicted gap %+v: cause %q, want the tool call's", g, g.Cause)
		}
	}
}

// checkHeard checks a turn's heard event against what the adapter's
// player heard: named by LiveKit's speech id, the same first audio and
// gaps within 20 ms, and the engine, given the measured timings,
// predicting the gaps heard.
func checkHeard(t *testing.T, p playerTurn, ev heardEvent) {
	t.Helper()
	if !strings.HasPrefix(p.Turn, "speech_") {
		t.Errorf("turn %q is not named by LiveKit's speech id", p.Turn)
	}
	if ev.Player == nil || ev.Agrees == nil || ev.TTFAMs == nil {
		t.Fatalf("turn %s: heard event without the player's report, the comparison or the start: %+v", p.Turn, ev)
	}
	// the monitor, from the frames, against the adapter's paced player
	if len(ev.Heard) != len(p.Gaps) {
		t.Errorf("turn %s: the monitor heard %d gaps, the adapter's player %d", p.Turn, len(ev.Heard), len(p.Gaps))
	}
	if d := *ev.TTFAMs - p.StartMs; math.Abs(d) > 20 {
		t.Errorf("turn %s: first audio at %.1f ms for the monitor, %.1f ms for the player", p.Turn, *ev.TTFAMs, p.StartMs)
	}
	for i := range min(len(ev.Heard), len(p.Gaps)) {
		h, g := ev.Heard[i], p.Gaps[i]
		if math.Abs(h.AtMs-g.StartMs) > 20 || math.Abs(h.DurationMs-g.DurationMs) > 20 {
			t.Errorf("turn %s gap %d: the monitor heard %.1f ms at %.1f ms, the player %.1f ms at %.1f ms",
				p.Turn, i, h.DurationMs, h.AtMs, g.DurationMs, g.StartMs)
		}
	}
	// the engine, given the measured timings, against what was heard
	if ev.MeasuredChunks != ev.SpeechChunks || !*ev.Agrees || len(ev.Predicted) != len(ev.Heard) {
		t.Errorf("turn %s: %d of %d speech chunks measured, agrees %v: heard %+v, predicted %+v",
			p.Turn, ev.MeasuredChunks, ev.SpeechChunks, *ev.Agrees, ev.Heard, ev.Predicted)
	}
	for i := range min(len(ev.Heard), len(ev.Predicted)) {
		h, m := ev.Heard[i], ev.Predicted[i]
		t.Logf("turn %s gap %d: heard %.1f ms at %.1f ms (player %.1f ms at %.1f ms), predicted with the measured timings %.1f ms at %.1f ms (%s)",
			p.Turn, i, h.DurationMs, h.AtMs, p.Gaps[min(i, len(p.Gaps)-1)].DurationMs, p.Gaps[min(i, len(p.Gaps)-1)].StartMs, m.DurationMs, m.AtMs, m.Cause)
	}
}

// TestLiveKitReleasePoints records, through the real pipeline, the text
// LiveKit's StreamAdapter hands to the TTS for every reply of the chunking
// fixtures, streamed token by token (10 ms apart), and checks the committed
// recording (tts/testdata/chunking/expect/livekit-agents-js.jsonl) is what
// LiveKit does; -livekit-releases rewrites it. tts's
// TestChunkingPresetsMatchFrameworks holds the presets to it.
func TestLiveKitReleasePoints(t *testing.T) {
	if testing.Short() && !*recordLiveKit {
		t.Skip("-short: 102 replies through LiveKit take about a minute")
	}
	t.Parallel()
	needLiveKit(t)
	e := streamtest.Espeak(t, 450)
	ids, turns := fixtureTurns(t)
	srv := httptest.NewServer(&openai.Mock{Turns: turns, Speech: e})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "releases.jsonl")
	node := exec.Command("node", "example.mjs", "--llm", srv.URL+"/v1", "--tts", srv.URL+"/v1",
		"--turns", strconv.Itoa(len(turns)), "--releases", out)
	node.Dir = livekitDir
	if b, err := node.CombinedOutput(); err != nil {
		t.Fatalf("the LiveKit pipeline: %v\n%s", err, b)
	}
	checkReleases(t, out, ids, "livekit-agents-js", "livekit-releases", *recordLiveKit)
}

// TestLiveKitFramesAsTheTransport: LiveKit's own AudioByteStream
// (@livekit/agents, dist/audio.js), fed pieces of audio of random sizes,
// sends the frames the livekit transport preset's Sender sends for the
// same pieces: whole frames of sampleRate/10 samples as soon as a piece
// completes one, the rest held, and the short rest at the end (flush).
func TestLiveKitFramesAsTheTransport(t *testing.T) {
	t.Parallel()
	needLiveKit(t)
	rng := rand.New(rand.NewPCG(3, 5))
	const rate = 24000
	pieces := make([]int, 60)
	for i := range pieces {
		pieces[i] = 1 + rng.IntN(6000)
	}
	js, _ := json.Marshal(pieces)
	script := `import { AudioByteStream, initializeLogger } from '@livekit/agents';
initializeLogger({ pretty: false, level: 'warn' });
const bs = new AudioByteStream(` + strconv.Itoa(rate) + `, 1);
const out = [];
for (const n of ` + string(js) + `) out.push(bs.write(new Int16Array(n).buffer).map(f => f.samplesPerChannel));
out.push(bs.flush().map(f => f.samplesPerChannel));
console.log(JSON.stringify(out));`
	cmd := exec.Command("node", "--input-type=module", "-e", script)
	cmd.Dir = livekitDir
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("node: %v\n%s", err, b)
	}
	var theirs [][]int
	if err := json.Unmarshal(b, &theirs); err != nil {
		t.Fatalf("node printed %q: %v", b, err)
	}
	// the Sender in units of one sample (1 ns each): exact
	tr, err := tts.LookupTransport("livekit")
	if err != nil {
		t.Fatal(err)
	}
	tr.Frame = rate / 10
	ours := make([][]int, len(pieces)+1)
	k := 0
	s := tr.NewSender(func(f tts.Sent) { ours[k] = append(ours[k], int(f.Audio)) })
	for i, n := range pieces {
		k = i
		s.Add(time.Duration(n), time.Duration(i), i)
	}
	k = len(pieces)
	s.End(0)
	for i := range ours {
		if ours[i] == nil {
			ours[i] = []int{}
		}
	}
	if !reflect.DeepEqual(ours, theirs) {
		t.Errorf("frames per piece (samples):\n ours   %v\n theirs %v", ours, theirs)
	}
}
