package monitor

import (
	"sort"
	"time"
)

// Chart history kept per session: at least the window, at most seriesMax
// points per list.
const (
	seriesWindow = time.Minute
	seriesMax    = 4096
)

// series is a session's recent history for the live chart: buffered audio
// samples, token arrivals, gaps and stall warnings, in unix milliseconds.
type series struct {
	Samples [][2]float64 `json:"samples"` // [time, buffered ms]
	Tokens  []float64    `json:"tokens"`
	Gaps    [][3]float64 `json:"gaps"` // [start, end (0: still dry), 1 for an interruption]
	Stalls  []float64    `json:"stalls"`
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

func (s *series) sample(at time.Time, buf time.Duration) {
	t := unixMs(at)
	s.Samples = append(trim(s.Samples, func(x [2]float64) float64 { return x[0] }, t), [2]float64{t, float64(buf) / 1e6})
}

func (s *series) token(at time.Time, buf time.Duration) {
	t := unixMs(at)
	s.Tokens = append(trim(s.Tokens, func(x float64) float64 { return x }, t), t)
	s.sample(at, buf)
}

func (s *series) stall(at time.Time) {
	t := unixMs(at)
	s.Stalls = append(trim(s.Stalls, func(x float64) float64 { return x }, t), t)
}

// drain opens a gap: the player ran dry at at.
func (s *series) drain(at time.Time) {
	t := unixMs(at)
	s.Gaps = append(trim(s.Gaps, func(x [3]float64) float64 { return x[0] }, t), [3]float64{t, 0, 0})
}

// gap closes the open gap (or adds one) from start to end.
func (s *series) gap(start, end time.Time, interruption bool) {
	g := [3]float64{unixMs(start), unixMs(end), 0}
	if interruption {
		g[2] = 1
	}
	if n := len(s.Gaps); n > 0 && s.Gaps[n-1][1] == 0 {
		s.Gaps[n-1] = g
		return
	}
	s.Gaps = append(trim(s.Gaps, func(x [3]float64) float64 { return x[0] }, g[0]), g)
}

// undrain removes an open gap that did not become an underrun (the turn's
// speech ended there, or a barge-in cut it).
func (s *series) undrain() {
	if n := len(s.Gaps); n > 0 && s.Gaps[n-1][1] == 0 {
		s.Gaps = s.Gaps[:n-1]
	}
}

// chartWindow is the history a page is sent each tick (it draws 20 s).
const chartWindow = 25 * time.Second

// recent returns the part of the series since the given unix ms (the gap
// or sample in force then included); it shares the series' memory.
func (s *series) recent(since float64) series {
	from := func(n int, at func(int) float64) int {
		return max(0, sort.Search(n, func(i int) bool { return at(i) >= since })-1)
	}
	return series{
		Samples: s.Samples[from(len(s.Samples), func(i int) float64 { return s.Samples[i][0] }):],
		Tokens:  s.Tokens[from(len(s.Tokens), func(i int) float64 { return s.Tokens[i] }):],
		Gaps:    s.Gaps[from(len(s.Gaps), func(i int) float64 { return s.Gaps[i][0] }):],
		Stalls:  s.Stalls[from(len(s.Stalls), func(i int) float64 { return s.Stalls[i] }):],
	}
}
