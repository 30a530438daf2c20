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
// live page. The goroutine that raises a message writes it to the socket
// itself, without waiting (see batchConn); what the socket cannot take at
// once is left to the subscriber's writer. A subscriber more than the
// hub's queue of messages behind is dropped, so a slow reader never slows
// ingestion.
type subscriber struct {
	conn     *websocket.Conn
	bc       *batchConn
	page     bool
	chunks   bool                   // asked for speech chunks (/events?chunks=1)
	mu       sync.Mutex             // one writer of messages at a time (gorilla's rule)
	selected atomic.Pointer[string] // the session a page charts
	dropped  bool                   // removed from the hub (hub.mu held)
	slow     bool                   // dropped for reading too slowly
	quit     chan struct{}          // closed when dropped
	done     chan struct{}          // closed when the connection is finished
}

// newSubscriber makes a subscriber of a connection upgraded through
// batchHijacker.
func newSubscriber(conn *websocket.Conn, page bool) *subscriber {
	return &subscriber{conn: conn, bc: conn.NetConn().(*batchConn), page: page,
		quit: make(chan struct{}), done: make(chan struct{})}
}

// hub fans messages out to subscribers.
type hub struct {
	mu    sync.RWMutex
	subs  map[*subscriber]struct{}
	pages atomic.Int32
	// chunkSubs counts the subscribers that asked for speech chunks
	chunkSubs atomic.Int32
	closed    bool
	queue     int // the most messages a subscriber may be behind
	onDrop    func(page bool)
	// batches is how many batches of timer calls are running (see batch)
	batches atomic.Int32
}

func newHub(queue int, onDrop func(page bool)) *hub {
	return &hub{subs: map[*subscriber]struct{}{}, queue: queue, onDrop: onDrop}
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
	if s.chunks {
		h.chunkSubs.Add(1)
	}
	h.mu.Unlock()
	go s.write(writeTimeout)
	return true
}

// batch runs a batch of timer calls (pipeline.QueueClock): the messages
// raised meanwhile are held and go out together when it ends, one write
// per subscriber, so a burst of events, as when a whole fleet stalls at
// once, costs one system call per subscriber, not one each.
func (h *hub) batch(run func()) {
	h.batches.Add(1)
	run()
	h.batches.Add(-1)
	h.flush()
}

// flush sends what every subscriber holds.
func (h *hub) flush() {
	var broken []*subscriber
	h.mu.RLock()
	for s := range h.subs {
		if s.bc.flush() != nil {
			broken = append(broken, s)
		}
	}
	h.mu.RUnlock()
	for _, s := range broken {
		h.drop(s, false)
	}
}

// maxBatch is the most bytes one write to a subscriber's socket carries.
const maxBatch = 64 << 10

// write is the subscriber's writer: it finishes the writes the socket
// could not take at once, and when the subscriber is dropped it sends the
// close frame and closes the connection. A write that takes longer than
// timeout ends the connection.
func (s *subscriber) write(timeout time.Duration) {
	defer close(s.done)
	defer s.conn.Close()
	for {
		select {
		case <-s.bc.wake:
			if s.bc.drain(timeout) != nil {
				return // the reader sees the closed connection and drops s
			}
		case <-s.quit:
			reason, code := "monitor shutting down", websocket.CloseGoingAway
			if s.slow {
				reason, code = "too slow: queue full", websocket.CloseTryAgainLater
			}
			s.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, reason), time.Now().Add(timeout))
			s.bc.drain(timeout)
			return
		}
	}
}

// batchConn is a subscriber's connection. A write goes straight to the
// socket without waiting (a non-blocking write where the system allows
// one), and what the socket does not take is kept, in order, for the
// subscriber's writer to finish (drain); later writes queue behind it and
// go out together, so a burst of messages to a slow reader costs a few
// system calls, not one each. Between hold and flush, writes collect and
// go out in one.
type batchConn struct {
	net.Conn
	raw  *rawWriter // nil: no write is tried without waiting
	wake chan struct{}

	mu       sync.Mutex // orders every write
	holding  bool
	draining bool   // the writer owns the socket: writes queue in rest
	rest     []byte // bytes held or not yet taken by the socket
	behind   int    // messages queued behind an unfinished write
	err      error
	writes   atomic.Int64 // writes that reached the socket
}

func newBatchConn(c net.Conn) *batchConn {
	return &batchConn{Conn: c, raw: newRawWriter(c), wake: make(chan struct{}, 1)}
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
	return newBatchConn(c), brw, nil
}

// SetWriteDeadline does nothing: writes do not wait, and the writer sets
// its own deadline on the socket (gorilla sets one before every write,
// which would move the writer's).
func (c *batchConn) SetWriteDeadline(time.Time) error { return nil }

// SetDeadline sets the read deadline only (see SetWriteDeadline).
func (c *batchConn) SetDeadline(t time.Time) error { return c.Conn.SetReadDeadline(t) }

// broken reports whether a write has failed.
func (c *batchConn) broken() bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.err != nil
}

// full reports whether limit messages or more wait behind an unfinished
// write.
func (c *batchConn) full(limit int) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	return limit > 0 && c.behind >= limit
}

// Write sends p as far as the socket takes it at once and leaves the
// rest to the writer, or queues p behind an unfinished write; it fails
// once the connection is broken.
func (c *batchConn) Write(p []byte) (int, error) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.err != nil {
		return 0, c.err
	}
	if c.draining {
		c.behind++
	}
	c.rest = append(c.rest, p...)
	if !c.draining && !c.holding {
		c.send()
	}
	return len(p), nil
}

// send writes rest as far as the socket takes it at once and leaves the
// remainder to the writer (mu held, not draining).
func (c *batchConn) send() {
	if c.raw != nil {
		n := 0
		for n < len(c.rest) {
			m := c.raw.tryWrite(c.rest[n:min(len(c.rest), n+maxBatch)])
			if m <= 0 {
				break
			}
			c.writes.Add(1)
			n += m
		}
		c.rest = c.rest[:copy(c.rest, c.rest[n:])]
	}
	if len(c.rest) > 0 {
		c.draining, c.behind = true, 1
		select {
		case c.wake <- struct{}{}:
		default:
		}
	}
}

// hold starts collecting writes.
func (c *batchConn) hold() {
	c.mu.Lock()
	c.holding = true
	c.mu.Unlock()
}

// flush sends what was collected and stops collecting; it reports a
// broken connection.
func (c *batchConn) flush() error {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.holding = false
	if c.err == nil && !c.draining && len(c.rest) > 0 {
		c.send()
	}
	return c.err
}

// drain writes what the socket did not take at once, waiting at most
// timeout for each write, until nothing is left.
func (c *batchConn) drain(timeout time.Duration) error {
	for {
		c.mu.Lock()
		if c.err != nil || len(c.rest) == 0 {
			c.draining, c.behind = false, 0
			if cap(c.rest) > 4*maxBatch { // after a rare huge backlog: let it go
				c.rest = nil
			}
			err := c.err
			c.mu.Unlock()
			return err
		}
		c.draining = true
		buf := c.rest[:min(len(c.rest), maxBatch)]
		c.mu.Unlock()
		c.Conn.SetWriteDeadline(time.Now().Add(timeout))
		n, err := c.Conn.Write(buf)
		c.writes.Add(1)
		c.mu.Lock()
		c.rest = c.rest[:copy(c.rest, c.rest[n:])]
		if err != nil {
			c.err = err
		}
		c.mu.Unlock()
	}
}

// publish sends msg to every subscriber, and to the pages that chart
// session, and drops those too far behind or broken.
func (h *hub) publish(msg []byte, session string) {
	var failed []*subscriber
	h.mu.RLock()
	for s := range h.subs {
		if s.page {
			if sel := s.selected.Load(); sel == nil || *sel != session {
				continue
			}
		}
		if !h.write(s, msg) {
			failed = append(failed, s)
		}
	}
	h.mu.RUnlock()
	for _, s := range failed {
		h.drop(s, !s.bc.broken())
	}
}

// write hands msg to s's connection; false when s is broken or too far
// behind. While a batch runs the message is held for the batch's flush
// (or sent here, when every batch has ended meanwhile).
func (h *hub) write(s *subscriber, msg []byte) bool {
	if s.bc.full(h.queue) {
		return false
	}
	batching := h.batches.Load() > 0
	s.mu.Lock()
	if batching {
		s.bc.hold()
	}
	err := s.conn.WriteMessage(websocket.TextMessage, msg)
	s.mu.Unlock()
	if err == nil && batching && h.batches.Load() == 0 {
		err = s.bc.flush()
	}
	return err == nil
}

// send sends msg to one subscriber, dropping it when it is too far behind
// or broken.
func (h *hub) send(s *subscriber, msg []byte) {
	h.mu.RLock()
	ok := s.dropped || h.write(s, msg)
	h.mu.RUnlock()
	if !ok {
		h.drop(s, !s.bc.broken())
	}
}

// drop removes s and has its writer close it; slow says it fell behind.
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
	if s.chunks {
		h.chunkSubs.Add(-1)
	}
	close(s.quit)
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
