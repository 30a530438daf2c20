package pipeline

import (
	"context"
	"errors"
	"fmt"
	"math"
	"runtime"
	"sort"
	"sync/atomic"
	"time"
)

// ScaledClock returns a clock that runs speed times as fast as base from
// now on: with speed 60 an hour of trace passes in a minute. Give the same
// scaled clock to the Guard and to Replay.
func ScaledClock(base Clock, speed float64) Clock {
	if base == nil {
		base = RealClock()
	}
	if speed == 1 {
		return base
	}
	return &scaledClock{base: base, speed: speed, origin: base.Now()}
}

type scaledClock struct {
	base   Clock
	speed  float64
	origin time.Time
}

func (c *scaledClock) Now() time.Time {
	elapsed := c.base.Now().Sub(c.origin)
	return c.origin.Add(time.Duration(float64(elapsed) * c.speed))
}

func (c *scaledClock) AfterFunc(d time.Duration, f func()) Timer {
	t := c.base.AfterFunc(c.wait(d), f)
	if r, ok := t.(ResetTimer); ok {
		// the base timer's own Reset would take d on the base's time
		return &scaledTimer{ResetTimer: r, c: c}
	}
	return t
}

// wait is how long the base clock waits for d to pass on c.
func (c *scaledClock) wait(d time.Duration) time.Duration {
	return time.Duration(math.Ceil(float64(d) / c.speed))
}

// scaledTimer is a timer of a scaledClock whose base timer can be reset.
type scaledTimer struct {
	ResetTimer
	c *scaledClock
}

// Reset schedules the call for d from now on the scaled clock.
func (t *scaledTimer) Reset(d time.Duration) bool { return t.ResetTimer.Reset(t.c.wait(d)) }

// DefaultSpin is how long before its time a PreciseClock timer wakes to
// wait out the rest on the CPU.
const DefaultSpin = time.Millisecond

// PreciseClock returns a clock whose timers fire on time to a few
// microseconds rather than the scheduler's fraction of a millisecond: each
// wakes spin early on base and yields the processor until its time comes.
// It costs up to spin of CPU per timer; replays use it.
func PreciseClock(base Clock, spin time.Duration) Clock {
	if base == nil {
		base = RealClock()
	}
	if spin <= 0 {
		return base
	}
	return &preciseClock{base: base, spin: spin}
}

type preciseClock struct {
	base Clock
	spin time.Duration
}

func (c *preciseClock) Now() time.Time { return c.base.Now() }

func (c *preciseClock) AfterFunc(d time.Duration, f func()) Timer {
	due := c.base.Now().Add(d)
	t := &preciseTimer{}
	t.inner = c.base.AfterFunc(max(0, d-c.spin), func() {
		for c.base.Now().Before(due) {
			if t.stopped.Load() {
				return
			}
			runtime.Gosched()
		}
		if t.fired.CompareAndSwap(false, true) && !t.stopped.Load() {
			f()
		}
	})
	return t
}

type preciseTimer struct {
	inner          Timer
	stopped, fired atomic.Bool
}

func (t *preciseTimer) Stop() bool {
	t.inner.Stop()
	return !t.fired.Load() && t.stopped.CompareAndSwap(false, true)
}

// ReplayOptions configure Replay.
type ReplayOptions struct {
	// Clock is the clock Replay waits on; give the Guard the same one
	// (nil: RealClock).
	Clock Clock
	// OnFeed, when set, is called after each chunk is fed, with how late it
	// was fed against its schedule.
	OnFeed func(turn string, chunk int, late time.Duration)
	// Spin, when positive, waits on PreciseClock(Clock, Spin), for
	// sub-millisecond timing on a real clock (DefaultSpin); leave it 0 when
	// Clock is a PreciseClock already, and on a ManualClock.
	Spin time.Duration
}

// ErrReplay reports turns that cannot be replayed.
var ErrReplay = errors.New("replay")

// replayStep is one call Replay makes: begin a turn, feed a chunk, start
// or end a tool call, end the turn.
type replayStep struct {
	at    time.Duration
	seq   int
	turn  int
	chunk int // -1 begin, len(chunks) end
	tool  int // the tool call (chunk unused): its start, or its return when back
	back  bool
}

// Replay feeds recorded turns to g in wall-clock time: every turn begins at
// its recorded start relative to the first turn's (when all turns have
// one; otherwise each begins as the one before it ends), each chunk
// arrives at its recorded time (carried in Chunk.At, so the underruns are
// exactly those of offline analysis), and each turn ends at its last
// chunk with its recorded status. It blocks until every turn has ended or
// ctx ends; on ctx's end, the turns still open are left to g.Close.
func Replay(ctx context.Context, g *Guard, turns []*Turn, opts ReplayOptions) error {
	clock := opts.Clock
	if clock == nil {
		clock = RealClock()
	}
	steps, err := schedule(turns)
	if err != nil {
		return err
	}
	begins := make([]time.Duration, len(turns))
	for _, s := range steps {
		if s.chunk < 0 && s.tool < 0 {
			begins[s.turn] = s.at
		}
	}
	if opts.Spin > 0 {
		clock = PreciseClock(clock, opts.Spin)
	}
	start := clock.Now()
	wake := make(chan struct{}, 1)
	var timer Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for _, s := range steps {
		for {
			wait := s.at - clock.Now().Sub(start)
			if wait <= 0 {
				break
			}
			timer = clock.AfterFunc(wait, func() {
				select {
				case wake <- struct{}{}:
				default:
				}
			})
			select {
			case <-ctx.Done():
				return ctx.Err()
			case <-wake:
			}
		}
		if err := ctx.Err(); err != nil {
			return err
		}
		late := clock.Now().Sub(start) - s.at
		t := turns[s.turn]
		switch {
		case s.tool >= 0 && s.back:
			err = g.ToolReturned(t.ID, max(s.at-begins[s.turn], 1))
		case s.tool >= 0:
			tc := t.ToolCalls[s.tool]
			tc.At = max(tc.At, 1)
			err = g.ToolCall(t.ID, tc)
		case s.chunk < 0:
			err = g.Begin(t.ID, t.Session)
		case s.chunk == len(t.Chunks):
			status := t.Status
			if status == "" {
				status = StatusOK
			}
			err = g.End(t.ID, status)
		default:
			c := t.Chunks[s.chunk]
			if c.At <= 0 {
				c.At = 1 // a chunk at the very request: At must be set
			}
			err = g.Chunk(t.ID, c)
			if err == nil && opts.OnFeed != nil {
				opts.OnFeed(t.ID, s.chunk, late)
			}
		}
		if err != nil {
			return fmt.Errorf("%w: turn %q: %w", ErrReplay, t.ID, err)
		}
	}
	return nil
}

// ReplaySpan returns how long Replay takes to feed turns on a clock at
// real speed: from the first turn's begin to the last turn's end, turns
// that overlap in time counted once.
func ReplaySpan(turns []*Turn) (time.Duration, error) {
	steps, err := schedule(turns)
	if err != nil || len(steps) == 0 {
		return 0, err
	}
	return steps[len(steps)-1].at, nil
}

// maxReplaySpan bounds the time between the first turn's start and any
// other's, so that a turn's times added to its start stay in a Duration.
const maxReplaySpan = time.Duration(math.MaxInt64 / 2)

// schedule lays out the calls of a replay in time order.
func schedule(turns []*Turn) ([]replayStep, error) {
	allStarts := len(turns) > 0
	var first time.Time
	for i, t := range turns {
		if err := t.Validate(); err != nil {
			return nil, fmt.Errorf("%w: %w", ErrReplay, err)
		}
		if t.Start.IsZero() {
			allStarts = false
		} else if i == 0 || t.Start.Before(first) {
			first = t.Start
		}
	}
	var steps []replayStep
	var begin time.Duration
	for i, t := range turns {
		if allStarts {
			begin = t.Start.Sub(first)
			if begin > maxReplaySpan {
				return nil, fmt.Errorf("%w: turn %q starts %v after the first turn; want every turn within %v of it", ErrReplay, t.ID, begin, maxReplaySpan)
			}
		}
		steps = append(steps, replayStep{at: begin, turn: i, chunk: -1, tool: -1})
		last := time.Duration(0)
		for st := range t.Steps() {
			steps = append(steps, replayStep{at: begin + st.At, turn: i, chunk: st.Chunk, tool: st.Tool, back: st.Return})
			last = max(last, st.At)
		}
		steps = append(steps, replayStep{at: begin + last, turn: i, chunk: len(t.Chunks), tool: -1})
		if !allStarts {
			begin += last
		}
	}
	for i := range steps {
		steps[i].seq = i
	}
	sort.SliceStable(steps, func(a, b int) bool {
		if steps[a].at != steps[b].at {
			return steps[a].at < steps[b].at
		}
		return steps[a].seq < steps[b].seq
	})
	return steps, nil
}
