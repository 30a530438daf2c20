package monitor

import (
	"sort"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// Chart history kept per session: at least the window, at most seriesMax
// points per list.
const (
	seriesWindow = time.Minute
	seriesMax    = 4096
)

// series is a session's recent history for the live chart, turn by turn:
// each turn has a player of its own, so a session with several turns open
// has a buffer, and a dry player, per turn. Times are unix milliseconds.
type series struct {
	Turns []*turnSeries `json:"turns"`
	// ClosedMs is, for a session that has closed, when it closed: the
	// page draws its chart up to then.
	ClosedMs float64 `json:"closed_ms,omitempty"`
}

// turnSeries is one turn's history: its audio not yet played
// (pipeline.Backlog: buffered, and the part of it ready at the player),
// token arrivals, gaps and stall warnings.
type turnSeries struct {
	Turn    string       `json:"turn"`
	Open    bool         `json:"open"`    // still streaming
	Samples [][3]float64 `json:"samples"` // [time, buffered ms, ready ms]
	Tokens  []float64    `json:"tokens"`
	Gaps    [][3]float64 `json:"gaps"` // [start, end (0: still dry), 1 for an interruption]
	Stalls  []float64    `json:"stalls"`
	last    float64      // the time of its latest point
	// the lengths of Samples and Tokens of the session's turn before
	// this one: the room the lists get when their first point comes
	// (a session's turns are much alike; growing a list point by point
	// costs a copy at each doubling)
	sizeSamples, sizeTokens int
}

func unixMs(t time.Time) float64 { return float64(t.UnixNano()) / 1e6 }

// trim drops what is older than the window, once it is half the list (or
// the list is full), so that keeping the window costs O(1) a point.
func trim[T any](xs []T, ms func(T) float64, now float64) []T {
	limit := now - float64(seriesWindow/time.Millisecond)
	n := len(xs)
	if n < seriesMax && (n < 2 || ms(xs[n/2]) >= limit) {
		return xs
	}
	cut := sort.Search(n, func(i int) bool { return ms(xs[i]) >= limit })
	if n-cut >= seriesMax {
		cut = n - seriesMax/2
	}
	return append(xs[:0], xs[cut:]...)
}

// begin starts the history of a turn that has just begun, and returns it.
func (s *series) begin(turn string, at time.Time) *turnSeries {
	t := unixMs(at)
	// closed turns whose last point left the window go
	limit := t - float64(seriesWindow/time.Millisecond)
	kept := s.Turns[:0]
	for _, ts := range s.Turns {
		if ts.Open || ts.last >= limit {
			kept = append(kept, ts)
		}
	}
	clear(s.Turns[len(kept):])
	ts := &turnSeries{Turn: turn, Open: true, last: t}
	if n := len(kept); n > 0 {
		prev := kept[n-1]
		ts.sizeSamples, ts.sizeTokens = len(prev.Samples), len(prev.Tokens)
	}
	s.Turns = append(kept, ts)
	return ts
}

// turn returns the history of the open turn named id (nil when none).
func (s *series) turn(id string) *turnSeries {
	for i := len(s.Turns) - 1; i >= 0; i-- {
		if ts := s.Turns[i]; ts.Open && ts.Turn == id {
			return ts
		}
	}
	return nil
}

// end marks a turn's history closed.
func (s *series) end(id string, at time.Time) {
	if ts := s.turn(id); ts != nil {
		ts.undrain()
		ts.Open = false
		ts.last = max(ts.last, unixMs(at))
	}
}

func (ts *turnSeries) sample(at time.Time, b pipeline.Backlog) {
	t := unixMs(at)
	ts.last = max(ts.last, t)
	if ts.Samples == nil && ts.sizeSamples > 0 {
		ts.Samples = make([][3]float64, 0, ts.sizeSamples)
	}
	ts.Samples = append(trim(ts.Samples, func(x [3]float64) float64 { return x[0] }, t),
		[3]float64{t, pipeline.Millis(b.Buffered), pipeline.Millis(b.Ready)})
}

// token adds a chunk's arrival at at, with the backlog just before and
// just after the guard took it (sampled at now): the jump shows as a step.
func (ts *turnSeries) token(at, now time.Time, before, after pipeline.Backlog) {
	t := unixMs(at)
	if ts.Tokens == nil && ts.sizeTokens > 0 {
		ts.Tokens = make([]float64, 0, ts.sizeTokens)
	}
	ts.Tokens = append(trim(ts.Tokens, func(x float64) float64 { return x }, t), t)
	if before != after {
		ts.sample(now, before)
	}
	ts.sample(now, after)
}

func (ts *turnSeries) stall(at time.Time) {
	t := unixMs(at)
	ts.last = max(ts.last, t)
	ts.Stalls = append(trim(ts.Stalls, func(x float64) float64 { return x }, t), t)
}

// drain opens a gap: the player ran dry at at.
func (ts *turnSeries) drain(at time.Time) {
	t := unixMs(at)
	ts.last = max(ts.last, t)
	ts.Gaps = append(trim(ts.Gaps, func(x [3]float64) float64 { return x[0] }, t), [3]float64{t, 0, 0})
}

// gap closes the open gap (or adds one) from start to end.
func (ts *turnSeries) gap(start, end time.Time, interruption bool) {
	g := [3]float64{unixMs(start), unixMs(end), 0}
	if interruption {
		g[2] = 1
	}
	ts.last = max(ts.last, g[1])
	if n := len(ts.Gaps); n > 0 && ts.Gaps[n-1][1] == 0 {
		ts.Gaps[n-1] = g
		return
	}
	ts.Gaps = append(trim(ts.Gaps, func(x [3]float64) float64 { return x[0] }, g[0]), g)
}

// undrain removes an open gap that did not become an underrun (the turn's
// speech ended there, or a barge-in cut it).
func (ts *turnSeries) undrain() {
	if n := len(ts.Gaps); n > 0 && ts.Gaps[n-1][1] == 0 {
		ts.Gaps = ts.Gaps[:n-1]
	}
}

// chartWindow is the history a page is sent each tick (it draws 20 s).
const chartWindow = 25 * time.Second

// recent returns the part of the series since the given unix ms: the
// turns open or with points since then, each from the gap or sample in
// force then. The lists share the series' memory.
func (s *series) recent(since float64) series {
	from := func(n int, at func(int) float64) int {
		return max(0, sort.Search(n, func(i int) bool { return at(i) >= since })-1)
	}
	var out series
	for _, ts := range s.Turns {
		if !ts.Open && ts.last < since {
			continue
		}
		out.Turns = append(out.Turns, &turnSeries{
			Turn: ts.Turn, Open: ts.Open, last: ts.last,
			Samples: ts.Samples[from(len(ts.Samples), func(i int) float64 { return ts.Samples[i][0] }):],
			Tokens:  ts.Tokens[from(len(ts.Tokens), func(i int) float64 { return ts.Tokens[i] }):],
			Gaps:    ts.Gaps[from(len(ts.Gaps), func(i int) float64 { return ts.Gaps[i][0] }):],
			Stalls:  ts.Stalls[from(len(ts.Stalls), func(i int) float64 { return ts.Stalls[i] }):],
		})
	}
	return out
}
