package pipeline

import (
	"slices"
	"sync"
	"sync/atomic"
	"testing"
	"time"
)

// waitFor polls cond for up to 5 s.
func waitFor(t *testing.T, what string, cond func() bool) {
	t.Helper()
	for deadline := time.Now().Add(5 * time.Second); time.Now().Before(deadline); time.Sleep(time.Millisecond) {
		if cond() {
			return
		}
	}
	t.Fatalf("timed out waiting for %s", what)
}

// TestQueueClockOrder: calls run in time order, an earlier call made
// while the clock waits for a later one included, and a stopped call never
// runs.
func TestQueueClockOrder(t *testing.T) {
	t.Parallel()
	c := NewQueueClock(nil)
	var mu sync.Mutex
	var got []string
	add := func(s string) func() {
		return func() { mu.Lock(); got = append(got, s); mu.Unlock() }
	}
	c.AfterFunc(60*time.Millisecond, add("60"))
	time.Sleep(5 * time.Millisecond) // the clock's goroutine now waits for 60
	c.AfterFunc(10*time.Millisecond, add("10"))
	c.AfterFunc(30*time.Millisecond, add("30"))
	stopped := c.AfterFunc(20*time.Millisecond, add("stopped"))
	if !stopped.Stop() {
		t.Error("Stop of a pending call = false, want true")
	}
	last := c.AfterFunc(40*time.Millisecond, add("40"))
	waitFor(t, "four calls", func() bool { mu.Lock(); defer mu.Unlock(); return len(got) == 4 })
	if want := []string{"10", "30", "40", "60"}; !slices.Equal(got, want) {
		t.Errorf("calls ran in the order %v, want %v", got, want)
	}
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
