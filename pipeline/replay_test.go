package pipeline_test

import (
	"context"
	"errors"
	"fmt"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

func TestScaledClock(t *testing.T) {
	t.Parallel()
	base := pipeline.NewManualClock(epoch)
	c := pipeline.ScaledClock(base, 4)
	start := c.Now()
	fired := false
	c.AfterFunc(400*gms, func() { fired = true })
	base.Advance(99 * gms)
	if fired {
		t.Fatal("fired after 99 ms of base time, want 100")
	}
	base.Advance(1 * gms)
	if !fired {
		t.Fatal("not fired after 100 ms of base time")
	}
	if got := c.Now().Sub(start); got != 400*gms {
		t.Errorf("scaled clock moved %v, want 400ms", got)
	}
	if pipeline.ScaledClock(base, 1) != pipeline.Clock(base) {
		t.Error("speed 1 should return the base clock")
	}
}

// replayTurns are turns with drains: tokens of 40 ms audio every 10 ms,
// then stalls.
func replayTurns(n int, start time.Time) []*pipeline.Turn {
	var turns []*pipeline.Turn
	for i := range n {
		var times []time.Duration
		at := time.Duration(5+i) * gms
		for k := range 12 {
			if k == 4 || k == 9 {
				at += time.Duration(150+10*i) * gms
			}
			at += 10 * gms
			times = append(times, at)
		}
		turn := textlessTurn(fmt.Sprintf("r%d", i), times...)
		if !start.IsZero() {
			turn.Start = start.Add(time.Duration(i) * 7 * gms)
		}
		turns = append(turns, turn)
	}
	return turns
}

// toolTurns gives each turn a tool call after its third chunk.
func toolTurns(turns []*pipeline.Turn) []*pipeline.Turn {
	for i, t := range turns {
		turns[i] = withToolCalls(t, 2)
		turns[i].ID = t.ID
	}
	return turns
}

func TestReplayMatchesOffline(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name   string
		turns  []*pipeline.Turn
		filler string
	}{
		{"interleaved", replayTurns(4, epoch), ""},
		{"sequential", replayTurns(3, time.Time{}), ""},
		{"tool calls", toolTurns(replayTurns(3, epoch)), ""},
		// a phrase that holds back each reply
		{"tool calls and a filler", toolTurns(replayTurns(3, epoch)), `after:0s:"One moment, please, while I look that up."`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			cfg := tokenConfig(t, 40*gms)
			cfg.Synth.TTFA = 5 * gms
			var err error
			if cfg.Filler, err = pipeline.ParseFiller(tc.filler); err != nil {
				t.Fatal(err)
			}
			clock := pipeline.ScaledClock(nil, 8)
			c := &collector{}
			g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{Clock: clock, OnEvent: c.add})
			if err != nil {
				t.Fatal(err)
			}
			var mu sync.Mutex
			fed := 0
			err = pipeline.Replay(context.Background(), g, tc.turns, pipeline.ReplayOptions{Clock: clock,
				OnFeed: func(string, int, time.Duration) { mu.Lock(); fed++; mu.Unlock() }})
			if err != nil {
				t.Fatal(err)
			}
			if err := g.Close(); err != nil {
				t.Fatal(err)
			}
			if want := 12 * len(tc.turns); fed != want {
				t.Errorf("fed %d chunks, want %d", fed, want)
			}
			for _, turn := range tc.turns {
				off, err := pipeline.Play(cfg, turn)
				if err != nil {
					t.Fatal(err)
				}
				if len(off.Underruns) == 0 {
					t.Fatalf("%s: no underruns to compare", turn.ID)
				}
				if got := c.turns[turn.ID]; !slices.Equal(got, off.Underruns) {
					t.Errorf("%s: replay %+v, want %+v", turn.ID, got, off.Underruns)
				}
				if len(turn.ToolCalls) > 0 && !slices.ContainsFunc(off.Underruns, func(u pipeline.Underrun) bool { return u.Cause == pipeline.CauseTool }) {
					t.Errorf("%s: no tool-call silence to compare", turn.ID)
				}
				held := slices.ContainsFunc(off.Underruns, func(u pipeline.Underrun) bool {
					c := off.Chunks[u.Chunk]
					return u.Cause == pipeline.CauseTool && c.PlayStart > c.Ready
				})
				if held != (tc.filler != "") {
					t.Errorf("%s: a reply held back after a tool call: %v, want %v", turn.ID, held, tc.filler != "")
				}
			}
			if n := len(c.kind(pipeline.EventDrain)); n < len(tc.turns) {
				t.Errorf("only %d drains raised", n)
			}
		})
	}
}

func TestReplayErrorsAndCancel(t *testing.T) {
	t.Parallel()
	cfg := tokenConfig(t, 40*gms)
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{})
	if err != nil {
		t.Fatal(err)
	}
	defer g.Close()
	bad := textlessTurn("bad", 50*gms, 10*gms)
	if err := pipeline.Replay(context.Background(), g, []*pipeline.Turn{bad}, pipeline.ReplayOptions{}); !errors.Is(err, pipeline.ErrReplay) {
		t.Errorf("turn out of order: %v", err)
	}
	dup := []*pipeline.Turn{textlessTurn("same", 10*gms), textlessTurn("same", 10*gms)}
	dup[0].Start, dup[1].Start = epoch, epoch
	if err := pipeline.Replay(context.Background(), g, dup, pipeline.ReplayOptions{}); !errors.Is(err, pipeline.ErrTurnOpen) {
		t.Errorf("two open turns with one ID: %v", err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 20*gms)
	defer cancel()
	long := textlessTurn("long", 10*gms, 10*time.Second)
	start := time.Now()
	if err := pipeline.Replay(ctx, g, []*pipeline.Turn{long}, pipeline.ReplayOptions{}); !errors.Is(err, context.DeadlineExceeded) {
		t.Errorf("cancelled replay: %v", err)
	}
	if took := time.Since(start); took >= 10*time.Second { // the turn's own length: cancelling cut nothing
		t.Errorf("cancel took %v", took)
	}
}

// BenchmarkReplayLateness replays interleaved turns on the wall clock at
// real speed and measures how late each wall-clock event fires against
// its schedule: every chunk fed (feed_*) and every drain raised by the
// guard's timer (drain_*), in milliseconds.
func BenchmarkReplayLateness(b *testing.B) {
	cfg := tokenConfig(b, 40*gms)
	cfg.Synth.TTFA = 5 * gms
	var mu sync.Mutex
	var feed, drain []float64
	for b.Loop() {
		clock := pipeline.PreciseClock(nil, pipeline.DefaultSpin)
		g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{Clock: clock, OnEvent: func(e pipeline.Event) {
			if e.Kind == pipeline.EventDrain && e.Now > e.At {
				mu.Lock()
				drain = append(drain, pipeline.Millis(e.Now-e.At))
				mu.Unlock()
			}
		}})
		if err != nil {
			b.Fatal(err)
		}
		err = pipeline.Replay(context.Background(), g, replayTurns(8, epoch), pipeline.ReplayOptions{Clock: clock,
			OnFeed: func(_ string, _ int, late time.Duration) {
				mu.Lock()
				feed = append(feed, pipeline.Millis(late))
				mu.Unlock()
			}})
		if err != nil {
			b.Fatal(err)
		}
		g.Close()
	}
	report := func(name string, v []float64) {
		if len(v) == 0 {
			return
		}
		sort.Float64s(v)
		b.ReportMetric(pipeline.Percentile(v, 50), name+"_p50_ms")
		b.ReportMetric(pipeline.Percentile(v, 99), name+"_p99_ms")
		b.ReportMetric(v[len(v)-1], name+"_max_ms")
	}
	report("feed", feed)
	report("drain", drain)
}

func TestReplaySpan(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	origin := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	turn := func(id string, start time.Time, last time.Duration) *pipeline.Turn {
		return &pipeline.Turn{ID: id, Start: start, Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{{At: 100 * ms, Tokens: 1}, {At: last, Tokens: 1}}}
	}
	for _, tc := range []struct {
		name  string
		turns []*pipeline.Turn
		want  time.Duration
	}{
		// three 2 s turns starting 0.5 s apart overlap: 1 s + 2 s
		{"overlapping", []*pipeline.Turn{turn("a", origin, 2000*ms), turn("b", origin.Add(500*ms), 2000*ms), turn("c", origin.Add(1000*ms), 2000*ms)}, 3000 * ms},
		// a turn that starts first may end last
		{"nested", []*pipeline.Turn{turn("long", origin, 5000*ms), turn("short", origin.Add(time.Second), 1000*ms)}, 5000 * ms},
		// without start times, each turn follows the one before
		{"one after another", []*pipeline.Turn{turn("a", time.Time{}, 2000*ms), turn("b", time.Time{}, 1500*ms)}, 3500 * ms},
		{"none", nil, 0},
	} {
		got, err := pipeline.ReplaySpan(tc.turns)
		if err != nil || got != tc.want {
			t.Errorf("%s: ReplaySpan = %v, %v; want %v", tc.name, got, err, tc.want)
		}
	}
}
