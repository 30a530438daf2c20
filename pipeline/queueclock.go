package pipeline

import (
	"container/heap"
	"math"
	"sync"
	"sync/atomic"
	"time"
)

// QueueClock is the wall clock with a timer queue of its own, for a busy
// server: the functions given to AfterFunc run on a goroutine of the
// clock's (which exists only while calls are pending) or in any goroutine
// that calls RunDue, whichever comes first.
//
// time.AfterFunc starts a goroutine per call; when many calls come due
// together, the Go scheduler runs one of them next and queues the rest
// behind every goroutine already runnable (in a server, every connection
// the network poller has just woken), so under load they start
// milliseconds late. Here one runtime timer wakes one goroutine, which the
// scheduler runs next, and it makes every due call in one go. A runtime
// timer still belongs to one of the runtime's threads, which the operating
// system may keep off the CPU while the others run; a server that calls
// RunDue as it takes each message makes the calls on whichever thread is
// running.
//
// As with time.AfterFunc, calls can run at the same time as one another
// (made by different goroutines); the calls one goroutine makes run in
// time order. They should be quick: each holds up the calls after it in
// its batch.
type QueueClock struct {
	epoch time.Time
	batch func(run func())
	next  atomic.Int64 // when the earliest pending call is due, ns since epoch (MaxInt64: none)

	mu      sync.Mutex
	q       timerQueue
	seq     uint64
	timer   *time.Timer   // the runtime timer the clock's goroutine waits on
	armed   time.Duration // when it fires (since epoch); 0 while the goroutine is not waiting
	running bool          // the clock's goroutine exists
}

// NewQueueClock returns a QueueClock. batch, when not nil, is given each
// batch of more than one due call to make (it must call run once): a
// server can hold what the calls send and send it together when run
// returns.
func NewQueueClock(batch func(run func())) *QueueClock {
	c := &QueueClock{epoch: time.Now(), batch: batch}
	c.next.Store(math.MaxInt64)
	return c
}

// Now returns time.Now().
func (c *QueueClock) Now() time.Time { return time.Now() }

// AfterFunc calls f once d has passed, unless the returned Timer is
// stopped first.
func (c *QueueClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Since(c.epoch)
	t := &queueTimer{c: c, when: now + max(d, 0), seq: c.seq, f: f}
	c.seq++
	heap.Push(&c.q, t)
	c.scheduled(t, now)
	return t
}

// scheduled publishes the queue's new earliest call after t was queued or
// moved, and sees that the clock's goroutine wakes for t (mu held).
func (c *QueueClock) scheduled(t *queueTimer, now time.Duration) {
	c.storeNext()
	switch {
	case !c.running:
		c.running = true
		go c.run()
	case c.armed > 0 && t.when < c.armed:
		// the goroutine waits for a later call: wake it sooner
		c.armed = t.when
		c.timer.Reset(t.when - now)
	}
}

// RunDue makes the calls that are due, in the calling goroutine, and
// reports whether there were any. It costs a clock reading when none is
// due.
func (c *QueueClock) RunDue() bool {
	if time.Since(c.epoch) < time.Duration(c.next.Load()) {
		return false
	}
	return c.runDue()
}

// runDue takes the due calls off the queue and makes them.
func (c *QueueClock) runDue() bool {
	var buf [8]*queueTimer
	due := buf[:0]
	c.mu.Lock()
	now := time.Since(c.epoch)
	for len(c.q) > 0 && c.q[0].when <= now {
		due = append(due, heap.Pop(&c.q).(*queueTimer))
	}
	c.storeNext()
	if len(due) > 0 && c.armed > 0 && c.armed <= now && len(c.q) > 0 {
		// the clock's goroutine is about to wake for the calls taken
		// here: let it sleep on (waking it would push the goroutines
		// these calls wake out of the scheduler's next slot)
		c.armed = c.q[0].when
		c.timer.Reset(c.armed - now)
	}
	c.mu.Unlock()
	run := func() {
		for _, t := range due {
			t.f()
		}
	}
	if len(due) > 1 && c.batch != nil {
		c.batch(run)
	} else {
		run()
	}
	return len(due) > 0
}

// storeNext publishes the earliest pending call's time (mu held).
func (c *QueueClock) storeNext() {
	if len(c.q) == 0 {
		c.next.Store(math.MaxInt64)
		return
	}
	c.next.Store(int64(c.q[0].when))
}

// run makes the calls as they come due, and returns when none is pending.
func (c *QueueClock) run() {
	for {
		c.runDue()
		c.mu.Lock()
		if len(c.q) == 0 {
			c.running = false
			c.mu.Unlock()
			return
		}
		now := time.Since(c.epoch)
		wait := c.q[0].when - now
		if wait <= 0 {
			c.mu.Unlock()
			continue
		}
		c.armed = now + wait
		if c.timer == nil {
			c.timer = time.NewTimer(wait)
		} else {
			c.timer.Reset(wait)
		}
		c.mu.Unlock()
		<-c.timer.C
		c.mu.Lock()
		c.armed = 0
		c.mu.Unlock()
	}
}

// queueTimer is one pending call of a QueueClock.
type queueTimer struct {
	c     *QueueClock
	when  time.Duration // since the clock's epoch
	seq   uint64
	f     func()
	index int // in the queue; -1 once out of it
}

// Stop removes the call if it is still pending.
func (t *queueTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	if t.index < 0 {
		return false
	}
	heap.Remove(&c.q, t.index)
	c.storeNext()
	if len(c.q) == 0 && c.armed > 0 {
		// the clock's goroutine waits for the call just stopped: wake it
		// to end now, not at that call's time (an hour away, for a guard)
		c.armed = max(time.Since(c.epoch), 1)
		c.timer.Reset(0)
	}
	return true
}

// Reset schedules the call for d from now (Timer.Reset): a pending call
// is moved, any other queued again. Among calls due at the same time it
// comes after those already queued, as a new one would.
func (t *queueTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	now := time.Since(c.epoch)
	t.when, t.seq = now+max(d, 0), c.seq
	c.seq++
	pending := t.index >= 0
	if pending {
		heap.Fix(&c.q, t.index)
	} else {
		heap.Push(&c.q, t)
	}
	c.scheduled(t, now)
	return pending
}

// timerQueue is a QueueClock's pending calls, the earliest on top (ties in
// the order they were made).
type timerQueue []*queueTimer

func (q timerQueue) Len() int { return len(q) }
func (q timerQueue) Less(i, j int) bool {
	if q[i].when != q[j].when {
		return q[i].when < q[j].when
	}
	return q[i].seq < q[j].seq
}
func (q timerQueue) Swap(i, j int) {
	q[i], q[j] = q[j], q[i]
	q[i].index, q[j].index = i, j
}
func (q *timerQueue) Push(x any) {
	t := x.(*queueTimer)
	t.index = len(*q)
	*q = append(*q, t)
}
func (q *timerQueue) Pop() any {
	old := *q
	t := old[len(old)-1]
	old[len(old)-1] = nil
	t.index = -1
	*q = old[:len(old)-1]
	return t
}

var (
	_ Clock      = (*QueueClock)(nil)
	_ ResetTimer = (*queueTimer)(nil)
)
