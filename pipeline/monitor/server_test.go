package monitor

import (
	"bytes"
	"context"
	"errors"
	"io"
	"math"
	"net"
	"net/http"
	"net/http/httptest"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

func TestMalformedMessagesKeepConnection(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, Options{})
	c := ingest(t, ts, "")
	bad := []struct {
		msg, reason, want string
	}{
		{`not json`, reasonMalformed, "not JSON"},
		{`[1,2]`, reasonMalformed, "JSON object"},
		{`{"turn":"t1"}`, reasonMalformed, `"type" is missing`},
		{`{"type":"nope","turn":"t1"}`, reasonMalformed, "want turn_start"},
		{`{"type":"chunk"}`, reasonMalformed, `"turn" is missing`},
		{`{"type":"chunk","turn":"t1","tokens":-2}`, reasonMalformed, "non-negative integer"},
		{`{"type":"chunk","turn":"t1","t_ms":"soon"}`, reasonMalformed, "milliseconds"},
		{`{"type":"turn_end","turn":"t1","status":"fine"}`, reasonMalformed, "want ok, error or cancelled"},
		{`{"type":"tts","text":"hi"}`, reasonMalformed, `"audio_ms" is missing`},
		{`{"type":"chunk","turn":"t9","text":"x"}`, reasonRejected, "not streaming"},
		{`{"type":"tts","text":"   ","audio_ms":10}`, reasonRejected, "no speech"},
	}
	for _, b := range bad {
		sendT(t, c, b.msg)
		m := readMsg(t, c)
		if m["type"] != "error" || m["reason"] != b.reason || !strings.Contains(m["error"].(string), b.want) {
			t.Errorf("%s: got %v, want an error (%s) saying %q", b.msg, m, b.reason, b.want)
		}
	}
	// the connection is still usable
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":"Hello"}`)
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`) // twice: rejected
	m := readMsg(t, c)
	if m["reason"] != reasonRejected || !strings.Contains(m["error"].(string), "already streaming") {
		t.Errorf("second turn_start: got %v", m)
	}
	sendT(t, c, `{"type":"turn_end","turn":"t1"}`)
	waitReceived(t, s, 3)
	if got, want := s.Stats().Refused, int64(len(bad)+1); got != want {
		t.Errorf("refused %d, want %d", got, want)
	}
}

func TestOversizedMessageRefused(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, Options{MaxMessage: 1024})
	c := ingest(t, ts, "")
	sendT(t, c, `{"type":"turn_start","turn":"t1","pad":"`+strings.Repeat("x", 2048)+`"}`)
	c.SetReadDeadline(time.Now().Add(2 * time.Second))
	_, _, err := c.ReadMessage()
	var ce *websocket.CloseError
	if !errors.As(err, &ce) || ce.Code != websocket.CloseMessageTooBig {
		t.Fatalf("after an oversized message: %v, want close 1009", err)
	}
}

func TestUnderrunLiveEvents(t *testing.T) {
	t.Parallel()
	// each token plays 100 ms; a token, then 300 ms of silence, then another
	s, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 0)})
	ev := subscribe(t, ts)
	c := ingest(t, ts, "alice")
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":"Hi","t_ms":0}`)
	drain := ev.wait(t, "underrun_started", nil)
	if drain["session"] != "alice" || drain["turn"] != "t1" {
		t.Errorf("drain event %v", drain)
	}
	if at := drain["at_ms"].(float64); math.Abs(at-100) > 1e-3 {
		t.Errorf("drain at %.1f ms, want 100 ms after the token", at)
	}
	// the event came when the buffer drained, not with a later message:
	// the next token comes only after the test has seen it (how soon after
	// the drain it went out is measured by monitor load, not here)
	if sent, at := drain["sent_unix_ns"].(float64), drain["unix_ns"].(float64); sent < at {
		t.Errorf("drain event sent before the buffer drained: %v < %v", sent, at)
	}
	rows := s.Sessions()
	if len(rows) != 1 || rows[0].State != StateUnderrun {
		t.Errorf("table %+v, want alice in underrun", rows)
	}
	time.Sleep(150 * time.Millisecond)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":" there"}`)
	u := ev.wait(t, "underrun", nil)
	if u["class"] != "interruption" || u["duration_ms"].(float64) < 150 {
		t.Errorf("underrun %v, want an interruption of at least 150 ms", u)
	}
	sendT(t, c, `{"type":"turn_end","turn":"t1"}`)
	turn := ev.wait(t, "turn", nil)
	if turn["status"] != "ok" || turn["interruptions"].(float64) != 1 || turn["tokens"].(float64) != 2 {
		t.Errorf("turn summary %v", turn)
	}
	rows = s.Sessions()
	if rows[0].Interruptions != 1 || rows[0].Turns != 1 || rows[0].State != StateIdle || rows[0].TTFTMs == nil {
		t.Errorf("table after the turn %+v", rows[0])
	}
}

// manualSession drives one session on a monitor whose clock the test moves.
type manualSession struct {
	t     *testing.T
	s     *Server
	clock *pipeline.ManualClock
	c     *websocket.Conn
	sent  int64
}

func (m *manualSession) send(msg string) {
	m.t.Helper()
	sendT(m.t, m.c, msg)
	m.sent++
	waitReceived(m.t, m.s, m.sent)
}

func TestBargeInIsNotAnUnderrun(t *testing.T) {
	t.Parallel()
	// A token plays 0.05-0.15 s; the next arrives at 0.25 s and is ready at
	// 0.30 s: a 150 ms gap, an interruption. A barge-in at 0.26 s cuts it
	// to a 110 ms glitch; one at 0.10 s, before the drain, leaves no gap.
	tests := []struct {
		name        string
		end         string
		at          time.Duration
		status      string
		gaps, inter int
	}{
		{"turn end", `{"type":"turn_end","turn":"t1"}`, 260 * time.Millisecond, "ok", 1, 1},
		{"barge-in during the gap", `{"type":"barge_in","turn":"t1"}`, 260 * time.Millisecond, "barge_in", 1, 0},
		{"barge-in while speaking", `{"type":"barge_in","turn":"t1"}`, 260 * time.Millisecond, "barge_in", 0, 0},
	}
	for i, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
			s, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 50*time.Millisecond), Clock: clock})
			ev := subscribe(t, ts)
			m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "")}
			m.send(`{"type":"turn_start","turn":"t1"}`)
			m.send(`{"type":"chunk","turn":"t1","text":"a"}`)
			if i == 2 {
				clock.Advance(100 * time.Millisecond)
				m.send(`{"type":"barge_in","turn":"t1"}`)
			} else {
				clock.Advance(250 * time.Millisecond)
				m.send(`{"type":"chunk","turn":"t1","text":" b"}`)
				clock.Advance(10 * time.Millisecond)
				m.send(tc.end)
			}
			turn := ev.wait(t, "turn", nil)
			gaps := turn["glitches"].(float64) + turn["interruptions"].(float64)
			if turn["status"] != tc.status || int(gaps) != tc.gaps || int(turn["interruptions"].(float64)) != tc.inter {
				t.Errorf("turn summary %v, want status %s, %d gaps, %d interruptions", turn, tc.status, tc.gaps, tc.inter)
			}
			if got := ev.count("underrun"); got != tc.gaps {
				t.Errorf("%d underrun events, want %d", got, tc.gaps)
			}
			if tc.gaps == 1 {
				u := ev.wait(t, "underrun", nil)
				want := 150.0
				if tc.status == "barge_in" {
					want = 110
				}
				if d := u["duration_ms"].(float64); d < want-0.01 || d > want+0.01 {
					t.Errorf("underrun of %.3f ms, want %.0f", d, want)
				}
			}
		})
	}
}

// TestToolCallIsNotAnUnderrun: a turn's stream stops for a tool call
// after its first token. The drain says the silence is the tool's, the
// gap comes as a tool_silence event and not as an underrun, the turn is
// good, the metrics count it apart, and the recording keeps the call, so
// that analysing it finds the same silence.
func TestToolCallIsNotAnUnderrun(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	var rec testkit.Buffer
	clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	cfg := tokenConfig(100*ms, 50*ms)
	cfg.Filler, _ = pipeline.ParseFiller("keepalive:200ms")
	s, ts := startServer(t, Options{Config: cfg, Clock: clock, Record: &rec})
	ev := subscribe(t, ts)
	m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "kitchen")}
	m.send(`{"type":"turn_start","turn":"t1"}`)
	m.send(`{"type":"chunk","turn":"t1","text":"Sure"}`) // plays 50-150 ms
	clock.Advance(10 * ms)
	m.send(`{"type":"tool_call","turn":"t1","name":"get_weather"}`)
	clock.Advance(1000 * ms)
	m.send(`{"type":"tool_result","turn":"t1"}`)
	clock.Advance(10 * ms)
	m.send(`{"type":"chunk","turn":"t1","text":" sunny"}`) // ready at 1070 ms
	clock.Advance(10 * ms)
	m.send(`{"type":"turn_end","turn":"t1"}`)

	if call := ev.wait(t, "tool_call", nil); call["name"] != "get_weather" || call["at_ms"] != 10.0 {
		t.Errorf("tool_call event %v, want get_weather at 10 ms", call)
	}
	if d := ev.wait(t, "underrun_started", nil); d["cause"] != string(pipeline.CauseTool) || d["at_ms"] != 150.0 {
		t.Errorf("underrun_started %v, want the tool call's at 150 ms", d)
	}
	// the keep-alive sound plays from 200 ms into it to its end
	if g := ev.wait(t, "tool_silence", nil); math.Abs(g["duration_ms"].(float64)-920) > 1e-6 ||
		g["filler_covered_ms"] != 720.0 || g["filler_late_ms"] != 0.0 {
		t.Errorf("tool_silence %v, want 920 ms, 720 ms of it covered by the filler", g)
	}
	turn := ev.wait(t, "turn", nil)
	if turn["interruptions"] != 0.0 || turn["glitches"] != 0.0 || turn["tool_silences"] != 1.0 || math.Abs(turn["tool_silence_ms"].(float64)-920) > 1e-6 {
		t.Errorf("turn summary %v, want no underrun and one 920 ms tool silence", turn)
	}
	if n := ev.count("underrun"); n != 0 {
		t.Errorf("%d underrun events, want none", n)
	}
	for name, want := range map[string]float64{
		"underrun_tool_silences_total":        1,
		"underrun_tool_silence_seconds_total": 0.92,
		"underrun_interruptions_total":        0,
		"underrun_glitches_total":             0,
		"underrun_good_turns_total":           1,
	} {
		if got := testCounter(t, s, name); math.Abs(got-want) > 1e-9 {
			t.Errorf("%s = %v, want %v", name, got, want)
		}
	}

	m.c.Close()
	waitFor(t, func() bool { return s.Stats().Sessions == 0 })
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if err := s.Shutdown(ctx); err != nil {
		t.Fatal(err)
	}
	turns := testkit.All(t, trace.NewNativeReader(strings.NewReader(rec.String()), "rec.jsonl").Next)
	if len(turns) != 1 {
		t.Fatalf("%d turns recorded, want 1:\n%s", len(turns), rec.String())
	}
	want := []pipeline.ToolCall{{At: 10 * ms, Duration: 1000 * ms, Name: "get_weather"}}
	if got := turns[0].ToolCalls; !slices.Equal(got, want) {
		t.Errorf("recorded tool calls %+v, want %+v", got, want)
	}
	p, err := pipeline.Play(cfg, turns[0])
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Underruns) != 1 || p.Underruns[0].Cause != pipeline.CauseTool || p.Underruns[0].Duration != 920*ms {
		t.Errorf("the recording analyses to %+v, want one 920 ms tool-call silence", p.Underruns)
	}
}

// TestToolMessagesRefused: a tool_result without a call running, a tool
// call timed before the last chunk, and a tool name too long are refused,
// saying why.
func TestToolMessagesRefused(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, Options{})
	c := ingest(t, ts, "")
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	for _, tc := range []struct{ msg, reason, want string }{
		{`{"type":"tool_result","turn":"t1"}`, reasonRejected, `turn "t1" has no tool call running`},
		{`{"type":"chunk","turn":"t1","text":"a","t_ms":5}`, "", ""},
		{`{"type":"tool_call","turn":"t1","t_ms":2}`, reasonRejected, "tool call: t_ms 2.000 is before the last chunk's 5.000"},
		{`{"type":"tool_call","turn":"t1","name":"` + strings.Repeat("x", MaxName+1) + `"}`, reasonMalformed, `field "name": want at most 256 bytes`},
		{`{"type":"tool_call","turn":"t2"}`, reasonRejected, "not streaming"},
	} {
		sendT(t, c, tc.msg)
		if tc.want == "" {
			continue
		}
		m := readMsg(t, c)
		if m["type"] != "error" || m["reason"] != tc.reason || !strings.Contains(m["error"].(string), tc.want) {
			t.Errorf("%s: answered %v, want an error (%s) saying %q", tc.msg, m, tc.reason, tc.want)
		}
	}
}

func TestTTSFactsRescaleVoice(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	s, ts := startServer(t, Options{Config: cfg})
	ev := subscribe(t, ts)
	var sent int64
	speech := func(session string, facts bool) float64 {
		c := ingest(t, ts, session)
		if facts {
			// the real voice is twice as slow as the model
			model := cfg.Voice.Duration("Good morning to you.")
			sendT(t, c, `{"type":"tts","text":"Good morning to you.","audio_ms":`+ftoa(2*pipeline.Millis(model))+`}`)
			sent++
		}
		sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
		sendT(t, c, `{"type":"chunk","turn":"t1","text":"The weather is mild today."}`)
		sendT(t, c, `{"type":"turn_end","turn":"t1"}`)
		sent += 3
		waitReceived(t, s, sent)
		m := ev.wait(t, "turn", func(m map[string]any) bool { return m["session"] == session })
		return m["speech_ms"].(float64)
	}
	plain, scaled := speech("model", false), speech("real", true)
	if r := scaled / plain; r < 1.99 || r > 2.01 {
		t.Errorf("speech %.1f ms with facts, %.1f ms without: ratio %.3f, want 2", scaled, plain, r)
	}
	for _, r := range s.Sessions() {
		if r.Session == "real" && (r.VoiceScale < 1.99 || r.VoiceScale > 2.01) {
			t.Errorf("voice scale %v, want 2", r.VoiceScale)
		}
	}
}

func ftoa(x float64) string { return strconv.FormatFloat(x, 'f', 3, 64) }

func itoa(i int) string { return strconv.Itoa(i) }

// testCounter reads one sample of the monitor's metrics, named as the
// exposition format writes it.
func testCounter(t *testing.T, s *Server, name string) float64 {
	t.Helper()
	rr := httptest.NewRecorder()
	s.ServeHTTP(rr, httptest.NewRequest("GET", "http://127.0.0.1/metrics", nil)) // a loopback Host
	for _, line := range strings.Split(rr.Body.String(), "\n") {
		if v, ok := strings.CutPrefix(line, name+" "); ok {
			x, err := strconv.ParseFloat(v, 64)
			if err != nil {
				t.Fatalf("metric %s: %v", name, err)
			}
			return x
		}
	}
	t.Fatalf("no metric %s", name)
	return 0
}

func TestAuthAndOrigin(t *testing.T) {
	t.Parallel()
	_, ts := startServer(t, Options{Token: "s3cret", Origins: []string{"https://ops.example.com"}})
	tests := []struct {
		name   string
		path   string
		header http.Header
		want   int
	}{
		{"no token", "/ingest", nil, http.StatusUnauthorized},
		{"wrong token", "/ingest", http.Header{"Authorization": {"Bearer nope"}}, http.StatusUnauthorized},
		{"bearer", "/ingest", http.Header{"Authorization": {"Bearer s3cret"}}, http.StatusSwitchingProtocols},
		{"query token", "/events?token=s3cret", nil, http.StatusSwitchingProtocols},
		{"foreign origin", "/live?token=s3cret", http.Header{"Origin": {"https://evil.example.com"}}, http.StatusForbidden},
		{"allowed origin", "/live?token=s3cret", http.Header{"Origin": {"https://ops.example.com"}}, http.StatusSwitchingProtocols},
		{"own origin", "/live?token=s3cret", http.Header{"Origin": {ts.URL}}, http.StatusSwitchingProtocols},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			c, resp, _ := websocket.DefaultDialer.Dial(wsURL(ts, tc.path), tc.header)
			if c != nil {
				c.Close()
			}
			if resp == nil || resp.StatusCode != tc.want {
				t.Errorf("status %v, want %d", resp, tc.want)
			}
		})
	}
	for path, want := range map[string]int{"/metrics": 401, "/metrics?token=s3cret": 200, "/app.js": 200, "/": 401, "/?token=s3cret": 200} {
		resp, err := http.Get(ts.URL + path)
		if err != nil {
			t.Fatal(err)
		}
		resp.Body.Close()
		if resp.StatusCode != want {
			t.Errorf("GET %s: %d, want %d", path, resp.StatusCode, want)
		}
	}
}

func TestRateLimit(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, Options{Rate: 5, Burst: 3})
	c := ingest(t, ts, "")
	for range 10 {
		sendT(t, c, `{"type":"tts","text":"Hello.","audio_ms":300}`)
	}
	limited := 0
	for s.Stats().Received+s.Stats().Refused < 10 {
		time.Sleep(time.Millisecond)
	}
	for range int(s.Stats().Refused) {
		if m := readMsg(t, c); m["reason"] == reasonRate {
			limited++
		}
	}
	if limited < 5 || s.Stats().Received > 5 {
		t.Errorf("%d of 10 messages rate-limited, %d accepted; want about 7 and 3", limited, s.Stats().Received)
	}
}

func TestSlowSubscriberDoesNotDelayOthers(t *testing.T) {
	t.Parallel()
	// a write timeout the test cannot outrun on a busy machine: the stuck
	// subscriber's close frame waits for it to read, however late
	const writeTimeout = time.Minute
	s, ts := startServer(t, Options{Queue: 256, WriteTimeout: writeTimeout})
	// a subscriber that never reads
	stuck, _, err := websocket.DefaultDialer.Dial(wsURL(ts, "/events"), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer stuck.Close()
	// and one that reads everything
	fast := dialT(t, ts, "/events", nil)
	if m := readMsg(t, fast); m["type"] != "hello" {
		t.Fatalf("first event %v, want hello", m)
	}
	fast.SetReadDeadline(time.Time{})
	var got atomic.Int64
	go func() {
		for {
			if _, _, err := fast.ReadMessage(); err != nil {
				return
			}
			got.Add(1)
		}
	}()
	for s.hub.count() < 2 {
		time.Sleep(time.Millisecond)
	}
	const n = 1500
	pad := strings.Repeat("x", 16000)
	var slowest time.Duration
	for i := range n {
		start := time.Now()
		s.publishEvent(eventMessage{Type: "test", Session: pad, Token: ptr(i)})
		slowest = max(slowest, time.Since(start))
		if i%4 == 3 {
			time.Sleep(time.Millisecond) // 24 MB in under a second
		}
	}
	if slowest >= writeTimeout/2 { // a blocking publish waits for the write timeout
		t.Errorf("a publish took %v: the stuck subscriber held up the monitor", slowest)
	}
	waitFor(t, func() bool { return got.Load() >= n })
	if got.Load() != n {
		t.Errorf("the reading subscriber got %d of %d events", got.Load(), n)
	}
	if got := testCounter(t, s, `underrun_subscribers_dropped_total{kind="events"}`); got != 1 {
		t.Errorf("%v subscribers dropped, want the stuck one", got)
	}
	// read what was queued for it, up to its close
	stuck.SetReadDeadline(eventually(t))
	for {
		_, _, err := stuck.ReadMessage()
		var ce *websocket.CloseError
		if errors.As(err, &ce) {
			if ce.Code != websocket.CloseTryAgainLater {
				t.Errorf("the stuck subscriber was closed with %d, want 1013", ce.Code)
			}
			break
		}
		if err != nil {
			t.Errorf("the stuck subscriber got %v, want close 1013", err)
			break
		}
	}
}

func TestShutdownUnderLoadKeepsRecording(t *testing.T) {
	t.Parallel()
	var rec testkit.Buffer
	s, err := New(Options{Config: tokenConfig(40*time.Millisecond, 0), Record: &rec, FlushInterval: 10 * time.Millisecond})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	const sessions = 20
	var wg sync.WaitGroup
	closed := make(chan int, sessions)
	for i := range sessions {
		c := ingest(t, ts, "")
		wg.Add(1)
		go func() {
			defer wg.Done()
			for turn := 0; ; turn++ {
				id := `"t` + itoa(turn) + `"`
				if c.WriteMessage(websocket.TextMessage, []byte(`{"type":"turn_start","turn":`+id+`}`)) != nil {
					break
				}
				for k := range 30 {
					msg := `{"type":"chunk","turn":` + id + `,"text":" w` + itoa(k) + `"}`
					if c.WriteMessage(websocket.TextMessage, []byte(msg)) != nil {
						closed <- i
						return
					}
					time.Sleep(2 * time.Millisecond)
				}
				if c.WriteMessage(websocket.TextMessage, []byte(`{"type":"turn_end","turn":`+id+`}`)) != nil {
					break
				}
			}
			closed <- i
		}()
		go func() {
			for {
				if _, _, err := c.ReadMessage(); err != nil {
					return
				}
			}
		}()
	}
	// shut down mid-stream, once 300 messages are in (however long that
	// takes), and wait for the shutdown to end
	waitReceived(t, s, 300)
	if err := s.Shutdown(context.Background()); err != nil {
		t.Fatalf("shutdown: %v", err)
	}
	wg.Wait()
	// every turn in the recording is whole, and holds every chunk accepted
	r := trace.NewNativeReader(bytes.NewReader(rec.Bytes()), "recording")
	turns, chunks := 0, 0
	for _, turn := range testkit.All(t, r.Next) {
		if turn.Status != pipeline.StatusOK && turn.Status != pipeline.StatusIncomplete {
			t.Errorf("turn %s ended %s", turn.ID, turn.Status)
		}
		turns++
		chunks += len(turn.Chunks)
	}
	got := testCounter(t, s, `underrun_messages_total{type="chunk"}`)
	if float64(chunks) != got || chunks == 0 {
		t.Errorf("recording holds %d chunks, the monitor accepted %v", chunks, got)
	}
	if started := testCounter(t, s, `underrun_messages_total{type="turn_start"}`); float64(turns) != started {
		t.Errorf("recording holds %d turns, %v were started", turns, started)
	}
	if !strings.HasSuffix(rec.String(), "}\n") {
		t.Error("recording does not end with a whole record")
	}
}

func TestMetricsExposed(t *testing.T) {
	t.Parallel()
	s, ts := startServer(t, Options{})
	ev := subscribe(t, ts)
	c := ingest(t, ts, "")
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":"one"}`)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":" two"}`)
	sendT(t, c, `{"type":"turn_end","turn":"t1"}`)
	ev.wait(t, "turn", nil)
	resp, err := http.Get(ts.URL + "/metrics")
	if err != nil {
		t.Fatal(err)
	}
	body, _ := io.ReadAll(resp.Body)
	resp.Body.Close()
	for _, want := range []string{
		"underrun_itl_seconds_count 1", "underrun_ttft_seconds_count 1", "underrun_tpot_seconds_count 1",
		"underrun_ttfa_seconds_count 1", "underrun_underrun_seconds_bucket", `underrun_turns_total{status="ok"} 1`,
		"underrun_glitches_total 0", "underrun_interruptions_total 0", "underrun_live_sessions 1",
	} {
		if !bytes.Contains(body, []byte(want)) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	_ = s
}

func TestBufferedAudioInTable(t *testing.T) {
	t.Parallel()
	clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 0), Clock: clock})
	m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "a")}
	m.send(`{"type":"turn_start","turn":"t1"}`)
	m.send(`{"type":"chunk","turn":"t1","text":"one"}`)
	m.send(`{"type":"chunk","turn":"t1","text":" two"}`)
	for _, step := range []struct {
		advance  time.Duration
		buffered float64
		state    string
	}{
		{30 * time.Millisecond, 170, StateStreaming},
		{100 * time.Millisecond, 70, StateStreaming},
		{100 * time.Millisecond, 0, StateUnderrun},
	} {
		clock.Advance(step.advance)
		rows := s.Sessions()
		if len(rows) != 1 || rows[0].BufferedMs != step.buffered || rows[0].State != step.state {
			t.Errorf("after %v more: %+v, want %.0f ms buffered, %s", step.advance, rows, step.buffered, step.state)
		}
	}
}

// brokenDisk is a recording destination that fails every write.
type brokenDisk struct{}

func (brokenDisk) Write([]byte) (int, error) { return 0, errors.New("disk full") }

// TestRecordingErrorLoggedOnce: a recording that breaks is reported once,
// not on every flush.
func TestRecordingErrorLoggedOnce(t *testing.T) {
	t.Parallel()
	var log testkit.Buffer
	_, ts := startServer(t, Options{Record: brokenDisk{}, FlushInterval: 2 * time.Millisecond, Logger: zerolog.New(&log)})
	c := ingest(t, ts, "s")
	sendT(t, c, `{"type":"turn_start","turn":"t"}`)
	sendT(t, c, `{"type":"chunk","turn":"t","text":"hi","tokens":1}`)
	time.Sleep(100 * time.Millisecond) // some 50 flushes
	if n := strings.Count(log.String(), "disk full"); n != 1 {
		t.Errorf("the recording error was logged %d times, want once:\n%s", n, log.String())
	}
}

// failingListener passes the first connection through, then fails every
// Accept once fail is closed.
type failingListener struct {
	net.Listener
	n    atomic.Int32
	fail chan struct{}
}

var errListenerBroke = errors.New("listener broke")

func (l *failingListener) Accept() (net.Conn, error) {
	if l.n.Add(1) == 1 {
		return l.Listener.Accept()
	}
	<-l.fail
	return nil, errListenerBroke
}

// TestServeListenerFailureEndsInGrace: when the listener fails, Serve
// returns its error within the grace time, even with a session whose
// client never answers the close.
func TestServeListenerFailureEndsInGrace(t *testing.T) {
	t.Parallel()
	s, err := New(Options{Config: tokenConfig(50*time.Millisecond, 0)})
	if err != nil {
		t.Fatal(err)
	}
	tcp, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := &failingListener{Listener: tcp, fail: make(chan struct{})}
	done := make(chan error, 1)
	go func() { done <- s.Serve(context.Background(), ln, 200*time.Millisecond) }()
	c, _, err := websocket.DefaultDialer.Dial("ws://"+tcp.Addr().String()+"/ingest?session=s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	if m := readMsg(t, c); m["type"] != "hello" { // the session is open
		t.Fatalf("first message %v, want hello", m)
	}
	// from here the client never reads: the monitor's close goes unanswered
	close(ln.fail)
	select {
	case err := <-done:
		if !errors.Is(err, errListenerBroke) {
			t.Errorf("Serve = %v, want the listener's error", err)
		}
	case <-time.After(10 * time.Second):
		t.Fatal("Serve did not return after the listener failed")
	}
}

// gateWriter blocks every write until it is opened.
type gateWriter struct {
	open, waiting chan struct{}
	once          sync.Once
	mu            sync.Mutex
	buf           bytes.Buffer
}

func (g *gateWriter) Write(p []byte) (int, error) {
	g.once.Do(func() { close(g.waiting) })
	<-g.open
	g.mu.Lock()
	defer g.mu.Unlock()
	return g.buf.Write(p)
}

// TestIngestTimedByArrival: on the wall clock, Serve times a message by
// when its bytes came, not by when the monitor got to read them. The
// recording's first write blocks (a slow disk) and the recorder may hold
// no backlog behind it, which holds the session's reader up while chunk c
// arrives; it is read at least 100 ms later. On loopback the bytes arrive
// (and are stamped) while their write runs, so c must be recorded between
// its send's bounds, however busy the machine; b (read at once, or with c
// where the machine held the reader off) no earlier than it was sent.
func TestIngestTimedByArrival(t *testing.T) {
	t.Parallel()
	if !rxstamp.Supported() {
		t.Skip("this system gives no kernel receive stamps")
	}
	testkit.KeepStamps(t)
	gate := &gateWriter{open: make(chan struct{}), waiting: make(chan struct{})}
	s, err := New(Options{Config: tokenConfig(100*time.Millisecond, 0), Record: gate, FlushInterval: 300 * time.Millisecond, recordBacklog: 1})
	if err != nil {
		t.Fatal(err)
	}
	addr, stop := serve(t, s, 2*time.Second)
	c, _, err := websocket.DefaultDialer.Dial("ws://"+addr+"/ingest?session=s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(msg string) {
		t.Helper()
		if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	took := func(n int64) {
		t.Helper()
		waitFor(t, func() bool { return s.Stats().Received >= n })
	}
	send(`{"type":"turn_start","turn":"t"}`)
	send(`{"type":"chunk","turn":"t","text":"a"}`)
	took(2)
	<-gate.waiting // the first write now holds the recording
	bSent := time.Now()
	send(`{"type":"chunk","turn":"t","text":" b"}`) // read, then held up recording it
	time.Sleep(50 * time.Millisecond)
	cSent := time.Now()
	send(`{"type":"chunk","turn":"t","text":" c"}`) // arrives while the reader is held up
	cSentEnd := time.Now()
	time.Sleep(100 * time.Millisecond) // a hold, not a wait: c is read after it
	close(gate.open)                   // from here the reader gets to c
	took(4)
	c.Close()
	if err := stop(); err != nil {
		t.Fatal(err)
	}
	var at []time.Time
	var start int64
	for _, line := range strings.Split(gate.buf.String(), "\n") {
		field := func(name string) int64 {
			i := strings.Index(line, `"`+name+`":`)
			if i < 0 {
				t.Fatalf("no %s in %s", name, line)
			}
			i += len(name) + 3
			ns, err := strconv.ParseInt(line[i:i+strings.IndexAny(line[i:], ",}")], 10, 64)
			if err != nil {
				t.Fatal(err)
			}
			return ns
		}
		switch {
		case strings.Contains(line, `"type":"turn"`):
			start = field("start_unix_ns")
		case strings.Contains(line, `"type":"chunk"`):
			at = append(at, time.Unix(0, start+field("t_ns")))
		}
	}
	if len(at) != 3 || start == 0 {
		t.Fatalf("recorded %d chunks, want 3:\n%s", len(at), gate.buf.String())
	}
	// the wall clock's readings here against the kernel's stamps: well
	// within this
	const clocks = time.Millisecond
	if at[2].Before(cSent.Add(-clocks)) || at[2].After(cSentEnd.Add(clocks)) {
		t.Errorf("chunk c recorded %v after its send began and %v before it ended, want between (when it came, not when it was read)",
			at[2].Sub(cSent), cSentEnd.Sub(at[2]))
	}
	if at[1].Before(bSent.Add(-clocks)) || at[1].After(at[2]) {
		t.Errorf("chunk b recorded %v after its send began, c %v: want b after its send and no later than c", at[1].Sub(bSent), at[2].Sub(bSent))
	}
}
