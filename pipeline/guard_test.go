package pipeline_test

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"sync"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/tts"
)

// guardText is a paragraph of assistant speech for the guard's turns.
const guardText = `Sure! Here is what I found about your flight. It leaves at nine fifteen from gate
twelve, and boarding starts forty minutes before. The weather at your destination looks mild,
around eighteen degrees, with a chance of rain in the evening. Would you like me to add the
trip to your calendar, or send the details to your phone?`

const gms = time.Millisecond

var epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

// collector gathers a guard's events.
type collector struct {
	mu     sync.Mutex
	events []pipeline.Event
	turns  map[string][]pipeline.Underrun // final underruns per turn
}

func (c *collector) add(e pipeline.Event) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if e.Kind == pipeline.EventTurn {
		if c.turns == nil {
			c.turns = map[string][]pipeline.Underrun{}
		}
		c.turns[e.Turn] = slices.Clone(e.Playout.Underruns)
		e.Playout = nil
	}
	c.events = append(c.events, e)
}

// timeline lists the events as "kind at=... now=...".
func (c *collector) timeline() []string {
	c.mu.Lock()
	defer c.mu.Unlock()
	out := make([]string, len(c.events))
	for i, e := range c.events {
		out[i] = fmt.Sprintf("%s at=%v now=%v", e.Kind, e.At, e.Now)
	}
	return out
}

func (c *collector) kind(k pipeline.EventKind) []pipeline.Event {
	c.mu.Lock()
	defer c.mu.Unlock()
	var out []pipeline.Event
	for _, e := range c.events {
		if e.Kind == k {
			out = append(out, e)
		}
	}
	return out
}

func guardConfig(t testing.TB, policy string, ttfa time.Duration, rtf float64, preroll time.Duration) pipeline.Config {
	t.Helper()
	cfg := testkit.Config(t, policy, ttfa, rtf)
	cfg.Preroll = preroll
	return cfg
}

func textlessTurn(id string, times ...time.Duration) *pipeline.Turn {
	t := &pipeline.Turn{ID: id, Status: pipeline.StatusOK}
	for _, at := range times {
		t.Chunks = append(t.Chunks, pipeline.Chunk{At: at, Textless: true})
	}
	return t
}

// manualGuard returns a guard on a manual clock at epoch, collecting its
// events.
func manualGuard(t *testing.T, cfg pipeline.Config, warn time.Duration) (*pipeline.Guard, *pipeline.ManualClock, *collector) {
	t.Helper()
	clock := pipeline.NewManualClock(epoch)
	c := &collector{}
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{Clock: clock, OnEvent: c.add, WarnTolerance: warn})
	if err != nil {
		t.Fatal(err)
	}
	return g, clock, c
}

// liveRun feeds turn through a guard on a manual clock, each chunk at its
// arrival time read from the clock, and ends it at its last arrival.
func liveRun(t *testing.T, cfg pipeline.Config, turn *pipeline.Turn, warn time.Duration) *collector {
	t.Helper()
	g, clock, c := manualGuard(t, cfg, warn)
	if err := g.Begin(turn.ID, "s"); err != nil {
		t.Fatal(err)
	}
	tools := turn.ToolCalls
	for i, ch := range turn.Chunks {
		// a tool call starts after the chunk it comes at (flushTools)
		for len(tools) > 0 && tools[0].At < ch.At {
			tc := tools[0]
			tools = tools[1:]
			clock.Set(epoch.Add(tc.At))
			if err := g.ToolCall(turn.ID, pipeline.ToolCall{Name: tc.Name}); err != nil {
				t.Fatal(err)
			}
			if i%2 == 0 { // the other half end with the next chunk
				clock.Set(epoch.Add(tc.End()))
				if err := g.ToolReturned(turn.ID, 0); err != nil {
					t.Fatal(err)
				}
			}
		}
		clock.Set(epoch.Add(ch.At))
		ch.At = 0 // the guard reads the clock
		if err := g.Chunk(turn.ID, ch); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.End(turn.ID, pipeline.StatusOK); err != nil {
		t.Fatal(err)
	}
	if n := clock.Pending(); n != 0 {
		t.Errorf("%d timers still pending after End", n)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	return c
}

func TestGuardMatchesOffline(t *testing.T) {
	t.Parallel()
	stalls := map[int]time.Duration{2: 600 * gms, 25: 900 * gms, 26: 300 * gms}
	def := testkit.WordTurn("default", guardText, 250*gms, 37*gms, map[int]time.Duration{3: 1500 * gms, 8: 3000 * gms})
	slow := testkit.WordTurn("slow", guardText, 300*gms, 420*gms, stalls)
	fast := testkit.WordTurn("fast", "Hi. Short answer, then a stall. And more text after it, to finish the turn.", 200*gms, 20*gms, stalls)
	bare := textlessTurn("bare", 100*gms, 150*gms, 200*gms, 900*gms, 950*gms, 2000*gms, 2010*gms)
	tool := withToolCalls(testkit.WordTurn("tool", guardText, 250*gms, 37*gms, map[int]time.Duration{20: 900 * gms}), 6, 12)
	cases := []struct {
		name    string
		policy  string
		ttfa    time.Duration
		rtf     float64
		preroll time.Duration
	}{
		{"word", "word", 100 * gms, 0.1, 0},
		{"token-instant", "token", 0, 0, 0},
		{"sentence", "sentence", 250 * gms, 0.3, 0},
		{"livekit", "livekit", 150 * gms, 0.2, 0},
		{"elevenlabs", "elevenlabs", 200 * gms, 0.1, 0},
		{"timer", "timer:300ms", 80 * gms, 0.1, 0},
		{"slow-synth", "word", 50 * gms, 1.6, 0},
		{"preroll", "word", 100 * gms, 0.1, 400 * gms},
	}
	for _, tc := range cases {
		for _, mode := range []tts.Mode{tts.ModeStream, tts.ModeRequest, tts.ModeParallel} {
			for _, turn := range []*pipeline.Turn{def, slow, fast, bare, tool} {
				guardMatchesOffline(t, tc.name+"/"+string(mode)+"/"+turn.ID, turn, def, func(t *testing.T) pipeline.Config {
					cfg := guardConfig(t, tc.policy, tc.ttfa, tc.rtf, tc.preroll)
					cfg.Synth.Mode, cfg.Synth.Continuation = mode, tc.ttfa/3
					return cfg
				})
			}
		}
	}
}

// withToolCalls returns turn with a tool call after each chunk of at
// (2 s, then 1 s, ...; 5 ms after the chunk), the later chunks coming
// once it has returned (and their ITL after it).
func withToolCalls(turn *pipeline.Turn, at ...int) *pipeline.Turn {
	out := *turn
	out.ID += "-tools"
	out.Chunks = slices.Clone(turn.Chunks)
	var pause time.Duration
	for j, k := range at {
		tc := pipeline.ToolCall{At: out.Chunks[k].At + 5*gms, Duration: 2000 * gms / time.Duration(j+1), Name: "lookup"}
		out.ToolCalls = append(out.ToolCalls, tc)
		pause += 5*gms + tc.Duration
		for i := k + 1; i < len(out.Chunks) && (j+1 == len(at) || i <= at[j+1]); i++ {
			out.Chunks[i].At += pause
		}
	}
	return &out
}

// guardMatchesOffline checks, as subtest name, that a guard fed turn live
// raises the underruns, drains and speech chunks offline analysis finds.
func guardMatchesOffline(t *testing.T, name string, turn, def *pipeline.Turn, config func(*testing.T) pipeline.Config) {
	t.Run(name, func(t *testing.T) {
		t.Parallel()
		cfg := config(t)
		off, err := pipeline.Play(cfg, turn)
		if err != nil {
			t.Fatal(err)
		}
		c := liveRun(t, cfg, turn, 0)
		want := off.Underruns
		if cfg.Policy.Name() == "word" && cfg.Preroll == 0 && cfg.Synth.RTF < 1 && turn == def && len(want) < 2 {
			t.Fatalf("the default turn has %d underruns: the test needs some", len(want))
		}
		if got := c.turns[turn.ID]; !slices.Equal(got, want) {
			t.Fatalf("final underruns differ:\n got %+v\nwant %+v", got, want)
		}
		endAt := turn.Chunks[len(turn.Chunks)-1].At
		done := c.kind(pipeline.EventUnderrun)
		if len(done) != len(want) {
			t.Fatalf("got %d underrun events, want %d", len(done), len(want))
		}
		for i, e := range done {
			got, w := e.Underrun, want[i]
			// the cause of a live event is settled from the chunks so far
			got.Cause = w.Cause
			if got != w {
				t.Errorf("underrun %d: got %+v, want %+v", i, e.Underrun, w)
			}
			resume := w.Start + w.Duration
			if e.At != resume {
				t.Errorf("underrun %d: At %v, want its end %v", i, e.At, resume)
			}
			if wantNow := min(resume, endAt); e.Now != wantNow {
				t.Errorf("underrun %d raised at %v, want %v", i, e.Now, wantNow)
			}
		}
		// every speech chunk is announced once, as offline analysis
		// plays it
		speech := c.kind(pipeline.EventSpeech)
		if len(speech) != len(off.Chunks) {
			t.Fatalf("%d speech events, want %d chunks", len(speech), len(off.Chunks))
		}
		for i, e := range speech {
			if e.Speech != off.Chunks[i] {
				t.Errorf("speech %d: %+v, want %+v", i, e.Speech, off.Chunks[i])
			}
			if want := turn.Chunks[e.Speech.First].Textless; e.Textless != want {
				t.Errorf("speech %d: Textless %v, want %v", i, e.Textless, want)
			}
			if e.Now > max(e.Speech.PlayStart, endAt) {
				t.Errorf("speech %d announced at %v, after it started playing at %v", i, e.Now, e.Speech.PlayStart)
			}
		}
		drains := c.kind(pipeline.EventDrain)
		// every gap's start is announced once, on time (or at End
		// for gaps still ahead); a drain at the end of the speech
		// may precede End with no gap after it
		j := 0
		for _, e := range drains {
			if j < len(want) && e.At == want[j].Start {
				j++
			}
			if wantNow := min(e.At, endAt); e.Now != wantNow {
				t.Errorf("drain at %v raised at %v, want %v", e.At, e.Now, wantNow)
			}
		}
		if j != len(want) {
			t.Errorf("drains %v announce only %d of %d underruns", drainTimes(drains), j, len(want))
		}
		if extra := len(drains) - len(want); extra > 1 {
			t.Errorf("%d drains without an underrun", extra)
		}
	})
}

func drainTimes(es []pipeline.Event) []time.Duration {
	var out []time.Duration
	for _, e := range es {
		out = append(out, e.At)
	}
	return out
}

// tokenConfig speaks each text-less token for d the moment it arrives.
func tokenConfig(t testing.TB, d time.Duration) pipeline.Config {
	cfg := guardConfig(t, "token", 0, 0, 0)
	cfg.Voice.TokenAudio = d
	return cfg
}

// drainTimeline is the events of TestGuardDrainAndStallWarning's turn
// with no stall warning: three tokens, a drain, two more.
var drainTimeline = []string{
	"speech at=100ms now=100ms",
	"speech at=150ms now=150ms",
	"speech at=200ms now=200ms",
	"underrun_started at=400ms now=400ms",
	"speech at=700ms now=700ms",
	"underrun at=700ms now=700ms",
	"speech at=750ms now=750ms",
	"turn at=750ms now=750ms",
}

func TestGuardDrainAndStallWarning(t *testing.T) {
	t.Parallel()
	cfg := tokenConfig(t, 100*gms)
	turn := textlessTurn("t", 100*gms, 150*gms, 200*gms, 700*gms, 750*gms)
	c := liveRun(t, cfg, turn, 30*gms)
	got := c.timeline()
	want := slices.Insert(slices.Clone(drainTimeline), 3, "stall_warning at=370ms now=370ms")
	if !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
	w := c.kind(pipeline.EventStall)[0]
	if w.Tolerance != 30*gms || w.LastToken != 2 {
		t.Errorf("warning: tolerance %v token %d, want 30ms and 2", w.Tolerance, w.LastToken)
	}
	u := c.kind(pipeline.EventUnderrun)[0].Underrun
	if u.Start != 400*gms || u.Duration != 300*gms || u.Class != pipeline.Interruption || u.Samples != 7200 {
		t.Errorf("underrun %+v, want 300 ms interruption at 400 ms (7200 samples)", u)
	}
}

// toolSteps opens turn "t" of a guard on a manual clock for text-less
// tokens of 100 ms, warning at 30 ms of tolerance, and returns the guard,
// its events, step (f at a time of the turn: the clock set there first)
// and chunk (a token now).
func toolSteps(t *testing.T) (*pipeline.Guard, *collector, func(time.Duration, func() error), func() error) {
	g, clock, c := manualGuard(t, tokenConfig(t, 100*gms), 30*gms)
	if err := g.Begin("t", "s"); err != nil {
		t.Fatal(err)
	}
	step := func(at time.Duration, f func() error) {
		t.Helper()
		clock.Set(epoch.Add(at))
		if err := f(); err != nil {
			t.Fatal(err)
		}
	}
	return g, c, step, func() error { return g.Chunk("t", pipeline.Chunk{Textless: true}) }
}

// TestGuardToolCall: the drain-and-warning turn again, its stream
// stopping for a tool call after the third token: no stall warning while
// the tool runs, the drain and the underrun name the tool call as the
// cause, and the record keeps the call with the time it ran.
func TestGuardToolCall(t *testing.T) {
	t.Parallel()
	g, c, step, chunk := toolSteps(t)
	step(100*gms, chunk)
	step(150*gms, chunk)
	step(200*gms, chunk)
	step(205*gms, func() error { return g.ToolCall("t", pipeline.ToolCall{Name: "get_weather"}) })
	// a second call ends the first
	step(210*gms, func() error { return g.ToolCall("t", pipeline.ToolCall{Name: "get_weather"}) })
	step(690*gms, func() error { return g.ToolReturned("t", 0) })
	if err := g.ToolReturned("t", 0); !errors.Is(err, pipeline.ErrOrder) {
		t.Errorf("a second return: %v, want ErrOrder", err)
	}
	if err := g.Chunk("t", pipeline.Chunk{At: 208 * gms, Textless: true}); !errors.Is(err, pipeline.ErrOrder) {
		t.Errorf("a chunk timed before the tool call: %v, want ErrOrder", err)
	}
	step(700*gms, chunk)
	step(750*gms, chunk)
	step(750*gms, func() error { return g.End("t", pipeline.StatusOK) })
	// the events of the turn without the tool call and without a warning
	if got, want := c.timeline(), drainTimeline; !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
	if d := c.kind(pipeline.EventDrain)[0]; d.Underrun.Cause != pipeline.CauseTool {
		t.Errorf("drain cause %q, want %q", d.Underrun.Cause, pipeline.CauseTool)
	}
	if u := c.kind(pipeline.EventUnderrun)[0]; u.Underrun.Cause != pipeline.CauseTool {
		t.Errorf("underrun cause %q, want %q", u.Underrun.Cause, pipeline.CauseTool)
	}
	rec := c.kind(pipeline.EventTurn)[0].Record
	wantTools := []pipeline.ToolCall{{At: 205 * gms, Duration: 5 * gms, Name: "get_weather"}, {At: 210 * gms, Duration: 480 * gms, Name: "get_weather"}}
	if !slices.Equal(rec.ToolCalls, wantTools) {
		t.Errorf("recorded tool calls %+v, want %+v", rec.ToolCalls, wantTools)
	}
	// TPOT leaves the tools' time out: (750 - 100 - 485) ms / 4
	if tpot, ok := rec.TPOTSeconds(); !ok || math.Abs(tpot-0.04125) > 1e-9 {
		t.Errorf("TPOT %v s, want 0.04125", tpot)
	}
}

// TestGuardWarnsAgainAfterTheTool: once speech from after a tool call
// plays, a stall warns again, as it would in a turn without one.
func TestGuardWarnsAgainAfterTheTool(t *testing.T) {
	t.Parallel()
	g, c, step, chunk := toolSteps(t)
	step(100*gms, chunk)
	step(105*gms, func() error { return g.ToolCall("t", pipeline.ToolCall{Name: "x"}) })
	step(700*gms, chunk) // plays 700-800: the stream stalls after it
	step(1000*gms, chunk)
	step(1000*gms, func() error { return g.End("t", pipeline.StatusOK) })
	want := []string{
		"speech at=100ms now=100ms",
		"underrun_started at=200ms now=200ms",
		"speech at=700ms now=700ms",
		"underrun at=700ms now=700ms",
		"stall_warning at=770ms now=770ms",
		"underrun_started at=800ms now=800ms",
		"speech at=1s now=1s",
		"underrun at=1s now=1s",
		"turn at=1s now=1s",
	}
	if got := c.timeline(); !slices.Equal(got, want) {
		t.Fatalf("events:\n got %q\nwant %q", got, want)
	}
	us := c.turns["t"]
	if len(us) != 2 || us[0].Cause != pipeline.CauseTool || us[1].Cause == pipeline.CauseTool {
		t.Errorf("underruns %+v: want the tool's silence, then an underrun", us)
	}
}

func TestGuardWarnsOnArrival(t *testing.T) {
	t.Parallel()
	// the second chunk arrives with less than the threshold in hand
	cfg := tokenConfig(t, 40*gms)
	turn := textlessTurn("t", 100*gms, 139*gms, 200*gms)
	c := liveRun(t, cfg, turn, 50*gms)
	ws := c.kind(pipeline.EventStall)
	if len(ws) != 1 {
		t.Fatalf("got %d warnings, want 1: %+v", len(ws), c.events)
	}
	if ws[0].At != 100*gms || ws[0].Now != 100*gms || ws[0].Tolerance != 40*gms {
		t.Errorf("warning at %v (raised %v) tolerance %v, want 100ms, 100ms, 40ms", ws[0].At, ws[0].Now, ws[0].Tolerance)
	}
}

// TestGuardRealClockDrainOnTime runs on the wall clock: not in parallel
// with the package's other tests, and with a few tries, as shared machines
// stall now and then (BenchmarkGuardDrainLateness measures the tail).
func TestGuardRealClockDrainOnTime(t *testing.T) {
	var lates []time.Duration
	for range 3 {
		late, err := drainLateness(tokenConfig(t, 30*gms))
		if err != nil {
			t.Fatal(err)
		}
		if late < 0 {
			t.Fatalf("drain raised %v early", -late)
		}
		if late <= 20*gms {
			return
		}
		lates = append(lates, late)
	}
	t.Errorf("drain raised late in every try: %v", lates)
}

// drainLateness begins a turn of three 30 ms tokens arriving at 1, 2 and
// 3 ms, waits for the drain at 91 ms and returns how late it was raised,
// measured on the wall clock.
func drainLateness(cfg pipeline.Config) (time.Duration, error) {
	type fired struct {
		e    pipeline.Event
		wall time.Time
	}
	ch := make(chan fired, 16)
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{OnEvent: func(e pipeline.Event) {
		if e.Kind != pipeline.EventSpeech {
			ch <- fired{e, time.Now()}
		}
	}})
	if err != nil {
		return 0, err
	}
	defer g.Close()
	begin := time.Now()
	if err := g.Begin("rt", ""); err != nil {
		return 0, err
	}
	for _, at := range []time.Duration{1 * gms, 2 * gms, 3 * gms} {
		if err := g.Chunk("rt", pipeline.Chunk{At: at, Textless: true}); err != nil {
			return 0, err
		}
	}
	select {
	case f := <-ch:
		if f.e.Kind != pipeline.EventDrain || f.e.At != 91*gms {
			return 0, fmt.Errorf("first event %s at %v, want underrun_started at 91ms", f.e.Kind, f.e.At)
		}
		if f.e.Now < f.e.At {
			return 0, fmt.Errorf("event Now %v before At %v", f.e.Now, f.e.At)
		}
		return f.wall.Sub(begin) - f.e.At, nil
	case <-time.After(2 * time.Second):
		return 0, errors.New("no drain event")
	}
}

func TestGuardConcurrentTurns(t *testing.T) {
	t.Parallel()
	cfg := guardConfig(t, "word", 20*gms, 0.1, 0)
	c := &collector{}
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{OnEvent: c.add, WarnTolerance: 30 * gms})
	if err != nil {
		t.Fatal(err)
	}
	const n = 16
	turns := make([]*pipeline.Turn, n)
	for i := range turns {
		turns[i] = testkit.WordTurn(fmt.Sprintf("t%d", i), "One two three, four five. Six seven eight nine ten eleven.",
			time.Duration(i+1)*gms, time.Duration(2+i%3)*gms, map[int]time.Duration{3: time.Duration(5+i) * gms})
	}
	var wg sync.WaitGroup
	for _, turn := range turns {
		wg.Go(func() {
			if err := g.Begin(turn.ID, "s"); err != nil {
				t.Error(err)
				return
			}
			for _, ch := range turn.Chunks {
				if err := g.Chunk(turn.ID, ch); err != nil {
					t.Error(err)
					return
				}
			}
			time.Sleep(5 * gms) // let some timers fire
			if err := g.End(turn.ID, pipeline.StatusOK); err != nil {
				t.Error(err)
			}
		})
	}
	wg.Wait()
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if g.Open() != 0 {
		t.Errorf("%d turns still open", g.Open())
	}
	for _, turn := range turns {
		off, err := pipeline.Play(cfg, turn)
		if err != nil {
			t.Fatal(err)
		}
		if got := c.turns[turn.ID]; !slices.Equal(got, off.Underruns) {
			t.Errorf("%s: got %+v, want %+v", turn.ID, got, off.Underruns)
		}
	}
	// per turn, events arrive in order and the summary comes last
	last := map[string]pipeline.EventKind{}
	for _, e := range c.events {
		if last[e.Turn] == pipeline.EventTurn {
			t.Errorf("%s: %s after the turn summary", e.Turn, e.Kind)
		}
		last[e.Turn] = e.Kind
	}
}

func TestGuardErrors(t *testing.T) {
	t.Parallel()
	g, clock, c := manualGuard(t, tokenConfig(t, 50*gms), 0)
	if err := g.Chunk("nope", pipeline.Chunk{}); !errors.Is(err, pipeline.ErrUnknownTurn) {
		t.Errorf("chunk of unknown turn: %v", err)
	}
	if err := g.Begin("a", ""); err != nil {
		t.Fatal(err)
	}
	if err := g.Begin("a", ""); !errors.Is(err, pipeline.ErrTurnOpen) {
		t.Errorf("second Begin: %v", err)
	}
	if err := g.Chunk("a", pipeline.Chunk{At: 100 * gms, Textless: true}); err != nil {
		t.Fatal(err)
	}
	if err := g.Chunk("a", pipeline.Chunk{At: 50 * gms, Textless: true}); !errors.Is(err, pipeline.ErrOrder) {
		t.Errorf("chunk out of order: %v", err)
	}
	if err := g.Begin("b", "s2"); err != nil {
		t.Fatal(err)
	}
	if err := g.End("b", pipeline.StatusCancelled); err != nil {
		t.Fatal(err)
	}
	if err := g.End("b", pipeline.StatusOK); !errors.Is(err, pipeline.ErrUnknownTurn) {
		t.Errorf("second End: %v", err)
	}
	if err := g.Close(); err != nil {
		t.Fatal(err)
	}
	if err := g.Begin("c", ""); !errors.Is(err, pipeline.ErrGuardClosed) {
		t.Errorf("Begin after Close: %v", err)
	}
	if err := g.Chunk("a", pipeline.Chunk{}); !errors.Is(err, pipeline.ErrGuardClosed) {
		t.Errorf("Chunk after Close: %v", err)
	}
	var statuses []string
	for _, e := range c.kind(pipeline.EventTurn) {
		statuses = append(statuses, e.Turn+"="+string(e.Record.Status))
	}
	sort.Strings(statuses)
	if want := []string{"a=incomplete", "b=cancelled"}; !slices.Equal(statuses, want) {
		t.Errorf("turn summaries %v, want %v", statuses, want)
	}
	if clock.Pending() != 0 {
		t.Errorf("%d timers pending after Close", clock.Pending())
	}
	if _, err := pipeline.NewGuard(tokenConfig(t, 50*gms), pipeline.GuardOptions{WarnTolerance: -1}); !errors.Is(err, pipeline.ErrConfig) {
		t.Errorf("negative warn tolerance: %v", err)
	}
}

func TestManualClockOrder(t *testing.T) {
	t.Parallel()
	clock := pipeline.NewManualClock(epoch)
	var got []string
	clock.AfterFunc(30*gms, func() { got = append(got, fmt.Sprint("c ", clock.Now().Sub(epoch))) })
	clock.AfterFunc(10*gms, func() {
		got = append(got, fmt.Sprint("a ", clock.Now().Sub(epoch)))
		clock.AfterFunc(5*gms, func() { got = append(got, fmt.Sprint("b ", clock.Now().Sub(epoch))) })
	})
	stopped := clock.AfterFunc(20*gms, func() { got = append(got, "stopped") })
	if !stopped.Stop() || stopped.Stop() {
		t.Error("Stop: want true then false")
	}
	clock.Advance(25 * gms)
	clock.Advance(25 * gms)
	if want := []string{"a 10ms", "b 15ms", "c 30ms"}; !slices.Equal(got, want) {
		t.Errorf("got %q, want %q", got, want)
	}
	if now := clock.Now().Sub(epoch); now != 50*gms {
		t.Errorf("clock at %v, want 50ms", now)
	}
}

func BenchmarkGuardChunk(b *testing.B) {
	cfg := guardConfig(b, "word", 100*gms, 0.1, 0)
	turn := testkit.WordTurn("b", guardText, 250*gms, 37*gms, map[int]time.Duration{3: 700 * gms})
	clock := pipeline.NewManualClock(epoch)
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{Clock: clock, WarnTolerance: 100 * gms})
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	start := epoch
	for b.Loop() {
		if err := g.Begin("b", ""); err != nil {
			b.Fatal(err)
		}
		for _, ch := range turn.Chunks {
			clock.Set(start.Add(ch.At))
			if err := g.Chunk("b", ch); err != nil {
				b.Fatal(err)
			}
		}
		if err := g.End("b", pipeline.StatusOK); err != nil {
			b.Fatal(err)
		}
		start = clock.Now()
	}
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*len(turn.Chunks)), "ns/chunk")
}

// TestGuardBeginAt: a turn begun in the past counts its chunks, and its
// drain, from that moment; a start in the future is taken as now.
func TestGuardBeginAt(t *testing.T) {
	t.Parallel()
	g, clock, c := manualGuard(t, tokenConfig(t, 100*gms), 0)
	clock.Advance(50 * gms)
	// the turn began 50 ms ago; its first chunk came 10 ms in
	if err := g.BeginAt("t", "s", epoch); err != nil {
		t.Fatal(err)
	}
	if err := g.Chunk("t", pipeline.Chunk{At: 10 * gms, Textless: true}); err != nil {
		t.Fatal(err)
	}
	clock.Advance(200 * gms)
	if d := c.kind(pipeline.EventDrain); len(d) != 1 || d[0].At != 110*gms {
		t.Errorf("drains %+v, want one at 110ms (10 ms + 100 ms of audio, from the turn's start)", d)
	}
	if err := g.BeginAt("u", "s", epoch.Add(time.Hour)); err != nil {
		t.Fatal(err)
	}
	if err := g.Chunk("u", pipeline.Chunk{Textless: true}); err != nil {
		t.Fatal(err)
	}
	if err := g.End("u", pipeline.StatusOK); err != nil {
		t.Fatal(err)
	}
	turns := c.kind(pipeline.EventTurn)
	if len(turns) != 1 || !turns[0].Record.Start.Equal(epoch.Add(250*gms)) || turns[0].Record.Chunks[0].At != 0 {
		t.Errorf("turn u %+v, want it begun now (250ms), its chunk at 0", turns)
	}
	g.Close()
}

// TestGuardRecordRoom: a turn's record gets, with its first chunk, room
// for as many chunks as the Guard's turn before had; one with no chunk
// keeps none (nil), as ever; the records are the turns' own.
func TestGuardRecordRoom(t *testing.T) {
	t.Parallel()
	g, clock, c := manualGuard(t, tokenConfig(t, 10*gms), 0)
	run := func(id string, chunks int) {
		t.Helper()
		if err := g.Begin(id, "s"); err != nil {
			t.Fatal(err)
		}
		for range chunks {
			clock.Advance(gms)
			if err := g.Chunk(id, pipeline.Chunk{Text: " tok", Tokens: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := g.End(id, pipeline.StatusOK); err != nil {
			t.Fatal(err)
		}
	}
	run("a", 100)
	run("b", 0)
	run("c", 100)
	run("d", 3)
	turns := c.kind(pipeline.EventTurn)
	if len(turns) != 4 {
		t.Fatalf("%d turns ended, want 4", len(turns))
	}
	a, b, cc, d := turns[0].Record, turns[1].Record, turns[2].Record, turns[3].Record
	if b.Chunks != nil {
		t.Errorf("a turn without chunks has a record of %d chunks (cap %d), want nil", len(b.Chunks), cap(b.Chunks))
	}
	if len(cc.Chunks) != 100 || len(d.Chunks) != 3 || len(a.Chunks) != 100 {
		t.Fatalf("records of %d, %d, %d chunks, want 100, 100, 3", len(a.Chunks), len(cc.Chunks), len(d.Chunks))
	}
	if cap(d.Chunks) < 100 {
		t.Errorf("the record after a turn of 100 chunks has room for %d", cap(d.Chunks))
	}
	if &a.Chunks[0] == &cc.Chunks[0] || &cc.Chunks[0] == &d.Chunks[0] {
		t.Error("two turns share a record")
	}
}
