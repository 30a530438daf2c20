package monitor

import (
	"context"
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// tokenConfig speaks every token for audio, released at once, with the
// given synthesizer latency for every token (a request each) and RTF 0:
// the buffer is easy to reason about.
func tokenConfig(audio, ttfa time.Duration) pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.Policy, _ = tts.ParsePolicy("token")
	cfg.TokenAudio = audio
	cfg.Voice.TokenAudio = audio
	cfg.Synth = tts.Synth{Mode: tts.ModeRequest, TTFA: ttfa}
	return cfg
}

// startServer runs a monitor behind a loopback httptest server; both stop
// when the test ends.
// serve runs s.Serve on a free loopback port, with drain its grace at
// shutdown, and returns the address and a stop that cancels it and gives
// Serve's error (the test's end stops it too).
func serve(t *testing.T, s *Server, drain time.Duration) (addr string, stop func() error) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	served := make(chan error, 1)
	go func() { served <- s.Serve(ctx, ln, drain) }()
	stop = sync.OnceValue(func() error { cancel(); return <-served })
	t.Cleanup(func() { stop() })
	return ln.Addr().String(), stop
}

func startServer(t *testing.T, opts Options) (*Server, *httptest.Server) {
	t.Helper()
	if opts.Config.Policy == nil {
		opts.Config = tokenConfig(100*time.Millisecond, 0)
	}
	s, err := New(opts)
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	t.Cleanup(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		defer cancel()
		s.Shutdown(ctx)
		ts.Close()
	})
	return s, ts
}

// wsURL turns the test server's address and a path into a websocket URL.
func wsURL(ts *httptest.Server, path string) string {
	return "ws" + strings.TrimPrefix(ts.URL, "http") + path
}

// dialT opens a websocket or fails the test.
func dialT(t *testing.T, ts *httptest.Server, path string, h http.Header) *websocket.Conn {
	t.Helper()
	c, resp, err := websocket.DefaultDialer.Dial(wsURL(ts, path), h)
	if err != nil {
		status := ""
		if resp != nil {
			status = resp.Status
		}
		t.Fatalf("dial %s: %v %s", path, err, status)
	}
	t.Cleanup(func() { c.Close() })
	return c
}

// ingest opens a session and reads its hello.
func ingest(t *testing.T, ts *httptest.Server, session string) *websocket.Conn {
	t.Helper()
	path := "/ingest"
	if session != "" {
		path += "?session=" + session
	}
	c := dialT(t, ts, path, nil)
	m := readMsg(t, c)
	if m["type"] != "hello" {
		t.Fatalf("first message %v, want hello", m)
	}
	return c
}

// sendT sends a text message.
func sendT(t *testing.T, c *websocket.Conn, msg string) {
	t.Helper()
	if err := c.WriteMessage(websocket.TextMessage, []byte(msg)); err != nil {
		t.Fatalf("send %s: %v", msg, err)
	}
}

// eventually is the deadline of a wait for something that must come: a
// second before the test's own deadline (none without one), so that a busy
// machine makes a test slow, not wrong.
func eventually(t *testing.T) time.Time {
	deadline, ok := t.Deadline()
	if !ok {
		return time.Time{}
	}
	return deadline.Add(-time.Second)
}

// readMsg reads one JSON message.
func readMsg(t *testing.T, c *websocket.Conn) map[string]any {
	t.Helper()
	c.SetReadDeadline(eventually(t))
	_, data, err := c.ReadMessage()
	if err != nil {
		t.Fatalf("read: %v", err)
	}
	var m map[string]any
	if err := json.Unmarshal(data, &m); err != nil {
		t.Fatalf("message %s: %v", data, err)
	}
	return m
}

// events collects what an /events subscriber receives.
type events struct {
	mu   sync.Mutex
	list []map[string]any
	done chan struct{}
}

func subscribe(t *testing.T, ts *httptest.Server) *events {
	t.Helper()
	return subscribeTo(t, ts, "/events")
}

// subscribeTo subscribes at path (with its query).
func subscribeTo(t *testing.T, ts *httptest.Server, path string) *events {
	t.Helper()
	c := dialT(t, ts, path, nil)
	if m := readMsg(t, c); m["type"] != "hello" {
		t.Fatalf("first event %v, want hello", m)
	}
	c.SetReadDeadline(time.Time{})
	e := &events{done: make(chan struct{})}
	go func() {
		defer close(e.done)
		for {
			_, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			var m map[string]any
			if json.Unmarshal(data, &m) == nil {
				e.mu.Lock()
				e.list = append(e.list, m)
				e.mu.Unlock()
			}
		}
	}()
	return e
}

// wait returns the first event of the type for which match holds, once it
// comes.
func (e *events) wait(t *testing.T, typ string, match func(map[string]any) bool) map[string]any {
	t.Helper()
	deadline := eventually(t)
	for {
		e.mu.Lock()
		for _, m := range e.list {
			if m["type"] == typ && (match == nil || match(m)) {
				e.mu.Unlock()
				return m
			}
		}
		e.mu.Unlock()
		if !deadline.IsZero() && time.Now().After(deadline) {
			t.Fatalf("no %s event before the test's deadline", typ)
		}
		time.Sleep(5 * time.Millisecond)
	}
}

// count returns how many events of a type came.
func (e *events) count(typ string) int {
	e.mu.Lock()
	defer e.mu.Unlock()
	n := 0
	for _, m := range e.list {
		if m["type"] == typ {
			n++
		}
	}
	return n
}

// waitReceived waits until the server has accepted n messages.
func waitReceived(t *testing.T, s *Server, n int64) {
	t.Helper()
	deadline := eventually(t)
	for s.Stats().Received < n {
		if !deadline.IsZero() && time.Now().After(deadline) {
			t.Fatalf("server accepted %d messages, want %d", s.Stats().Received, n)
		}
		time.Sleep(time.Millisecond)
	}
}
