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
// either way nothing is lost without a count.
type queue struct {
	export  func(ctx context.Context, spans [][]byte) outcome
	timeout time.Duration
	batch   int
	c       *counts

	block atomic.Bool
	in    chan []byte
	stop  chan struct{}
	done  chan struct{}
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
	q := &queue{export: export, timeout: timeout, batch: batch, c: c,
		in:   make(chan []byte, size),
		stop: make(chan struct{}), done: make(chan struct{})}
	q.block.Store(block)
	q.ctx, q.abort = context.WithCancel(context.Background())
	go q.run()
	return q
}

// add queues a span (the Exporter counted it when it made it): it waits
// for room when the queue blocks, else a full queue drops it.
func (q *queue) add(s []byte) {
	if q.block.Load() {
		select {
		case q.in <- s:
		case <-q.stop:
			q.c.dropped.Add(1)
		}
		return
	}
	select {
	case q.in <- s:
	default:
		q.c.dropped.Add(1)
	}
}

// run sends the batches until Shutdown, then what is left.
func (q *queue) run() {
	defer close(q.done)
	buf := make([][]byte, 0, q.batch) // each an encoded Span
	send := func() {
		if len(buf) > 0 {
			q.send(buf)
			clear(buf)
			buf = buf[:0]
		}
	}
	drain := func() {
		for {
			select {
			case s := <-q.in:
				if buf = append(buf, s); len(buf) == q.batch {
					send()
				}
			default:
				send()
				return
			}
		}
	}
	tick := time.NewTicker(batchDelay)
	defer tick.Stop()
	for {
		select {
		case s := <-q.in:
			if buf = append(buf, s); len(buf) == q.batch {
				send()
			}
		case <-tick.C:
			send()
		case <-q.stop:
			drain()
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
