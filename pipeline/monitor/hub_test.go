package monitor

import (
	"bytes"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// serveHub upgrades every request to a subscriber of h.
func serveHub(t *testing.T, h *hub, subs chan<- *subscriber) *httptest.Server {
	up := websocket.Upgrader{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(batchHijacker{w}, r, nil)
		if err != nil {
			return
		}
		sub := newSubscriber(conn, false)
		if h.add(sub, 5*time.Second) {
			subs <- sub
		}
	}))
	t.Cleanup(ts.Close)
	return ts
}

// readBurst reads n messages numbered 0..n-1, in order, then the close.
func readBurst(t *testing.T, c *websocket.Conn, n int, pad string, closeCode int) {
	t.Helper()
	for i := range n {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := burstMessage(i, pad); string(data) != want {
			t.Fatalf("message %d = %.60s..., want %.60s...", i, data, want)
		}
	}
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, closeCode) {
		t.Errorf("after the burst: %v, want close %d", err, closeCode)
	}
}

func burstMessage(i int, pad string) string {
	return `{"type":"underrun_started","n":` + strconv.Itoa(i) + `,"pad":"` + pad + `"}`
}

// TestBatchIsOneWrite: the events a batch of timer calls raises reach a
// subscriber whole and in order, in one write, not one each.
func TestBatchIsOneWrite(t *testing.T) {
	t.Parallel()
	const n = 500
	h := newHub(16, nil)
	subs := make(chan *subscriber, 1)
	c := dialT(t, serveHub(t, h, subs), "/", nil)
	sub := <-subs
	before := sub.bc.writes.Load()
	h.batch(func() {
		for i := range n {
			h.publish([]byte(burstMessage(i, "")), "")
		}
	})
	if w := sub.bc.writes.Load() - before; w != 1 {
		t.Errorf("a batch of %d events took %d writes, want 1", n, w)
	}
	for _, d := range h.close() {
		<-d
	}
	readBurst(t, c, n, "", websocket.CloseGoingAway)
}

// TestBurstIsCoalesced: messages written while the socket is busy go
// out, whole and in order, in a few writes, not one each.
func TestBurstIsCoalesced(t *testing.T) {
	t.Parallel()
	const n = 2000
	server, client := net.Pipe() // no file descriptor: every write waits for the writer
	defer client.Close()
	bc := newBatchConn(server)
	go func() {
		for range bc.wake {
			if bc.drain(5*time.Second) != nil {
				return
			}
		}
	}()
	defer close(bc.wake)
	var want bytes.Buffer
	for i := range n { // the first write blocks the writer until the client reads
		msg := burstMessage(i, "")
		want.WriteString(msg)
		if _, err := bc.Write([]byte(msg)); err != nil {
			t.Fatal(err)
		}
	}
	got := make([]byte, want.Len())
	client.SetReadDeadline(time.Now().Add(5 * time.Second))
	if _, err := io.ReadFull(client, got); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want.Bytes()) {
		t.Error("the bytes arrived changed or out of order")
	}
	// ~80 KB: the first message, then maxBatch at a time
	if w := bc.writes.Load(); w > 4 {
		t.Errorf("%d messages took %d writes, want them coalesced", n, w)
	}
}

// TestSubscriberCatchesUp: what a subscriber's socket cannot take at once
// waits, in order, for its writer while publishing goes on without
// waiting; a subscriber too far behind is dropped with close 1013.
func TestSubscriberCatchesUp(t *testing.T) {
	t.Parallel()
	const n = 1000
	pad := strings.Repeat("x", 8000) // 8 MB in all: more than the socket buffers hold
	for _, tc := range []struct {
		name  string
		queue int
		code  int
	}{{"keeps up", 2 * n, websocket.CloseGoingAway}, {"falls behind", 8, websocket.CloseTryAgainLater}} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dropped := make(chan bool, 1)
			h := newHub(tc.queue, func(page bool) { dropped <- page })
			subs := make(chan *subscriber, 1)
			c := dialT(t, serveHub(t, h, subs), "/", nil)
			sub := <-subs
			var slowest time.Duration
			for i := range n { // the client reads nothing yet
				start := time.Now()
				h.publish([]byte(burstMessage(i, pad)), "")
				slowest = max(slowest, time.Since(start))
			}
			if slowest > time.Second {
				t.Errorf("a publish took %v: it waited for the subscriber", slowest)
			}
			if tc.code == websocket.CloseTryAgainLater {
				select {
				case <-dropped:
				case <-time.After(5 * time.Second):
					t.Fatal("the subscriber too far behind was not dropped")
				}
				// what it was sent before it fell too far behind still
				// arrives, in order, then the close
				got := 0
				for {
					c.SetReadDeadline(time.Now().Add(5 * time.Second))
					_, data, err := c.ReadMessage()
					if err != nil {
						if !websocket.IsCloseError(err, tc.code) {
							t.Errorf("after %d messages: %v, want close %d", got, err, tc.code)
						}
						break
					}
					if want := burstMessage(got, pad); string(data) != want {
						t.Fatalf("message %d = %.60s..., want %.60s...", got, data, want)
					}
					got++
				}
				if got == 0 || got >= n {
					t.Errorf("%d of %d messages arrived before the drop", got, n)
				}
				return
			}
			done := h.close()
			readBurst(t, c, n, pad, tc.code)
			<-done[0]
			if sub.bc.writes.Load() < 2 {
				t.Error("the socket took everything at once: the test proves nothing")
			}
		})
	}
}
