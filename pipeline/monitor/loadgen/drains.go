package loadgen

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"net"
	"sync"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
)

// DrainReport is what an /events subscriber saw of the underrun_started
// events: per event, in milliseconds from the moment the buffer drained,
// when it arrived (the kernel's receive stamp where the system gives one),
// when it was read, how late the monitor's timer fired (late_ms) and when
// the monitor queued it (sent_unix_ns); Dropped says the monitor dropped
// the subscriber as too slow.
type DrainReport struct {
	Arrived []float64 `json:"arrived_ms"`
	Read    []float64 `json:"read_ms"`
	Fired   []float64 `json:"fired_ms"`
	Sent    []float64 `json:"sent_ms"`
	Dropped bool      `json:"dropped"`
}

// DrainWatch is an /events subscriber that times underrun_started events.
type DrainWatch struct {
	conn   *websocket.Conn
	done   chan struct{}
	mu     sync.Mutex
	report DrainReport
}

// WatchDrains subscribes to the events of the monitor at url (its base
// address) until Stop.
func WatchDrains(ctx context.Context, url, token string) (*DrainWatch, error) {
	addr, err := monitor.EventsURL(url)
	if err != nil {
		return nil, err
	}
	conn, err := dialStamped(ctx, url, addr, token)
	if err != nil {
		return nil, err
	}
	w := &DrainWatch{conn: conn, done: make(chan struct{})}
	go w.read()
	return w, nil
}

// WatchDrainsHere is Options.Watch in this process.
func WatchDrainsHere(ctx context.Context, url, token string) (func() (DrainReport, error), error) {
	w, err := WatchDrains(ctx, url, token)
	if err != nil {
		return nil, err
	}
	return func() (DrainReport, error) { return w.Stop(), nil }, nil
}

func (w *DrainWatch) read() {
	defer close(w.done)
	var e struct {
		Type   string  `json:"type"`
		UnixNs int64   `json:"unix_ns"`
		SentNs int64   `json:"sent_unix_ns"`
		LateMs float64 `json:"late_ms"`
	}
	// one buffer for every message, and only those that can be drains
	// decoded: a busy monitor sends thousands of events a second, and the
	// subscriber shares the load's CPUs
	var msg bytes.Buffer
	drain := []byte(`"` + pipeline.EventDrain + `"`)
	for {
		_, r, err := w.conn.NextReader()
		if err == nil {
			msg.Reset()
			_, err = msg.ReadFrom(r)
		}
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code == websocket.CloseTryAgainLater {
				w.mu.Lock()
				w.report.Dropped = true
				w.mu.Unlock()
			}
			return
		}
		read := time.Now().UnixNano()
		arrived := read
		if t, ok := rxstamp.Stamp(w.conn.NetConn()); ok {
			arrived = min(t.UnixNano(), read)
		}
		data := msg.Bytes()
		if !bytes.Contains(data, drain) {
			continue
		}
		e.Type, e.SentNs, e.LateMs = "", 0, 0
		if json.Unmarshal(data, &e) != nil || e.Type != string(pipeline.EventDrain) {
			continue
		}
		ms := func(ns int64) float64 { return float64(ns-e.UnixNs) / 1e6 }
		w.mu.Lock()
		w.report.Arrived = append(w.report.Arrived, ms(arrived))
		w.report.Read = append(w.report.Read, ms(read))
		w.report.Fired = append(w.report.Fired, e.LateMs)
		w.report.Sent = append(w.report.Sent, ms(e.SentNs))
		w.mu.Unlock()
	}
}

// Stop ends the subscription and returns what it saw.
func (w *DrainWatch) Stop() DrainReport {
	w.conn.Close()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.report
}

// dialStamped is monitor.Dial for a connection whose reads carry the kernel's
// receive time (rxstamp.Stamp of its NetConn) where the system gives one.
func dialStamped(ctx context.Context, base, addr, token string) (*websocket.Conn, error) {
	nd := monitor.NetDialer(base)
	big := func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := nd(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		if tc, ok := c.(*net.TCPConn); ok {
			growReceiveBuffer(tc, subscriberReceiveBuffer)
		}
		return c, nil
	}
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDialContext: rxstamp.Dialer(big)}
	return monitor.Dial(ctx, d, addr, token)
}

// subscriberReceiveBuffer is the receive buffer a stamping subscriber
// asks for: seconds of a busy monitor's events. A subscriber that shares
// its CPUs (with monitor load's real-time senders, say) reads late at
// times, and once its socket's buffer is full the kernel drops what
// comes and TCP sends it again a retransmission timeout later (200 ms or
// more): the events' receive stamps would then be late by as much,
// though the monitor sent them on time.
const subscriberReceiveBuffer = 16 << 20
