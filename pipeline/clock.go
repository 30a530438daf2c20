package pipeline

import (
	"context"
	"sort"
	"sync"
	"time"
)

// Clock is the Guard's only view of time: it tells the time and runs a
// function after a delay. RealClock is the wall clock; QueueClock is the
// wall clock with one timer queue, for a busy server; ManualClock is a
// clock that moves only when told to, for tests and virtual-time runs.
type Clock interface {
	// Now returns the current time.
	Now() time.Time
	// AfterFunc calls f in its own goroutine (a ManualClock: in the
	// goroutine that moves the clock; a QueueClock: on the clock's
	// goroutine or in one calling RunDue) once d has passed, unless the
	// returned Timer is stopped first.
	AfterFunc(d time.Duration, f func()) Timer
}

// Timer is a pending call made by Clock.AfterFunc.
type Timer interface {
	// Stop prevents the call if it has not run yet, and reports whether
	// it did so. A call already running, or about to run, is not stopped.
	Stop() bool
}

// ResetTimer is a Timer that can be set again, so that a caller that
// re-arms often (the Guard, on every chunk) need not make a new one each
// time. The timers of RealClock, QueueClock and ManualClock are
// ResetTimers; a Clock whose timers are not is used through AfterFunc.
type ResetTimer interface {
	Timer
	// Reset schedules the call for d from now, whether it is pending, has
	// run or was stopped, and reports whether it was pending (it is moved,
	// not doubled). As with Stop, a call already running, or about to
	// run, still runs: the call can then come once more than armed, and
	// early, so the function must check that its time has come.
	Reset(d time.Duration) bool
}

// RealClock returns the wall clock: time.Now (with its monotonic reading)
// and time.AfterFunc.
func RealClock() Clock { return realClock{} }

type realClock struct{}

func (realClock) Now() time.Time { return time.Now() }

func (realClock) AfterFunc(d time.Duration, f func()) Timer { return time.AfterFunc(d, f) }

var (
	_ Clock      = realClock{}
	_ Clock      = (*ManualClock)(nil)
	_ ResetTimer = (*manualTimer)(nil)
	_ ResetTimer = (*time.Timer)(nil)
)

// ManualClock is a Clock that stands still until Advance or Set moves it;
// the timers that come due then run, in time order, in the goroutine that
// moves the clock, each with the clock set to its due time. It is safe for
// concurrent use; a timer function may call the clock (Now, AfterFunc,
// Stop) but must not move it.
type ManualClock struct {
	mu     sync.Mutex
	now    time.Time
	seq    uint64
	timers []*manualTimer
}

// NewManualClock returns a ManualClock reading start.
func NewManualClock(start time.Time) *ManualClock {
	return &ManualClock{now: start}
}

type manualTimer struct {
	c    *ManualClock
	when time.Time
	seq  uint64
	f    func()
}

// Now returns the clock's time.
func (c *ManualClock) Now() time.Time {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.now
}

// AfterFunc schedules f for d from now (at once, on the next move of the
// clock, when d <= 0).
func (c *ManualClock) AfterFunc(d time.Duration, f func()) Timer {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t := &manualTimer{c: c, when: c.now.Add(max(d, 0)), seq: c.seq, f: f}
	c.timers = append(c.timers, t)
	return t
}

// Stop removes the timer if it is still pending.
func (t *manualTimer) Stop() bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	for i, x := range c.timers {
		if x == t {
			c.timers = append(c.timers[:i], c.timers[i+1:]...)
			return true
		}
	}
	return false
}

// Reset schedules the timer for d from now (Timer.Reset); a timer moved
// this way runs after those already due at the same time, as a new one
// would.
func (t *manualTimer) Reset(d time.Duration) bool {
	c := t.c
	c.mu.Lock()
	defer c.mu.Unlock()
	c.seq++
	t.when, t.seq = c.now.Add(max(d, 0)), c.seq
	for _, x := range c.timers {
		if x == t {
			return true
		}
	}
	c.timers = append(c.timers, t)
	return false
}

// Pending returns how many timers are waiting.
func (c *ManualClock) Pending() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.timers)
}

// Advance moves the clock forward by d, running every timer that comes due
// on the way (timers they set that come due within d run too).
func (c *ManualClock) Advance(d time.Duration) {
	c.mu.Lock()
	to := c.now.Add(d)
	c.mu.Unlock()
	c.Set(to)
}

// Set moves the clock to t, running every timer due by then; a t before
// the clock's time only runs timers already due.
func (c *ManualClock) Set(t time.Time) {
	for {
		c.mu.Lock()
		next := c.nextDue(t)
		if next == nil {
			if t.After(c.now) {
				c.now = t
			}
			c.mu.Unlock()
			return
		}
		if next.when.After(c.now) {
			c.now = next.when
		}
		c.mu.Unlock()
		next.f()
	}
}

// nextDue removes and returns the earliest timer due by t (mu held).
func (c *ManualClock) nextDue(t time.Time) *manualTimer {
	if len(c.timers) == 0 {
		return nil
	}
	sort.SliceStable(c.timers, func(i, j int) bool {
		a, b := c.timers[i], c.timers[j]
		if !a.when.Equal(b.when) {
			return a.when.Before(b.when)
		}
		return a.seq < b.seq
	})
	first := c.timers[0]
	if first.when.After(t) {
		return nil
	}
	c.timers = c.timers[1:]
	return first
}

// SleepUntil waits on timer (one of the caller's, reused) until the wall
// clock reaches until, or ctx is done: then it returns ctx's error. A time
// already past returns at once.
func SleepUntil(ctx context.Context, timer *time.Timer, until time.Time) error {
	d := time.Until(until)
	if d <= 0 {
		return ctx.Err()
	}
	timer.Reset(d)
	select {
	case <-timer.C:
		return nil
	case <-ctx.Done():
		timer.Stop()
		return ctx.Err()
	}
}
