package monitor

import (
	"net"
	"net/http"
	"net/http/httptest"
	"strconv"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// countingConn counts the writes that reach the socket.
type countingConn struct {
	net.Conn
	writes *atomic.Int64
}

func (c countingConn) Write(p []byte) (int, error) {
	c.writes.Add(1)
	return c.Conn.Write(p)
}

// TestSubscriberBurstIsBatched: a burst queued for a subscriber arrives
// whole and in order, in far fewer writes than messages.
func TestSubscriberBurstIsBatched(t *testing.T) {
	t.Parallel()
	const n = 2000
	var writes atomic.Int64
	up := websocket.Upgrader{}
	ts := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		conn, err := up.Upgrade(batchHijacker{w}, r, nil)
		if err != nil {
			return
		}
		bc := conn.NetConn().(*batchConn)
		bc.Conn = countingConn{bc.Conn, &writes}
		sub := &subscriber{conn: conn, q: make(chan []byte, n), done: make(chan struct{})}
		for i := range n { // the burst is queued before the writer starts
			sub.q <- []byte(`{"type":"underrun_started","n":` + strconv.Itoa(i) + `}`)
		}
		close(sub.q)
		sub.write(5 * time.Second)
	}))
	defer ts.Close()
	c := dialT(t, ts, "/", nil)
	for i := range n {
		c.SetReadDeadline(time.Now().Add(5 * time.Second))
		_, data, err := c.ReadMessage()
		if err != nil {
			t.Fatalf("message %d: %v", i, err)
		}
		if want := `{"type":"underrun_started","n":` + strconv.Itoa(i) + `}`; string(data) != want {
			t.Fatalf("message %d = %s, want %s", i, data, want)
		}
	}
	// the going-away close comes after the burst
	if _, _, err := c.ReadMessage(); !websocket.IsCloseError(err, websocket.CloseGoingAway) {
		t.Errorf("after the burst: %v, want a going-away close", err)
	}
	// ~80 KB of frames: a couple of writes, not one each (one more for the close)
	if got := writes.Load(); got > 10 {
		t.Errorf("%d messages took %d writes, want them batched", n, got)
	}
}
