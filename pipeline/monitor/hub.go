package monitor

import (
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

// write sends the queue to the websocket until the queue is closed or a
// write fails.
func (s *subscriber) write(timeout time.Duration) {
	defer close(s.done)
	defer s.conn.Close()
	for msg := range s.q {
		s.conn.SetWriteDeadline(time.Now().Add(timeout))
		if err := s.conn.WriteMessage(websocket.TextMessage, msg); err != nil {
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
