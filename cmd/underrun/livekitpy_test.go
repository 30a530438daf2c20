//go:build unix

package main

import (
	"bufio"
	"encoding/json"
	"flag"
	"net"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// livekitPyDir is the LiveKit Agents (Python) adapter, a Python package;
// .ci/run makes its virtual environment (.venv) from its lock file.
const livekitPyDir = "../../pipeline/monitor/livekit-agents-py"

var recordLiveKitPy = flag.Bool("livekit-py-releases", false,
	"record LiveKit Python's release points on the chunking fixtures into tts/testdata/chunking/expect/livekit-agents-py.jsonl")

// livekitPython returns the virtual environment's python with
// livekit-agents installed, or skips the test.
func livekitPython(t *testing.T) string {
	t.Helper()
	return venvPython(t, livekitPyDir, "livekit/agents", "livekit-agents")
}

// livekitPyCommand is python running a script of the adapter's package.
func livekitPyCommand(py string, args ...string) *exec.Cmd {
	cmd := exec.Command(py, args...)
	cmd.Dir = livekitPyDir
	cmd.Env = append(os.Environ(), "PYTHONWARNINGS=ignore", "PYTHONDONTWRITEBYTECODE=1")
	return cmd
}

// liveKitPySession runs example.py, a real LiveKit Python AgentSession (its
// args added), against a mock of turns with espeak-ng speaking, reporting to
// a monitor process (its args added), and returns what the adapter's player
// heard of each turn and the monitor's events up to the heard event of each
// of the n turns.
func liveKitPySession(t *testing.T, turns []*pipeline.Turn, n int, args []string, monitorArgs ...string) ([]playerTurn, []heardEvent) {
	t.Helper()
	py := livekitPython(t)
	var player []playerTurn
	evs := adapterSession(t, turns, n, func(llm, monitor, out string) *exec.Cmd {
		return livekitPyCommand(py, append([]string{"example.py", "--llm", llm, "--tts", llm,
			"--monitor", monitor, "--session", "lkpy", "--out", out, "--turns", strconv.Itoa(n)}, args...)...)
	}, &player, monitorArgs...)
	return player, evs
}

// TestLiveKitPyThroughMonitor runs a real livekit-agents 1.8.9 pipeline
// (AgentSession, openai.LLM, openai.TTS behind LiveKit's StreamAdapter and
// blingfire sentence tokenizer; no LiveKit server) against the mock with
// espeak-ng speaking, on four stall patterns (the filler said by
// session.say and by LiveKit's with_filler, and with the player chained to
// a room's output), reporting through the adapter
// into a monitor process: per turn, named by LiveKit's speech id, the
// monitor's heard gaps (from the audio frames) are the adapter's paced
// player's within 20 ms, and the engine given the measured timings predicts
// the gaps heard.
func TestLiveKitPyThroughMonitor(t *testing.T) {
	t.Parallel()
	livekitPython(t)
	const phrase = "One moment, please, while I look that up for you in the weather service of the town."
	for _, c := range []struct {
		name, scenario string // scenario "": the tool-call trace
		args           []string
		minGaps        int
		filler         bool // a phrase is said while the tool runs
	}{
		// the first stall falls while the tokenizer holds the first sentence
		// (a later first audio, no gap), the second mid-sentence
		{name: "mid-sentence", scenario: "testdata/speak/stalls.yaml", minGaps: 1},
		// a 2 s stall on the word after "floor.": the tokenizer holds the
		// finished sentence until the next one starts
		{name: "after-sentence-end", scenario: "testdata/livekit/sentence-end.yaml", minGaps: 1},
		// "Sure, let me check.", get_weather (2 s), "It is sunny."
		{name: "tool-call", args: []string{"--tool", "get_weather", "--tool-ms", "2000"}, minGaps: 1},
		// the same, with a phrase said 300 ms into the tool (session.say)
		{name: "tool-call-filler", args: []string{"--tool", "get_weather", "--tool-ms", "2000", "--say", phrase, "--say-ms", "300"},
			minGaps: 2, filler: true},
		// the same, said by LiveKit's own RunContext.with_filler once the
		// session is idle
		{name: "tool-call-with-filler", args: []string{"--tool", "get_weather", "--tool-ms", "2000", "--with-filler", phrase},
			minGaps: 2, filler: true},
		// the same as session.say, the player passing the frames on to a stand-in for the
		// room's output, which says when playback finished
		{name: "tool-call-filler-chained", args: []string{"--tool", "get_weather", "--tool-ms", "2000", "--say", phrase, "--say-ms", "300", "--chain"},
			minGaps: 2, filler: true},
	} {
		// one after another: the player's stamps are only as good as the
		// machine is idle
		t.Run(c.name, func(t *testing.T) {
			player, evs := liveKitPySession(t, patternTurns(t, c.scenario), 1, c.args, "--stack", "livekit-openai")
			byTurn, call := heardByTurn(evs)
			for _, p := range player {
				ev, ok := byTurn[p.Turn]
				if !ok {
					t.Fatalf("no heard event for turn %s (LiveKit's speech id); got %v", p.Turn, byTurn)
				}
				checkHeard(t, p, ev)
				if len(p.Gaps) < c.minGaps {
					t.Errorf("turn %s: %d gaps heard, want %d at least", p.Turn, len(p.Gaps), c.minGaps)
				}
				// the phrase plays as one stretch, or as more where its own
				// audio came late (a gap the player heard too)
				if (len(ev.Fillers) > 0) != c.filler {
					t.Errorf("turn %s: the monitor heard fillers %+v; want them: %v", p.Turn, ev.Fillers, c.filler)
				}
				for _, f := range ev.Fillers {
					t.Logf("turn %s: filler %.1f ms at %.1f ms", p.Turn, f.DurationMs, f.AtMs)
				}
			}
			if c.scenario == "" {
				if call.Name != "get_weather" || call.Turn != player[0].Turn {
					t.Fatalf("tool_call event %+v, want get_weather in turn %s", call, player[0].Turn)
				}
				for _, g := range byTurn[player[0].Turn].Predicted {
					if g.AtMs > call.AtMs && g.DurationMs > 20 && g.Cause != string(pipeline.CauseTool) {
						t.Errorf("predicted gap %+v after the tool call: cause %q, want the tool call's", g, g.Cause)
					}
				}
			}
		})
	}
}

// TestLiveKitPyMonitorDown: the real pipeline with the monitor unreachable
// plays its turn as without one; the adapter says so once and counts what it
// dropped.
func TestLiveKitPyMonitorDown(t *testing.T) {
	t.Parallel()
	py := livekitPython(t)
	monitorDown(t, func(llm, monitor string) *exec.Cmd {
		return livekitPyCommand(py, "example.py", "--llm", llm, "--tts", llm, "--monitor", monitor)
	})
}

// probeResult is what tests/probe.py says of the client.
type probeResult struct {
	Ready        bool
	ReadyS       float64 `json:"ready_s"`
	SendWorstS   float64 `json:"send_worst_s"`
	LagWorstS    float64 `json:"lag_worst_s"`
	CloseS       float64 `json:"close_s"`
	Sent         int
	Dropped      int
	MostBuffered int `json:"most_buffered"`
	Errors       []string
	Session      string
	GrewKiB      int `json:"grew_kib"`
}

// runProbe runs tests/probe.py against url with args; ready, when given, is
// called once the probe's ready() has returned.
func runProbe(t *testing.T, url string, ready func(), args ...string) probeResult {
	t.Helper()
	py := livekitPython(t)
	cmd := livekitPyCommand(py, append([]string{"tests/probe.py", "--url", url}, args...)...)
	out, err := cmd.StdoutPipe()
	if err != nil {
		t.Fatal(err)
	}
	var stderr strings.Builder
	cmd.Stderr = &stderr
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	done := make(chan struct{})
	defer close(done)
	go func() {
		select {
		case <-done:
		case <-time.After(time.Minute):
			cmd.Process.Kill()
		}
	}()
	var last string
	lines := bufio.NewScanner(out)
	for lines.Scan() {
		last = lines.Text()
		if strings.HasPrefix(last, "ready ") && ready != nil {
			ready()
		}
	}
	if err := cmd.Wait(); err != nil {
		t.Fatalf("the probe: %v\n%s", err, stderr.String())
	}
	var r probeResult
	if err := json.Unmarshal([]byte(last), &r); err != nil {
		t.Fatalf("the probe said %q: %v\n%s", last, err, stderr.String())
	}
	t.Logf("%+v", r)
	return r
}

// TestLiveKitPyClientHostile drives the adapter's connection (the shared
// MonitorClient of pipeline/monitor/pyclient, in the adapter's environment),
// as an agent sends, against monitors that cannot be reached, never answer the
// handshake, stop reading, send what is not a JSON object, send a message
// too large, go away mid-session or refuse every message: send() never
// waits (the longest call and the event loop's longest delay are bounded),
// the buffer stays at its bound, ready() and close() return within their
// timeouts, each failure is reported once, and what could not leave is
// counted as dropped.
func TestLiveKitPyClientHostile(t *testing.T) {
	t.Parallel()
	livekitPython(t)
	stop := make(chan struct{}) // closed before the servers close: see below
	down := httptest.NewServer(nil)
	down.Close()
	silent, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { silent.Close() })
	go func() {
		for {
			c, err := silent.Accept()
			if err != nil {
				return
			}
			go func() { <-stop; c.Close() }() // accepted, never answered
		}
	}()
	cases := []struct {
		name   string
		url    string
		args   []string
		ready  bool
		errors []string // the kinds reported, in order (nil: check says)
		check  func(t *testing.T, r probeResult)
	}{
		{name: "unreachable", url: "ws" + strings.TrimPrefix(down.URL, "http"), errors: []string{"unreachable", "dropped"},
			check: func(t *testing.T, r probeResult) {
				if r.Dropped != 1001 || r.Sent != 0 {
					t.Errorf("sent %d, dropped %d: want all 1001 dropped", r.Sent, r.Dropped)
				}
			}},
		{name: "handshake-never-answered", url: "ws://" + silent.Addr().String(), errors: []string{"unreachable", "dropped"}},
		{name: "stops-reading", ready: true,
			// 20 MB, more than the socket buffers hold
			args: []string{"--messages", "5000", "--size", "4096", "--seconds", "2"},
			url: hostileMonitor(t, func(c *websocket.Conn) {
				<-stop // reads nothing
			}),
			check: func(t *testing.T, r probeResult) {
				// the buffer may fill while a message waits to leave: then
				// queue_full once, before the send timeout gives up
				if e := slices.DeleteFunc(slices.Clone(r.Errors), func(k string) bool { return k == "queue_full" }); !slices.Equal(e, []string{"slow", "dropped"}) || len(r.Errors) > 3 {
					t.Errorf("errors reported %v, want slow and dropped, each once (and queue_full at most once)", r.Errors)
				}
				if r.GrewKiB > 16<<10 {
					t.Errorf("the process grew %d KiB while sending into a monitor that does not read: want the buffer's bound", r.GrewKiB)
				}
			}},
		{name: "not-json", ready: true, errors: []string{"unreadable"}, args: []string{"--messages", "200"},
			url: hostileMonitor(t, func(c *websocket.Conn) {
				for _, m := range []string{"not json", "null", "[1,2]", `"a string"`, "{"} {
					c.WriteMessage(websocket.TextMessage, []byte(m))
				}
				c.WriteMessage(websocket.BinaryMessage, []byte{0, 1, 0xff, 'b'})
				c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","session":"s2"}`))
				drain(c)
			}),
			check: func(t *testing.T, r probeResult) {
				if r.Sent != 201 || r.Dropped != 0 || r.Session != "s2" {
					t.Errorf("sent %d, dropped %d, session %q: want all 201 sent and the hello's session s2", r.Sent, r.Dropped, r.Session)
				}
			}},
		{name: "too-large", ready: true,
			url: hostileMonitor(t, func(c *websocket.Conn) {
				c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","pad":"`+strings.Repeat("x", 2<<20)+`"}`))
				<-stop // and reads nothing
			}),
			check: func(t *testing.T, r probeResult) {
				// the client refuses the message and closes; as the monitor
				// reads nothing, the close may not finish before a send times
				// out: gone or slow, once
				e := slices.DeleteFunc(slices.Clone(r.Errors), func(k string) bool { return k == "queue_full" })
				if !slices.Equal(e, []string{"gone", "dropped"}) && !slices.Equal(e, []string{"slow", "dropped"}) {
					t.Errorf("errors reported %v, want gone or slow once, then dropped (and queue_full at most once)", r.Errors)
				}
			}},
		{name: "goes-away", ready: true, errors: []string{"gone", "dropped"},
			url: hostileMonitor(t, func(c *websocket.Conn) {
				c.ReadMessage()
				c.UnderlyingConn().Close() // no close handshake
			}),
			check: func(t *testing.T, r probeResult) {
				if r.Dropped < 900 {
					t.Errorf("dropped %d, want about all 1001 but the first", r.Dropped)
				}
			}},
		{name: "refuses", ready: true, errors: []string{"refused"}, args: []string{"--messages", "200"},
			url: hostileMonitor(t, func(c *websocket.Conn) {
				for {
					if _, _, err := c.ReadMessage(); err != nil {
						return
					}
					c.WriteMessage(websocket.TextMessage, []byte(`{"type":"error","reason":"rejected","error":"no"}`))
				}
			}),
			check: func(t *testing.T, r probeResult) {
				if r.Sent != 201 {
					t.Errorf("sent %d, want 201: a refusal leaves the connection usable", r.Sent)
				}
			}},
	}
	// (cleanups run last first: this one lets the servers' handlers end
	// before the servers wait for them)
	t.Cleanup(func() { close(stop) })
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			r := runProbe(t, c.url, nil, c.args...)
			if r.Ready != c.ready {
				t.Errorf("ready() said %v, want %v", r.Ready, c.ready)
			}
			// connect timeout 0.5 s, close timeout 0.5 s (tests/probe.py)
			if r.ReadyS > 1.5 || r.CloseS > 1.5 {
				t.Errorf("ready() took %.2f s, close() %.2f s: want each within its 0.5 s timeout (and the machine's load)", r.ReadyS, r.CloseS)
			}
			// (the loop's delay on a loaded machine is other processes' doing;
			// a send that waited on the monitor would hold it for seconds)
			if r.SendWorstS > 0.05 || r.LagWorstS > 1 {
				t.Errorf("send() took up to %.1f ms, the event loop waited up to %.1f ms: send must never wait on the monitor",
					r.SendWorstS*1000, r.LagWorstS*1000)
			}
			if r.MostBuffered > 64 {
				t.Errorf("%d messages buffered at once, past the bound of 64", r.MostBuffered)
			}
			if c.errors != nil && !slices.Equal(r.Errors, c.errors) {
				t.Errorf("errors reported %v, want %v (each once)", r.Errors, c.errors)
			}
			if c.check != nil {
				c.check(t, r)
			}
		})
	}
}

// TestLiveKitPyClientMonitorKilled: a real monitor process killed
// mid-session (SIGKILL, no close handshake) is reported once as gone, and
// what was sent after it counted as dropped; send() never waits.
func TestLiveKitPyClientMonitorKilled(t *testing.T) {
	t.Parallel()
	livekitPython(t)
	mon := startMonitorProcess(t, "--events", "")
	// 100 messages a second for 3 s (within the monitor's rate), the
	// monitor killed 1 s in
	r := runProbe(t, "ws"+strings.TrimPrefix(mon.url, "http"), func() {
		time.AfterFunc(time.Second, func() { mon.cmd.Process.Kill() })
	}, "--messages", "300", "--seconds", "3", "--queue", "4096")
	if !r.Ready || r.Sent == 0 {
		t.Fatalf("%+v: want messages sent before the kill", r)
	}
	if !slices.Equal(r.Errors, []string{"gone", "dropped"}) {
		t.Errorf("errors reported %v, want [gone dropped]: the kill reported once", r.Errors)
	}
	if r.Dropped == 0 || r.Sent+r.Dropped != 301 {
		t.Errorf("sent %d, dropped %d: want every message after the kill dropped, and counted", r.Sent, r.Dropped)
	}
	if r.SendWorstS > 0.05 || r.CloseS > 1.5 {
		t.Errorf("send() took up to %.1f ms, close() %.2f s", r.SendWorstS*1000, r.CloseS)
	}
	if r.LagWorstS > 1 {
		t.Errorf("the event loop waited up to %.1f ms", r.LagWorstS*1000)
	}
}

// TestLiveKitPyReleasePoints records, through the real pipeline (openai.LLM
// streaming each reply of the chunking fixtures token by token, LiveKit's
// StreamAdapter and blingfire sentence tokenizer before openai.TTS), the text
// LiveKit hands to the TTS and the index of the last LLM chunk that had
// arrived, and checks the committed recording
// (tts/testdata/chunking/expect/livekit-agents-py.jsonl) is what LiveKit does;
// -livekit-py-releases rewrites it. tts's TestPresetsAgainstLiveKitPy holds
// the livekit preset to it.
func TestLiveKitPyReleasePoints(t *testing.T) {
	if testing.Short() && !*recordLiveKitPy {
		t.Skip("-short: 102 replies through LiveKit take about a minute")
	}
	t.Parallel()
	py := livekitPython(t)
	e := streamtest.Espeak(t, 450)
	ids, turns := fixtureTurns(t)
	srv := httptest.NewServer(&openai.Mock{Turns: turns, Speech: e})
	defer srv.Close()
	out := filepath.Join(t.TempDir(), "releases.jsonl")
	cmd := livekitPyCommand(py, "example.py", "--llm", srv.URL+"/v1", "--tts", srv.URL+"/v1",
		"--turns", strconv.Itoa(len(turns)), "--releases", out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the LiveKit pipeline: %v\n%s", err, b)
	}
	checkReleases(t, out, ids, "livekit-agents-py", "livekit-py-releases", *recordLiveKitPy)
}

// TestLiveKitPyAdapterFaults runs the adapter on what a plugin or a newer
// LiveKit may give it (tests/faults.py: chunks that are not ChatChunks, a
// tool call without a name, a stream that fails, audio without frames or
// of no sample rate, an app's on_playout that raises): the agent gets every
// item and LiveKit's own error untouched, the turn ends as an error, and
// each failure of the adapter's own is reported once.
func TestLiveKitPyAdapterFaults(t *testing.T) {
	t.Parallel()
	py := livekitPython(t)
	b, err := livekitPyCommand(py, "tests/faults.py").CombinedOutput()
	if err != nil {
		t.Fatalf("tests/faults.py: %v\n%s", err, b)
	}
	var r struct {
		LLM, TTS struct {
			Items int
			Error *string
		}
		Played, Errors, Messages []string
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if err := json.Unmarshal([]byte(lines[len(lines)-1]), &r); err != nil {
		t.Fatalf("tests/faults.py said %s: %v", b, err)
	}
	if r.LLM.Items != 5 || r.LLM.Error == nil || !strings.Contains(*r.LLM.Error, "the provider failed") {
		t.Errorf("the LLM stream gave the agent %d items and error %v: want all 5, then the provider's own error", r.LLM.Items, r.LLM.Error)
	}
	if r.TTS.Items != 3 || r.TTS.Error != nil {
		t.Errorf("the synthesis gave the agent %d items and error %v: want all 3 and none", r.TTS.Items, r.TTS.Error)
	}
	if len(r.Errors) != 2 || !strings.Contains(r.Errors[0], "adapter: ") || !strings.Contains(r.Errors[0], "stream item") ||
		!strings.Contains(r.Errors[1], "on_playout") {
		t.Errorf("errors reported %q: want the nameless tool call's and the callback's, once each", r.Errors)
	}
	want := []string{"turn_start", "chunk", "turn_end/error", "turn_start", "chunk", "turn_end/ok", "speech", "tts", "audio", "playout"}
	if !slices.Equal(r.Messages, want) || !slices.Equal(r.Played, []string{"turn-2"}) {
		t.Errorf("messages %v, played %v: want %v, and turn-2 played", r.Messages, r.Played, want)
	}
}
