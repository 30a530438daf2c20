//go:build unix

package main

import (
	"context"
	"encoding/json"
	"flag"
	"math"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/otlp/otlptest"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// pipecatDir is the Pipecat observer, a Python package; .ci/run makes its
// virtual environment (.venv) from its lock file.
const pipecatDir = "../../pipeline/monitor/pipecat"

var recordPipecat = flag.Bool("pipecat-releases", false,
	"record Pipecat's release points on the chunking fixtures into tts/testdata/chunking/expect/pipecat-pipeline.jsonl")

// pipecatPython returns the virtual environment's python with pipecat-ai
// installed, or skips the test.
func pipecatPython(t *testing.T) string {
	t.Helper()
	return pythonVenv(t, pipecatDir, "pipecat", "pipecat-ai")
}

// pythonVenv returns the python of the virtual environment in a Python
// adapter's folder dir (.ci/run makes it from the folder's lock file, with
// pipeline/monitor/pyclient on its path), or skips the test when it is
// missing, or lacks the framework (its package folder pkg, distribution
// dist) or the shared client.
func pythonVenv(t *testing.T, dir, pkg, dist string) string {
	t.Helper()
	py, err := filepath.Abs(filepath.Join(dir, ".venv", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s/.venv is missing: .ci/run makes it from requirements.lock, with pipeline/monitor/pyclient on its path", dir)
	}
	for _, want := range []string{pkg, "underrun-monitor.pth"} {
		if m, _ := filepath.Glob(filepath.Join(dir, ".venv", "lib", "python3*", "site-packages", want)); len(m) == 0 {
			t.Skipf("%s is not in %s/.venv: .ci/run installs %s from requirements.lock and puts pipeline/monitor/pyclient on the path", want, dir, dist)
		}
	}
	return py
}

// pipecatTurn is what the example's listener (a client of Pipecat's
// websocket transport playing what it receives in real time) heard of a
// turn, and what the observer heard from the frames the transport sent.
type pipecatTurn struct {
	Turn    string
	StartMs *float64 `json:"start_ms"`
	Gaps    []struct {
		StartMs    float64 `json:"start_ms"`
		DurationMs float64 `json:"duration_ms"`
	}
	Observer json.RawMessage
}

// pipecatSession runs example.py, a real Pipecat pipeline (its args added),
// against a mock of turns with espeak-ng speaking, reporting to a monitor
// process (its args added), and returns what the listener heard of each
// turn and the monitor's events up to the heard event of each of the n
// turns.
func pipecatSession(t *testing.T, turns []*pipeline.Turn, n int, args []string, monitorArgs ...string) ([]pipecatTurn, []heardEvent) {
	t.Helper()
	py := pipecatPython(t)
	var heard []pipecatTurn
	evs := adapterSession(t, turns, n, func(llm, monitor, out string) *exec.Cmd {
		cmd := exec.Command(py, append([]string{"example.py", "--llm", llm, "--tts", llm,
			"--monitor", monitor, "--session", "pc", "--out", out, "--turns", strconv.Itoa(n)}, args...)...)
		cmd.Dir = pipecatDir
		cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore")
		return cmd
	}, &heard, monitorArgs...)
	return heard, evs
}

// TestPipecatThroughMonitor runs a real Pipecat pipeline (OpenAILLMService,
// OpenAITTSService with its own sentence aggregation, the websocket server
// output transport pacing the audio, a listener playing it in real time)
// against the mock with espeak-ng speaking, on three stall patterns,
// reporting through UnderrunObserver into a monitor process: per turn, the
// monitor's heard gaps (from the frames the transport sent) are the
// listener's within 20 ms, the turns are named by Pipecat's turn numbers,
// and the engine given the measured timings predicts the gaps heard.
func TestPipecatThroughMonitor(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: the listener and the espeak-ng mock play in real time, and the race detector slows them; .ci/run runs this without it")
	}
	t.Parallel()
	pipecatPython(t)
	for _, c := range []struct {
		name, scenario string
		trace          bool // a trace file, not a scenario
		args           []string
		minGaps        int
		cause          string // of the gap the stall or tool makes
	}{
		// the first stall falls while the aggregation holds the first
		// sentence (a later first audio, no gap), the second mid-sentence
		{name: "mid-sentence", scenario: "testdata/speak/stalls.yaml", minGaps: 1, cause: "stall"},
		// a 2 s stall on the word after "floor.": Pipecat holds the
		// finished sentence until the next word comes, so the gap is
		// the stall's
		{name: "after-sentence-end", scenario: "testdata/pipecat/sentence-end.yaml", minGaps: 1, cause: "stall"},
		// "Sure, let me check.", get_weather (2 s), "It is sunny."
		{name: "tool-call", scenario: "../../pipeline/trace/testdata/native/tool-call.jsonl", trace: true,
			args: []string{"--tool", "get_weather", "--tool-ms", "2000"}, minGaps: 1, cause: "tool_call"},
	} {
		// one after another: the listener's stamps are only as good as the
		// machine is idle
		t.Run(c.name, func(t *testing.T) {
			var turns []*pipeline.Turn
			if c.trace {
				turns = []*pipeline.Turn{toolCallTurn(t)}
			} else {
				var err error
				if turns, _, err = scenarioTurns(context.Background(), c.scenario, 0); err != nil {
					t.Fatal(err)
				}
			}
			heard, evs := pipecatSession(t, turns, 1, c.args, "--stack", "openai-speech")
			byTurn := map[string]heardEvent{}
			var call heardEvent
			for _, ev := range evs {
				switch ev.Type {
				case "heard":
					byTurn[ev.Turn] = ev
				case "tool_call":
					call = ev
				}
			}
			for _, h := range heard {
				ev, ok := byTurn[h.Turn]
				if !ok {
					t.Fatalf("no heard event for turn %s; got %v", h.Turn, byTurn)
				}
				checkPipecatHeard(t, h, ev)
				if len(h.Gaps) < c.minGaps {
					t.Errorf("turn %s: %d gaps heard, want %d at least", h.Turn, len(h.Gaps), c.minGaps)
				}
				// the longest predicted gap is the stall's or the tool's
				var longest gapJSON
				for _, g := range ev.Predicted {
					if g.DurationMs > longest.DurationMs {
						longest = g
					}
				}
				if longest.Cause != c.cause {
					t.Errorf("turn %s: the %.1f ms gap at %.1f ms has the cause %q, want %q", h.Turn, longest.DurationMs, longest.AtMs, longest.Cause, c.cause)
				}
			}
			if c.trace {
				if call.Name != "get_weather" {
					t.Fatalf("tool_call event %+v, want get_weather", call)
				}
				checkToolGap(t, byTurn[heard[0].Turn], call)
			}
		})
	}
}

// checkPipecatHeard checks a turn's heard event against what the listener
// heard: named by Pipecat's turn number, the same first audio and gaps
// within 20 ms, and every gap predicted from the measured timings.
func checkPipecatHeard(t *testing.T, h pipecatTurn, ev heardEvent) {
	t.Helper()
	if !strings.HasPrefix(h.Turn, "turn-") {
		t.Errorf("turn %q is not named by Pipecat's turn number", h.Turn)
	}
	if ev.Agrees == nil || ev.TTFAMs == nil || h.StartMs == nil {
		t.Fatalf("turn %s: heard event without the comparison or the start, or no audio heard: %+v, listener %+v", h.Turn, ev, h)
	}
	if d := *ev.TTFAMs - *h.StartMs; math.Abs(d) > 20 {
		t.Errorf("turn %s: first audio at %.1f ms for the monitor, %.1f ms for the listener", h.Turn, *ev.TTFAMs, *h.StartMs)
	}
	// each gap of one is the other's within 20 ms: the same start and
	// length, or, for a gap the other did not hear, 20 ms or shorter (the
	// listener stamps a frame when its task gets to it, on a loaded machine
	// a millisecond late now and then)
	listener := make([]gapJSON, len(h.Gaps))
	for i, g := range h.Gaps {
		listener[i] = gapJSON{AtMs: g.StartMs, DurationMs: g.DurationMs}
	}
	for _, d := range unmatchedGaps(ev.Heard, listener) {
		t.Errorf("turn %s: the monitor heard %.1f ms at %.1f ms, which the listener did not within 20 ms (listener %+v)", h.Turn, d.DurationMs, d.AtMs, h.Gaps)
	}
	for _, d := range unmatchedGaps(listener, ev.Heard) {
		t.Errorf("turn %s: the listener heard %.1f ms at %.1f ms, which the monitor did not within 20 ms (monitor %+v)", h.Turn, d.DurationMs, d.AtMs, ev.Heard)
	}
	if ev.MeasuredChunks != ev.SpeechChunks || !*ev.Agrees {
		t.Errorf("turn %s: %d of %d speech chunks measured, agrees %v: heard %+v, predicted %+v",
			h.Turn, ev.MeasuredChunks, ev.SpeechChunks, *ev.Agrees, ev.Heard, ev.Predicted)
	}
	t.Logf("turn %s: first audio %.1f ms (listener %.1f ms)", h.Turn, *ev.TTFAMs, *h.StartMs)
	for i := range max(len(ev.Heard), len(h.Gaps), len(ev.Predicted)) {
		var line strings.Builder
		line.WriteString("turn " + h.Turn + " gap " + strconv.Itoa(i) + ":")
		if i < len(ev.Heard) {
			line.WriteString(" monitor heard " + fmtMs(ev.Heard[i].DurationMs) + " at " + fmtMs(ev.Heard[i].AtMs) + ";")
		}
		if i < len(h.Gaps) {
			line.WriteString(" listener " + fmtMs(h.Gaps[i].DurationMs) + " at " + fmtMs(h.Gaps[i].StartMs) + ";")
		}
		if i < len(ev.Predicted) {
			p := ev.Predicted[i]
			line.WriteString(" predicted " + fmtMs(p.DurationMs) + " at " + fmtMs(p.AtMs) + " (" + p.Cause + ")")
		}
		t.Log(line.String())
	}
}

// fmtMs writes milliseconds as the tests log them.
func fmtMs(x float64) string { return strconv.FormatFloat(x, 'f', 1, 64) + " ms" }

// TestPipecatTurnSpans runs the mid-sentence stalls through the real
// pipeline with Pipecat's tracing on: the observer writes each turn's
// heard gaps onto Pipecat's own turn span (an underrun event per gap,
// the counts as attributes), and sends the span's trace context with the
// turn, so that the monitor's OTLP span of the turn is its child.
func TestPipecatTurnSpans(t *testing.T) {
	if raceEnabled {
		t.Skip("-race: the listener and the espeak-ng mock play in real time, and the race detector slows them; .ci/run runs this without it")
	}
	t.Parallel()
	pipecatPython(t)
	turns, _, err := scenarioTurns(context.Background(), "testdata/speak/stalls.yaml", 0)
	if err != nil {
		t.Fatal(err)
	}
	rcv := otlptest.NewReceiver(t)
	file := filepath.Join(t.TempDir(), "spans.json")
	heard, _ := pipecatSession(t, turns, 2, []string{"--trace", file}, "--stack", "openai-speech", "--otlp", rcv.URL)
	b, err := os.ReadFile(file)
	if err != nil {
		t.Fatal(err)
	}
	var spans []struct {
		TraceID    string         `json:"trace_id"`
		SpanID     string         `json:"span_id"`
		Attributes map[string]any `json:"attributes"`
		Events     []struct {
			Name       string
			Attributes map[string]any
		}
	}
	if err := json.Unmarshal(b, &spans); err != nil {
		t.Fatal(err)
	}
	for _, h := range heard {
		var found bool
		for _, s := range spans {
			if s.Attributes["underrun.turn"] != h.Turn {
				continue
			}
			found = true
			// the gaps on the span are the listener's, within 20 ms
			var onSpan, listener []gapJSON
			for _, e := range s.Events {
				at, _ := e.Attributes["underrun.at_ms"].(float64)
				d, _ := e.Attributes["underrun.duration_ms"].(float64)
				if e.Name != "underrun" {
					t.Errorf("turn %s: span event %+v, want underrun", h.Turn, e)
				}
				onSpan = append(onSpan, gapJSON{AtMs: at, DurationMs: d})
			}
			for _, g := range h.Gaps {
				listener = append(listener, gapJSON{AtMs: g.StartMs, DurationMs: g.DurationMs})
			}
			if n, _ := s.Attributes["underrun.gaps"].(float64); int(n) != len(s.Events) {
				t.Errorf("turn %s: the span says %v gaps, and has %d underrun events", h.Turn, s.Attributes["underrun.gaps"], len(s.Events))
			}
			for _, g := range unmatchedGaps(onSpan, listener) {
				t.Errorf("turn %s: the span has %.1f ms at %.1f ms, which the listener did not hear within 20 ms (%+v)", h.Turn, g.DurationMs, g.AtMs, h.Gaps)
			}
			for _, g := range unmatchedGaps(listener, onSpan) {
				t.Errorf("turn %s: the listener heard %.1f ms at %.1f ms, which the span lacks within 20 ms (%+v)", h.Turn, g.DurationMs, g.AtMs, onSpan)
			}
			// the monitor's span of the turn joins Pipecat's trace under it
			deadline := time.Now().Add(20 * time.Second)
			for !childOf(rcv.Spans(), s.TraceID, s.SpanID) && time.Now().Before(deadline) {
				time.Sleep(50 * time.Millisecond)
			}
			if !childOf(rcv.Spans(), s.TraceID, s.SpanID) {
				t.Errorf("turn %s: no span of the monitor's under Pipecat's turn span %s/%s", h.Turn, s.TraceID, s.SpanID)
			}
			t.Logf("turn %s: Pipecat's span %s has %v gaps, %v ms of silence", h.Turn, s.SpanID, s.Attributes["underrun.gaps"], s.Attributes["underrun.silence_ms"])
		}
		if !found {
			t.Errorf("no Pipecat turn span for %s in %s", h.Turn, b)
		}
	}
}

// childOf says whether a span of spans is a child of span parent of trace.
func childOf(spans []otlptest.Span, trace, parent string) bool {
	for _, s := range spans {
		if s.TraceID().String() == trace && s.ParentSpanID().String() == parent {
			return true
		}
	}
	return false
}

// TestPythonClientNeverBlocks runs the Python adapters' tests of their
// connection (pipeline/monitor/pyclient/tests), in the Pipecat observer's
// environment: a monitor that cannot be
// reached, never answers the handshake, never reads, sends garbage, goes
// away mid-session or refuses messages never blocks or breaks the app,
// the queue stays bounded, and each failure is reported once.
func TestPythonClientNeverBlocks(t *testing.T) {
	t.Parallel()
	py := pipecatPython(t)
	cmd := exec.Command(py, "-m", "unittest", "discover", "-s", "tests", "-v")
	cmd.Dir = "../../pipeline/monitor/pyclient"
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the observer's tests: %v\n%s", err, b)
	}
	t.Logf("%s", b)
}

// TestPipecatMonitorDown: the real pipeline with the monitor unreachable
// plays its turn as without one; the observer says so once and counts
// what it dropped.
func TestPipecatMonitorDown(t *testing.T) {
	t.Parallel()
	py := pipecatPython(t)
	e := streamtest.Espeak(t, 320)
	turns, _, err := scenarioTurns(context.Background(), "testdata/speak/stalls.yaml", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&openai.Mock{Turns: turns, Speech: e})
	defer srv.Close()
	down := httptest.NewServer(nil)
	down.Close() // nothing listens there now
	out := filepath.Join(t.TempDir(), "heard.json")
	cmd := exec.Command(py, "example.py", "--llm", srv.URL+"/v1", "--tts", srv.URL+"/v1", "--monitor", down.URL, "--out", out)
	cmd.Dir = pipecatDir
	cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore")
	b, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("the Pipecat pipeline with the monitor down: %v\n%s", err, b)
	}
	if n := strings.Count(string(b), "cannot connect"); n != 1 {
		t.Errorf("the failure to connect was reported %d times, want once:\n%s", n, b)
	}
	if !strings.Contains(string(b), "monitor: 0 messages sent") || !strings.Contains(string(b), "turn-1: first audio at") {
		t.Errorf("want the turn played and heard, nothing sent:\n%s", b)
	}
}

// TestPipecatReleasePoints records, through the real pipeline
// (OpenAILLMService against the mock, OpenAITTSService's own sentence
// aggregation), the text Pipecat hands to the TTS for every reply of the
// chunking fixtures, streamed token by token, with the index of the LLM
// chunk whose processing released it, and checks the committed recording
// (tts/testdata/chunking/expect/pipecat-pipeline.jsonl) is what Pipecat
// does; -pipecat-releases rewrites it. tts's TestPresetsAgainstPipecatPipeline
// holds the pipecat preset to it.
func TestPipecatReleasePoints(t *testing.T) {
	if testing.Short() && !*recordPipecat {
		t.Skip("-short: 102 replies through Pipecat take about a minute")
	}
	t.Parallel()
	py := pipecatPython(t)
	e := streamtest.Espeak(t, 450)
	ids, turns := fixtureTurns(t)
	srv := httptest.NewServer(&openai.Mock{Turns: turns, Speech: e})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "releases.jsonl")
	cmd := exec.Command(py, "example.py", "--llm", srv.URL+"/v1", "--tts", srv.URL+"/v1",
		"--turns", strconv.Itoa(len(turns)), "--releases", out)
	cmd.Dir = pipecatDir
	cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore")
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the Pipecat pipeline: %v\n%s", err, b)
	}
	checkReleases(t, out, ids, "pipecat-pipeline", "pipecat-releases", *recordPipecat)
}

// unmatchedGaps returns the gaps of a longer than 20 ms that no gap of b
// equals within 20 ms in start and length.
func unmatchedGaps(a, b []gapJSON) []gapJSON {
	var out []gapJSON
	for _, g := range a {
		if g.DurationMs <= 20 {
			continue
		}
		found := false
		for _, o := range b {
			if math.Abs(o.AtMs-g.AtMs) <= 20 && math.Abs(o.DurationMs-g.DurationMs) <= 20 {
				found = true
				break
			}
		}
		if !found {
			out = append(out, g)
		}
	}
	return out
}
