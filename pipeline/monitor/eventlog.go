package monitor

import (
	"io"
	"os"
	"sync"
)

// AsyncWriter hands writes to a goroutine of its own through a bounded
// queue; when the queue is full a write is dropped (and counted) rather
// than waited for. It is for the event log behind Options.Logger: a slow
// terminal or disk must not hold up the guards.
type AsyncWriter struct {
	mu      sync.Mutex
	ch      chan []byte
	closed  bool
	dropped int
	done    chan struct{}
}

// NewAsyncWriter returns an AsyncWriter to w that queues up to queue
// writes.
func NewAsyncWriter(w io.Writer, queue int) *AsyncWriter {
	a := &AsyncWriter{ch: make(chan []byte, queue), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			w.Write(b)
		}
	}()
	return a
}

// Write queues a copy of p.
func (a *AsyncWriter) Write(p []byte) (int, error) {
	b := append([]byte(nil), p...)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return 0, os.ErrClosed
	}
	select {
	case a.ch <- b:
	default:
		a.dropped++
	}
	return len(p), nil
}

// Close writes out what is queued and returns how many writes were dropped.
func (a *AsyncWriter) Close() int {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	n := a.dropped
	a.mu.Unlock()
	<-a.done
	return n
}
