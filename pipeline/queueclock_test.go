package pipeline

import (
	"cmp"
	"maps"
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond until it holds.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	// no deadline of its own: on a busy machine anything may take long;
	// the test's deadline (go test -timeout) stops a wait that never ends
	deadline, ok := t.Deadline()
	for !ok || time.Until(deadline) > time.Second {
		if cond() {
			return
		}
		time.Sleep(time.Millisecond)
	}
	t.Fatalf("still waiting for %s when the test's deadline came", what)
}

// TestQueueClockOrder: calls run in the order they come due, an earlier
// call made while the clock waits for a later one included, none before
// it is due, and a stopped call never runs. The order expected is that of
// the calls' own due times, so a test goroutine held off the CPU between
// two calls (a busy machine) changes what is expected, not the verdict.
func TestQueueClockOrder(t *testing.T) {
	t.Parallel()
	c := NewQueueClock(nil)
	var mu sync.Mutex
	var got []string
	early := map[string]bool{}
	timers := map[string]*queueTimer{}
	add := func(label string, d time.Duration) Timer {
		var tm *queueTimer
		done := make(chan struct{})
		tm = c.AfterFunc(d, func() {
			<-done
			mu.Lock()
			defer mu.Unlock()
			got = append(got, label)
			early[label] = time.Since(c.epoch) < tm.when
		}).(*queueTimer)
		timers[label] = tm
		close(done)
		return tm
	}
	add("60", 60*time.Millisecond)
	// (on a machine busy enough, the 60 ms pass before the wait is seen)
	waitFor(t, "the clock's goroutine to wait for the 60 ms call", func() bool {
		c.mu.Lock()
		armed := c.armed > 0
		c.mu.Unlock()
		mu.Lock()
		defer mu.Unlock()
		return armed || len(got) > 0
	})
	add("10", 10*time.Millisecond)
	add("30", 30*time.Millisecond)
	made := time.Now()
	stopped := add("stopped", 20*time.Millisecond)
	switch {
	case stopped.Stop():
		delete(timers, "stopped")
	case time.Since(made) < 20*time.Millisecond:
		t.Error("Stop of a pending call = false, want true")
	default:
		// the test was held off the CPU past the call's due time: it
		// may have run, and then it is expected in its place
	}
	last := add("40", 40*time.Millisecond)
	waitFor(t, "the calls", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == len(timers) })
	c.mu.Lock()
	want := slices.SortedFunc(maps.Keys(timers), func(a, b string) int {
		return cmp.Or(cmp.Compare(timers[a].when, timers[b].when), cmp.Compare(timers[a].seq, timers[b].seq))
	})
	c.mu.Unlock()
	mu.Lock()
	if !slices.Equal(got, want) {
		t.Errorf("calls ran in the order %v, want %v (the order they came due)", got, want)
	}
	for label, e := range early {
		if e {
			t.Errorf("call %s ran before it was due", label)
		}
	}
	mu.Unlock()
	if last.Stop() {
		t.Error("Stop of a call that ran = true, want false")
	}
	waitFor(t, "the clock's goroutine to end", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.running
	})
}

// TestQueueClockRunDue: calls made by RunDue and by the clock's own
// goroutine together run each exactly once, never early; RunDue reports
// when it made some.
func TestQueueClockRunDue(t *testing.T) {
	t.Parallel()
	var batched, inBatch atomic.Int32
	c := NewQueueClock(func(run func()) {
		inBatch.Add(1)
		run()
		inBatch.Add(-1)
	})
	const n = 2000
	var left atomic.Int32
	left.Store(n)
	var early atomic.Int32
	ran := make([]atomic.Int32, n)
	for i := range n {
		d := time.Duration(i%50) * 100 * time.Microsecond
		due := time.Now().Add(d)
		c.AfterFunc(d, func() {
			if time.Now().Before(due) {
				early.Add(1)
			}
			if inBatch.Load() > 0 {
				batched.Add(1)
			}
			ran[i].Add(1)
			left.Add(-1)
		})
	}
	made := 0
	for left.Load() > 0 {
		if c.RunDue() {
			made++
		}
	}
	for i := range ran {
		if k := ran[i].Load(); k != 1 {
			t.Fatalf("call %d ran %d times", i, k)
		}
	}
	if k := early.Load(); k > 0 {
		t.Errorf("%d calls ran before their time", k)
	}
	t.Logf("RunDue made calls %d times; %d calls in batches", made, batched.Load())
	if batched.Load() == 0 { // 40 calls come due every 100 µs
		t.Error("no batch of calls went through the batch function")
	}
	if c.RunDue() {
		t.Error("RunDue with nothing due = true")
	}
}

// TestQueueClockReentrant: a call may set, stop and run calls on its own
// clock.
func TestQueueClockReentrant(t *testing.T) {
	t.Parallel()
	c := NewQueueClock(nil)
	done := make(chan struct{})
	c.AfterFunc(0, func() {
		c.RunDue() // another call is being made: nothing to do
		victim := c.AfterFunc(time.Millisecond, func() { t.Error("a stopped call ran") })
		victim.Stop()
		c.AfterFunc(2*time.Millisecond, func() { close(done) })
	})
	select {
	case <-done:
	case <-time.After(5 * time.Second):
		t.Fatal("the call set by a call never ran")
	}
}

// TestQueueClockReset: a call set again runs once per setting, never
// before its new time, whether it was pending (it is moved, not doubled),
// had run or was stopped; one stopped after its setting never runs.
func TestQueueClockReset(t *testing.T) {
	t.Parallel()
	c := NewQueueClock(nil)
	var ran, early atomic.Int32
	var due atomic.Int64 // ns since the clock's epoch
	tm := c.AfterFunc(time.Hour, func() {
		if time.Since(c.epoch) < time.Duration(due.Load()) {
			early.Add(1)
		}
		ran.Add(1)
	}).(ResetTimer)
	set := func(d time.Duration) bool {
		c.mu.Lock()
		due.Store(int64(time.Since(c.epoch) + d))
		c.mu.Unlock()
		return tm.Reset(d)
	}
	if !set(2 * time.Millisecond) {
		t.Error("Reset of a pending call = false, want true")
	}
	c.mu.Lock()
	if n := len(c.q); n != 1 {
		t.Errorf("%d calls queued after Reset of a pending one, want 1", n)
	}
	c.mu.Unlock()
	waitFor(t, "the call set again", func() bool { return ran.Load() == 1 })
	if set(time.Millisecond) {
		t.Error("Reset of a call that has run = true, want false")
	}
	waitFor(t, "the call set again after it ran", func() bool { return ran.Load() == 2 })
	set(time.Hour)
	if !tm.Stop() {
		t.Error("Stop of a pending call = false, want true")
	}
	if set(0) {
		t.Error("Reset of a stopped call = true, want false")
	}
	waitFor(t, "the stopped call set again", func() bool { return ran.Load() == 3 })
	set(time.Hour)
	tm.Stop()
	c.mu.Lock()
	n := len(c.q)
	c.mu.Unlock()
	waitFor(t, "the clock's goroutine to end", func() bool { c.mu.Lock(); defer c.mu.Unlock(); return !c.running })
	if got := ran.Load(); n != 0 || got != 3 {
		t.Errorf("a call stopped after Reset: %d queued, %d runs, want 0 and 3", n, got)
	}
	if k := early.Load(); k > 0 {
		t.Errorf("%d calls ran before their time", k)
	}
}

// TestQueueClockStopEndsGoroutine: once its last pending call is stopped,
// the clock's goroutine ends, though it was waiting for that call's time.
func TestQueueClockStopEndsGoroutine(t *testing.T) {
	t.Parallel()
	c := NewQueueClock(nil)
	tm := c.AfterFunc(time.Hour, func() { t.Error("a stopped call ran") })
	waitFor(t, "the clock's goroutine to wait for the call", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return c.armed > 0
	})
	if !tm.Stop() {
		t.Fatal("Stop of a pending call = false, want true")
	}
	waitFor(t, "the clock's goroutine to end", func() bool {
		c.mu.Lock()
		defer c.mu.Unlock()
		return !c.running
	})
	// the clock still works after: a new call starts a new goroutine
	done := make(chan struct{})
	c.AfterFunc(time.Millisecond, func() { close(done) })
	<-done
}
