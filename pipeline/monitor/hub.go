package monitor

import (
	"bufio"
	"net"
	"net/http"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
)

// subscriber is one websocket that watches: an /events subscriber or a
// live page. Messages wait in a bounded queue; a subscriber whose queue is
// full is dropped, so a slow reader never slows ingestion.
type subscriber struct {
	conn     *websocket.Conn
	page     bool
	q        chan []byte
	selected atomic.Pointer[string] // the session a page charts
	dropped  bool                   // removed from the hub (hub.mu held)
	slow     bool                   // dropped for reading too slowly
	done     chan struct{}          // closed when the writer has finished
}

// hub fans messages out to subscribers.
type hub struct {
	mu     sync.RWMutex
	subs   map[*subscriber]struct{}
	pages  atomic.Int32
	closed bool
	onDrop func(page bool)
}

func newHub(onDrop func(page bool)) *hub {
	return &hub{subs: map[*subscriber]struct{}{}, onDrop: onDrop}
}

// add registers a subscriber and starts its writer; false after close.
func (h *hub) add(s *subscriber, writeTimeout time.Duration) bool {
	h.mu.Lock()
	if h.closed {
		h.mu.Unlock()
		return false
	}
	h.subs[s] = struct{}{}
	if s.page {
		h.pages.Add(1)
	}
	h.mu.Unlock()
	go s.write(writeTimeout)
	return true
}

// maxBatch is the most bytes of queued messages a subscriber's writer
// sends in one write.
const maxBatch = 64 << 10

// write sends the queue to the websocket until the queue is closed or a
// write fails. Messages queued while one is written go out together, in
// one write to the socket (see batchConn): a burst of events, as when a
// whole fleet stalls at once, costs one system call, not one each.
func (s *subscriber) write(timeout time.Duration) {
	defer close(s.done)
	defer s.conn.Close()
	bc, _ := s.conn.NetConn().(*batchConn)
	for msg := range s.q {
		s.conn.SetWriteDeadline(time.Now().Add(timeout))
		bc.hold()
		err := s.conn.WriteMessage(websocket.TextMessage, msg)
		for err == nil && len(s.q) > 0 && bc.held() < maxBatch {
			err = s.conn.WriteMessage(websocket.TextMessage, <-s.q)
		}
		if ferr := bc.flush(); err == nil {
			err = ferr
		}
		if err != nil {
			// the reader sees the closed connection and removes s
			s.conn.Close()
			for range s.q {
			}
			return
		}
	}
	reason, code := "monitor shutting down", websocket.CloseGoingAway
	if s.slow {
		reason, code = "too slow: queue full", websocket.CloseTryAgainLater
	}
	s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(timeout))
}

// batchConn is a subscriber's connection: between hold and flush, what
// is written to it collects in memory and goes out in one write. The nil
// *batchConn does nothing (every write goes straight out).
type batchConn struct {
	net.Conn
	mu      sync.Mutex // orders every write, held or not
	holding bool
	buf     []byte
}

// batchHijacker hands the websocket upgrader a batchConn.
type batchHijacker struct{ http.ResponseWriter }

// Hijack takes over the connection, wrapped in a batchConn.
func (h batchHijacker) Hijack() (net.Conn, *bufio.ReadWriter, error) {
	hj, ok := h.ResponseWriter.(http.Hijacker)
	if !ok {
		return nil, nil, http.ErrNotSupported
	}
	c, brw, err := hj.Hijack()
	if err != nil {
		return nil, nil, err
	}
	return &batchConn{Conn: c}, brw, nil
}

// Write writes p, or keeps it for flush while holding.
func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.holding {
		c.buf = append(c.buf, p...)
		return len(p), nil
	}
	return c.Conn.Write(p)
}

// hold starts collecting writes.
func (c *batchConn) hold() {
	if c == nil {
		return
	}
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// held returns how many bytes are collected.
func (c *batchConn) held() int {
	if c == nil {
		return 0
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.buf)
}

// flush writes what was collected, in one write, and stops collecting.
func (c *batchConn) flush() error {
	if c == nil {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	if len(c.buf) == 0 {
		return nil
	}
	_, err := c.Conn.Write(c.buf)
	if cap(c.buf) > 4*maxBatch { // a rare huge message: let it go
		c.buf = nil
	}
	c.buf = c.buf[:0]
	return err
}

// publish queues msg for every subscriber, and for the pages that chart
// session, and drops those whose queue is full.
func (h *hub) publish(msg []byte, session string) {
	var full []*subscriber
	h.mu.RLock()
	for s := range h.subs {
		if s.page {
			if sel := s.selected.Load(); sel == nil || *sel != session {
				continue
			}
		}
		select {
		case s.q <- msg:
		default:
			full = append(full, s)
		}
	}
	h.mu.RUnlock()
	for _, s := range full {
		h.drop(s, true)
	}
}

// send queues msg for one subscriber, dropping it when its queue is full.
func (h *hub) send(s *subscriber, msg []byte) {
	h.mu.RLock()
	ok := !s.dropped
	full := false
	if ok {
		select {
		case s.q <- msg:
		default:
			full = true
		}
	}
	h.mu.RUnlock()
	if full {
		h.drop(s, true)
	}
}

// drop removes s and closes its queue; slow says it fell behind.
func (h *hub) drop(s *subscriber, slow bool) {
	h.mu.Lock()
	if s.dropped {
		h.mu.Unlock()
		return
	}
	s.dropped, s.slow = true, slow
	delete(h.subs, s)
	if s.page {
		h.pages.Add(-1)
	}
	close(s.q)
	h.mu.Unlock()
	if slow && h.onDrop != nil {
		h.onDrop(s.page)
	}
}

// count returns how many subscribers and pages are connected.
func (h *hub) count() int {
	h.mu.RLock()
	defer h.mu.RUnlock()
	return len(h.subs)
}

// pageList returns the live pages.
func (h *hub) pageList() []*subscriber {
	h.mu.RLock()
	defer h.mu.RUnlock()
	var out []*subscriber
	for s := range h.subs {
		if s.page {
			out = append(out, s)
		}
	}
	return out
}

// close drops every subscriber (they are sent a going-away close) and
// refuses new ones; it returns their writers' done channels.
func (h *hub) close() []chan struct{} {
	h.mu.Lock()
	h.closed = true
	subs := make([]*subscriber, 0, len(h.subs))
	for s := range h.subs {
		subs = append(subs, s)
	}
	h.mu.Unlock()
	done := make([]chan struct{}, 0, len(subs))
	for _, s := range subs {
		h.drop(s, false)
		done = append(done, s.done)
	}
	return done
}
