package otlp

import (
	"context"
	"sync"
	"sync/atomic"
	"time"
)

// DefaultQueue is how many ended spans wait for export at most, and
// DefaultBatch how many go in one export request.
const (
	DefaultQueue = 2048
	DefaultBatch = 512
)

// batchDelay is the longest a span waits for its batch to fill before
// the batch goes as it is.
const batchDelay = time.Second

// giveUpAfter is how many exports in a row may fail before the rest of a
// run's spans are counted as failed without being sent: an endpoint that
// is down must not hold the run's end for a timeout per batch.
const giveUpAfter = 2

// Delivery counts what became of an Exporter's spans. Spans is every span
// made; each ends up in one of the others, or is still waiting.
type Delivery struct {
	// Spans were made, one per turn exported.
	Spans int64
	// Delivered were taken by the backend.
	Delivered int64
	// Dropped found the queue full (a live run only: an offline run waits).
	Dropped int64
	// Failed went in an export the backend did not take, or were given up
	// after exports kept failing.
	Failed int64
	// Refused went to a backend that takes no traces (it answered 404 or
	// 405): not sent again, and no loss.
	Refused int64
}

// Waiting returns the spans neither delivered nor lost yet: in the queue
// or in an export under way. After Shutdown they are the ones its wait
// gave up on.
func (d Delivery) Waiting() int64 {
	return d.Spans - d.Delivered - d.Dropped - d.Failed - d.Refused
}

// Lost returns the spans that did not reach a backend that takes them.
func (d Delivery) Lost() int64 { return d.Spans - d.Delivered - d.Refused }

// counts are the Delivery counters, updated as spans move.
type counts struct {
	spans, delivered, dropped, failed, refused atomic.Int64
}

func (c *counts) delivery() Delivery {
	return Delivery{Spans: c.spans.Load(), Delivered: c.delivered.Load(), Dropped: c.dropped.Load(),
		Failed: c.failed.Load(), Refused: c.refused.Load()}
}

// outcome is what one export did with its spans.
type outcome int

const (
	delivered outcome = iota
	failed
	refused // the backend takes no traces: stop sending them
)

// queue holds the spans made: they wait in a bounded queue and leave in
// batches from one goroutine, and every span is counted. When the queue
// is full, an offline run waits (block) and a live one drops the span;
// either way nothing is lost without a count. Adding a span takes a lock
// and wakes the sender only when a batch is full (a channel send per
// span woke it every time).
type queue struct {
	export  func(ctx context.Context, spans [][]byte) outcome
	timeout time.Duration
	batch   int
	size    int
	c       *counts

	mu      sync.Mutex
	room    *sync.Cond // signalled when the sender takes spans, or stops
	pending [][]byte   // each an encoded Span, at most size
	block   bool
	stopped bool

	wake chan struct{} // a batch is full (capacity 1)
	stop chan struct{}
	done chan struct{}
	// abort ends the export under way when Shutdown's wait runs out
	ctx   context.Context
	abort context.CancelFunc
	once  sync.Once

	// of the goroutine that sends
	failedInARow int
	givenUp      bool // exports kept failing: the rest is not sent
	refused      bool // the backend takes no traces: the rest is not sent
}

func newQueue(size, batch int, timeout time.Duration, block bool, c *counts,
	export func(ctx context.Context, spans [][]byte) outcome) *queue {
	q := &queue{export: export, timeout: timeout, batch: batch, size: size, c: c, block: block,
		wake: make(chan struct{}, 1), stop: make(chan struct{}), done: make(chan struct{})}
	q.room = sync.NewCond(&q.mu)
	q.ctx, q.abort = context.WithCancel(context.Background())
	go q.run()
	return q
}

// setBlock makes the queue wait for room (the kept turns at Shutdown wait
// whatever the run).
func (q *queue) setBlock() {
	q.mu.Lock()
	q.block = true
	q.mu.Unlock()
}

// add queues a span (the Exporter counted it when it made it): it waits
// for room when the queue blocks, else a full queue drops it; once the
// sender stopped, it is dropped.
func (q *queue) add(s []byte) {
	q.mu.Lock()
	for len(q.pending) >= q.size && q.block && !q.stopped {
		q.room.Wait()
	}
	if len(q.pending) >= q.size || q.stopped {
		q.mu.Unlock()
		q.c.dropped.Add(1)
		return
	}
	q.pending = append(q.pending, s)
	full := len(q.pending) >= q.batch
	q.mu.Unlock()
	if full {
		select {
		case q.wake <- struct{}{}:
		default:
		}
	}
}

// take removes up to a batch of the waiting spans into buf.
func (q *queue) take(buf [][]byte) [][]byte {
	q.mu.Lock()
	defer q.mu.Unlock()
	n := min(len(q.pending), q.batch)
	buf = append(buf[:0], q.pending[:n]...)
	rest := copy(q.pending, q.pending[n:])
	clear(q.pending[rest:])
	q.pending = q.pending[:rest]
	q.room.Broadcast()
	return buf
}

// run sends the batches until Shutdown, then what is left.
func (q *queue) run() {
	defer close(q.done)
	buf := make([][]byte, 0, q.batch)
	// sendAll sends what waits, a batch at a time (full only, unless all)
	sendAll := func(all bool) {
		for {
			q.mu.Lock()
			n := len(q.pending)
			q.mu.Unlock()
			if n == 0 || !all && n < q.batch {
				return
			}
			buf = q.take(buf)
			q.send(buf)
			clear(buf)
		}
	}
	tick := time.NewTicker(batchDelay)
	defer tick.Stop()
	for {
		select {
		case <-q.wake:
			sendAll(false)
		case <-tick.C:
			sendAll(true)
		case <-q.stop:
			sendAll(true)
			q.mu.Lock()
			q.stopped = true
			q.room.Broadcast()
			q.mu.Unlock()
			sendAll(true) // what came in meanwhile
			return
		}
	}
}

// send exports one batch and counts how it went. Once the backend
// refused traces, or exports kept failing, later batches are counted
// without being sent.
func (q *queue) send(spans [][]byte) {
	n := int64(len(spans))
	switch {
	case q.refused:
		q.c.refused.Add(n)
		return
	case q.givenUp:
		q.c.failed.Add(n)
		return
	}
	ctx, cancel := context.WithTimeout(q.ctx, q.timeout)
	out := q.export(ctx, spans)
	cancel()
	switch out {
	case delivered:
		q.failedInARow = 0
		q.c.delivered.Add(n)
	case refused:
		q.c.refused.Add(n)
		q.refused = true
	default:
		q.c.failed.Add(n)
		q.failedInARow++
		q.givenUp = q.failedInARow >= giveUpAfter
	}
}

// shutdown sends everything queued and stops; when ctx ends first, the
// export under way is abandoned and what is left stays uncounted
// (Delivery.Waiting).
func (q *queue) shutdown(ctx context.Context) error {
	q.once.Do(func() { close(q.stop) })
	select {
	case <-q.done:
		return nil
	case <-ctx.Done():
		// the export under way ends at once, and so do the rest, counted
		// as failed
		q.abort()
		select {
		case <-q.done:
		case <-time.After(time.Second):
		}
		return ctx.Err()
	}
}
