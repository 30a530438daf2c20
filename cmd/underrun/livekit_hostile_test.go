//go:build unix

package main

import (
	"encoding/json"
	"net"
	"net/http"
	"net/http/httptest"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// hostileReport is what testdata/livekit/hostile.mjs saw.
type hostileReport struct {
	Open         bool
	ReadyMs      float64 `json:"readyMs"`
	CloseMs      float64 `json:"closeMs"`
	Errors       []string
	Dropped      *int
	HeapGrowthMB float64 `json:"heapGrowthMB"`
}

// runHostile runs the adapter's Monitor in node against the monitor at
// url, as an agent reporting its LLM's streams, and returns what it saw.
// An exception thrown into the agent fails the test (node exits 1).
func runHostile(t *testing.T, url string, args ...string) hostileReport {
	t.Helper()
	script, err := filepath.Abs("testdata/livekit/hostile.mjs")
	if err != nil {
		t.Fatal(err)
	}
	node := exec.Command("node", append([]string{"--expose-gc", script, "--monitor", url}, args...)...)
	var stderr strings.Builder
	node.Stderr = &stderr
	timer := time.AfterFunc(2*time.Minute, func() { node.Process.Kill() })
	defer timer.Stop()
	out, err := node.Output()
	if err != nil {
		t.Fatalf("the agent died: %v\nstderr: %s", err, stderr.String())
	}
	var r hostileReport
	if err := json.Unmarshal(out, &r); err != nil {
		t.Fatalf("the agent's report %q: %v\nstderr: %s", out, err, stderr.String())
	}
	t.Logf("the agent saw: %+v", r)
	return r
}

// hostileMonitor is a websocket server that says hello and then does what
// after does with the connection.
func hostileMonitor(t *testing.T, after func(c *websocket.Conn)) string {
	t.Helper()
	up := websocket.Upgrader{}
	var wg sync.WaitGroup
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		wg.Add(1)
		defer wg.Done()
		defer c.Close()
		c.WriteMessage(websocket.TextMessage, []byte(`{"type":"hello","session":"hostile"}`))
		after(c)
	}))
	t.Cleanup(func() { srv.CloseClientConnections(); srv.Close(); wg.Wait() })
	return "ws" + strings.TrimPrefix(srv.URL, "http")
}

// drain reads what the client sends until it goes.
func drain(c *websocket.Conn) {
	for {
		if _, _, err := c.ReadMessage(); err != nil {
			return
		}
	}
}

// TestLiveKitAdapterSurvivesGarbage: a monitor that answers with text that
// is not JSON, null, a number, an array and binary bytes (issue 45: the
// adapter threw in its message handler and the agent exited 1) costs the
// agent nothing: each is reported through onError, as is the monitor's
// own error message, and the session goes on.
func TestLiveKitAdapterSurvivesGarbage(t *testing.T) {
	t.Parallel()
	needLiveKit(t)
	url := hostileMonitor(t, func(c *websocket.Conn) {
		for _, m := range []string{"not json", "null", "42", "[1]", `{"type":"error","reason":"rejected","error":"turn \"x\" is not streaming"}`} {
			c.WriteMessage(websocket.TextMessage, []byte(m))
		}
		c.WriteMessage(websocket.BinaryMessage, []byte{0xff, 0x00, 0x01})
		drain(c)
	})
	r := runHostile(t, url, "--chunks", "50", "--gap-ms", "2")
	if !r.Open {
		t.Errorf("the connection did not open: %+v", r)
	}
	all := strings.Join(r.Errors, "\n")
	for _, want := range []string{"not json", "null", "42", "[1]", "binary", "rejected: turn \"x\" is not streaming"} {
		if !strings.Contains(all, want) {
			t.Errorf("onError was not told of %q; it got:\n%s", want, all)
		}
	}
}

// TestLiveKitAdapterFrozenMonitor: a monitor that takes the connection
// and never answers the handshake; ready() and close() resolve within
// their timeouts (issue 45: neither ever did) and onError says why.
func TestLiveKitAdapterFrozenMonitor(t *testing.T) {
	t.Parallel()
	needLiveKit(t)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var conns []net.Conn
	var mu sync.Mutex
	go func() {
		for {
			c, err := ln.Accept()
			if err != nil {
				return
			}
			mu.Lock()
			conns = append(conns, c) // held open, never answered
			mu.Unlock()
		}
	}()
	t.Cleanup(func() {
		ln.Close()
		mu.Lock()
		defer mu.Unlock()
		for _, c := range conns {
			c.Close()
		}
	})
	r := runHostile(t, "ws://"+ln.Addr().String(), "--connect-timeout", "500", "--close-timeout", "500")
	if r.Open || r.ReadyMs > 5000 || r.CloseMs > 5000 {
		t.Errorf("ready() took %.0f ms (open %v), close() %.0f ms; want each within its 500 ms timeout", r.ReadyMs, r.Open, r.CloseMs)
	}
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "timed out") {
		t.Errorf("onError got %q; want once, the handshake that timed out", r.Errors)
	}
}

// TestLiveKitAdapterBoundedQueue: a monitor that says hello and then
// reads nothing while the agent streams 440,000 chunks (issue 45: the
// adapter's buffers grew by hundreds of MB, 186 MB held here). The adapter
// drops what the socket cannot take, counts it, says so through onError
// once, and close() returns within its timeout.
func TestLiveKitAdapterBoundedQueue(t *testing.T) {
	t.Parallel()
	needLiveKit(t)
	hold := make(chan struct{})
	url := hostileMonitor(t, func(c *websocket.Conn) { <-hold })
	t.Cleanup(func() { close(hold) }) // before the server's cleanup waits for it
	r := runHostile(t, url, "--chunks", "440000", "--close-timeout", "500")
	if r.Dropped == nil || *r.Dropped == 0 {
		t.Fatalf("nothing dropped: %+v", r)
	}
	if r.HeapGrowthMB > 16 {
		t.Errorf("the agent holds %.0f MB more; want the adapter's bound, a few MB", r.HeapGrowthMB)
	}
	if r.CloseMs > 5000 {
		t.Errorf("close() took %.0f ms", r.CloseMs)
	}
	if len(r.Errors) == 0 || !strings.Contains(r.Errors[0], "dropping") {
		t.Errorf("onError got %q; want it told the adapter is dropping messages", r.Errors)
	}
}

// TestLiveKitAdapterMonitorKilled: the monitor's connection is cut in the
// middle of a session (a killed process: no close frame); onError hears
// of it once, the agent goes on, and what it reports after is counted
// as dropped.
func TestLiveKitAdapterMonitorKilled(t *testing.T) {
	t.Parallel()
	needLiveKit(t)
	url := hostileMonitor(t, func(c *websocket.Conn) {
		for range 20 {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
		c.UnderlyingConn().Close() // killed: no close frame
	})
	r := runHostile(t, url, "--chunks", "200", "--gap-ms", "2")
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "connection") {
		t.Errorf("onError got %q; want the lost connection, once", r.Errors)
	}
	if r.Dropped == nil || *r.Dropped == 0 {
		t.Errorf("nothing counted as dropped after the connection was lost: %+v", r)
	}
}
