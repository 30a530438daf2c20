package loadgen

import (
	"bytes"
	"context"
	"io"
	"net"
	"strconv"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

// loadConn is one load session's connection.
type loadConn struct {
	conn   *websocket.Conn
	raw    net.Conn     // WriteFloor's: to a Sink, no websocket
	echoed atomic.Int64 // as the echo server said
	errors atomic.Int64
	done   chan struct{}
	// deadline is when its write deadline is next moved, in nanoseconds
	// from the start (its sender's)
	deadline int64
}

// loadReadEvery is how often a load session reads what came back: what a
// target sends in half a second (a monitor refusing every message sends an
// error for each) comes in one read(2), not one each, so that reading it
// does not take the load generator's CPU from sending.
const loadReadEvery = 500 * time.Millisecond

// dialPaced is dial for a load session: once its handshake is done, its
// connection's reads wait until loadReadEvery has passed since the one
// before.
func dialPaced(ctx context.Context, base, addr, token string) (*websocket.Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDialContext: loadDialer(base)}
	c, err := monitor.Dial(ctx, d, addr, token)
	if err != nil {
		return nil, err
	}
	if p, ok := c.NetConn().(interface{ startPacing() }); ok {
		p.startPacing()
	}
	return c, nil
}

// pacedDialer dials base through the network poller, as a pacedConn.
func pacedDialer(base string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := monitor.NetDialer(base)
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		c, err := nd(ctx, network, a)
		if err != nil {
			return nil, err
		}
		return &pacedConn{Conn: c, every: loadReadEvery}, nil
	}
}

// pacedConn is a connection whose reads, once paced, come at most once
// per every.
type pacedConn struct {
	net.Conn
	every         time.Duration
	paced         bool
	last          time.Time
	writeDeadline time.Time
}

func (c *pacedConn) startPacing() { c.paced = true }

// SetWriteDeadline passes a deadline on only when it changed: websocket
// sets it before every write, and a load session moves it once a second.
func (c *pacedConn) SetWriteDeadline(t time.Time) error {
	if t.Equal(c.writeDeadline) {
		return nil
	}
	c.writeDeadline = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *pacedConn) SetDeadline(t time.Time) error {
	c.writeDeadline = t
	return c.Conn.SetDeadline(t)
}

func (c *pacedConn) Read(p []byte) (int, error) {
	if d := c.every - time.Since(c.last); d > 0 && c.paced && !c.last.IsZero() {
		time.Sleep(d)
	}
	n, err := c.Conn.Read(p)
	c.last = time.Now()
	return n, err
}

// read takes what comes back: an echo server's count, or a monitor's
// hello and errors. Nothing is allocated per message: its first bytes tell
// what it is, the rest is dropped.
func (c *loadConn) read() {
	defer close(c.done)
	var head [64]byte
	for {
		_, r, err := c.conn.NextReader()
		if err != nil {
			return
		}
		n, _ := io.ReadFull(r, head[:])
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
		msg := head[:n]
		switch {
		case bytes.HasPrefix(msg, []byte(echoPrefix)):
			if k, err := strconv.ParseInt(string(bytes.TrimSuffix(msg[len(echoPrefix):], []byte("}"))), 10, 64); err == nil {
				c.echoed.Store(k)
			}
		case bytes.HasPrefix(msg, []byte(`{"type":"error",`)):
			c.errors.Add(1)
		}
	}
}
