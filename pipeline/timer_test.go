package pipeline_test

import (
	"fmt"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// callClock is a ManualClock that keeps the functions given to AfterFunc,
// so that a test can make a call the clock would not (a timer's call
// that was already running when the timer was stopped or set again). With
// plain set, its timers are plain Timers, not ResetTimers.
type callClock struct {
	*pipeline.ManualClock
	plain bool
	mu    sync.Mutex
	calls []func()
}

func (c *callClock) AfterFunc(d time.Duration, f func()) pipeline.Timer {
	c.mu.Lock()
	c.calls = append(c.calls, f)
	c.mu.Unlock()
	t := c.ManualClock.AfterFunc(d, f)
	if c.plain {
		return struct{ pipeline.Timer }{t}
	}
	return t
}

// made returns how many timers were made, and the latest one's call.
func (c *callClock) made() (int, func()) {
	c.mu.Lock()
	defer c.mu.Unlock()
	return len(c.calls), c.calls[len(c.calls)-1]
}

// TestGuardTimerCalls: a turn keeps one timer for its life, set again on
// every chunk, where the clock's timers can be; a call that comes early
// (its timer was set again for later while it was about to run) raises
// nothing and leaves the timer armed, one that comes again after the
// events it was for raises none twice, and one after the turn has ended
// does nothing. On a clock whose timers cannot be set again the events
// are the same.
func TestGuardTimerCalls(t *testing.T) {
	t.Parallel()
	for _, plain := range []bool{false, true} {
		t.Run(fmt.Sprintf("plain=%v", plain), func(t *testing.T) {
			t.Parallel()
			clock := &callClock{ManualClock: pipeline.NewManualClock(epoch), plain: plain}
			c := &collector{}
			g, err := pipeline.NewGuard(tokenConfig(t, 100*gms), pipeline.GuardOptions{Clock: clock, OnEvent: c.add})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Begin("t", "s"); err != nil {
				t.Fatal(err)
			}
			chunk := func(at time.Duration) {
				t.Helper()
				clock.Set(epoch.Add(at))
				if err := g.Chunk("t", pipeline.Chunk{Textless: true}); err != nil {
					t.Fatal(err)
				}
			}
			events := func() int { c.mu.Lock(); defer c.mu.Unlock(); return len(c.events) }
			for _, at := range []time.Duration{100 * gms, 150 * gms, 200 * gms} {
				chunk(at)
			}
			made, call := clock.made()
			if !plain && made != 1 {
				t.Errorf("%d timers made for three chunks, want 1", made)
			}
			if n := clock.Pending(); n != 1 {
				t.Errorf("%d timers pending, want 1", n)
			}
			// early: the drain is due at 400 ms
			before := events()
			call()
			if n := events(); n != before {
				t.Errorf("an early call raised %d events", n-before)
			}
			if n := clock.Pending(); n != 1 {
				t.Errorf("after an early call %d timers pending, want 1", n)
			}
			clock.Set(epoch.Add(400 * gms))
			// again, after the drain it was for
			_, call = clock.made()
			before = events()
			call()
			if n := events(); n != before {
				t.Errorf("a second call for the drain raised %d events", n-before)
			}
			chunk(700 * gms)
			chunk(750 * gms)
			if err := g.End("t", pipeline.StatusOK); err != nil {
				t.Fatal(err)
			}
			if n := clock.Pending(); n != 0 {
				t.Errorf("%d timers pending after End", n)
			}
			_, call = clock.made()
			before = events()
			call()
			if n := events(); n != before {
				t.Errorf("a call after End raised %d events", n-before)
			}
			if made, _ := clock.made(); !plain && made != 1 {
				t.Errorf("%d timers made for the turn, want 1", made)
			}
			if got, want := c.timeline(), drainTimeline; !slices.Equal(got, want) {
				t.Errorf("events:\n got %q\nwant %q", got, want)
			}
		})
	}
}

// TestManualClockReset: a timer set again runs once, at its new time, and
// after the calls already due then; one that has run or was stopped runs
// again once set; a stopped one never runs.
func TestManualClockReset(t *testing.T) {
	t.Parallel()
	clock := pipeline.NewManualClock(epoch)
	var got []string
	at := func(label string) func() {
		return func() { got = append(got, fmt.Sprint(label, " ", clock.Now().Sub(epoch))) }
	}
	a := clock.AfterFunc(10*gms, at("a")).(pipeline.ResetTimer)
	clock.AfterFunc(30*gms, at("b"))
	if !a.Reset(30 * gms) {
		t.Error("Reset of a pending timer = false, want true")
	}
	if n := clock.Pending(); n != 2 {
		t.Errorf("%d timers pending, want 2", n)
	}
	clock.Advance(40 * gms) // 40 ms
	if a.Reset(10 * gms) {
		t.Error("Reset of a timer that has run = true, want false")
	}
	clock.Advance(20 * gms) // 60 ms
	s := clock.AfterFunc(10*gms, at("s")).(pipeline.ResetTimer)
	s.Stop()
	clock.Advance(20 * gms) // 80 ms
	if s.Reset(10 * gms) {
		t.Error("Reset of a stopped timer = true, want false")
	}
	clock.Advance(20 * gms) // 100 ms
	s.Reset(10 * gms)
	s.Stop()
	clock.Advance(20 * gms)
	if want := []string{"b 30ms", "a 30ms", "a 50ms", "s 90ms"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
}

// TestScaledClockReset: a scaled clock's timer set again waits its new
// time on the scaled clock.
func TestScaledClockReset(t *testing.T) {
	t.Parallel()
	base := pipeline.NewManualClock(epoch)
	clock := pipeline.ScaledClock(base, 2)
	ran := 0
	tm, ok := clock.AfterFunc(10*gms, func() { ran++ }).(pipeline.ResetTimer)
	if !ok {
		t.Fatal("a scaled ManualClock's timer is not a ResetTimer")
	}
	tm.Reset(100 * gms) // 50 ms on the base
	base.Advance(49 * gms)
	if ran != 0 {
		t.Fatalf("ran %d times 49 ms into a 50 ms wait", ran)
	}
	base.Advance(gms)
	if ran != 1 {
		t.Errorf("ran %d times after its wait, want 1", ran)
	}
}

// TestGuardSpeechWanted: while SpeechWanted says no, no speech chunk is
// raised and every other event is as without it; chunks scheduled once it
// says yes again are raised, from the index they have in the turn.
func TestGuardSpeechWanted(t *testing.T) {
	t.Parallel()
	cfg := tokenConfig(t, 100*gms)
	turn := textlessTurn("t", 100*gms, 150*gms, 200*gms, 700*gms, 750*gms)
	run := func(wanted func(at time.Duration) bool) []string {
		clock := pipeline.NewManualClock(epoch)
		c := &collector{}
		opts := pipeline.GuardOptions{Clock: clock, OnEvent: c.add, WarnTolerance: 30 * gms}
		if wanted != nil {
			opts.SpeechWanted = func() bool { return wanted(clock.Now().Sub(epoch)) }
		}
		g, err := pipeline.NewGuard(cfg, opts)
		if err != nil {
			t.Fatal(err)
		}
		if err := g.Begin("t", "s"); err != nil {
			t.Fatal(err)
		}
		for _, ch := range turn.Chunks {
			clock.Set(epoch.Add(ch.At))
			ch.At = 0
			if err := g.Chunk("t", ch); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.End("t", pipeline.StatusOK); err != nil {
			t.Fatal(err)
		}
		got := c.timeline()
		for i, e := range c.events {
			if e.Kind == pipeline.EventSpeech {
				got[i] += fmt.Sprintf(" index=%d", e.Index)
			}
		}
		return got
	}
	all := run(nil)
	without := func(keep func(string) bool) []string {
		var out []string
		for _, s := range all {
			if keep(s) {
				out = append(out, s)
			}
		}
		return out
	}
	isSpeech := func(s string) bool { return len(s) > 6 && s[:6] == "speech" }
	if got, want := run(func(time.Duration) bool { return true }), all; !slices.Equal(got, want) {
		t.Errorf("always wanted:\n got %q\nwant %q", got, want)
	}
	if got, want := run(func(time.Duration) bool { return false }), without(func(s string) bool { return !isSpeech(s) }); !slices.Equal(got, want) {
		t.Errorf("never wanted:\n got %q\nwant %q", got, want)
	}
	late := run(func(at time.Duration) bool { return at >= 700*gms })
	want := without(func(s string) bool {
		return !isSpeech(s) || s == "speech at=700ms now=700ms index=3" || s == "speech at=750ms now=750ms index=4"
	})
	if !slices.Equal(late, want) {
		t.Errorf("wanted from 700 ms:\n got %q\nwant %q", late, want)
	}
}
