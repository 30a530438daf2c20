package monitor

import (
	"testing"
	"time"
)

func TestSeriesKeepsWindow(t *testing.T) {
	t.Parallel()
	var s series
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	// ten minutes of 25 tokens a second
	for i := range 25 * 600 {
		s.token(t0.Add(time.Duration(i)*40*time.Millisecond), time.Second)
	}
	end := unixMs(t0.Add(600 * time.Second))
	if n := len(s.Tokens); n > seriesMax || n < int(seriesWindow/(40*time.Millisecond)) {
		t.Errorf("%d tokens kept, want the last minute's %d and at most %d", n, seriesWindow/(40*time.Millisecond), seriesMax)
	}
	if first := s.Tokens[0]; end-first < float64(seriesWindow/time.Millisecond) {
		t.Errorf("the oldest token kept is %.0f ms old, want at least the window", end-first)
	}
	if len(s.Samples) != len(s.Tokens) {
		t.Errorf("%d samples for %d tokens", len(s.Samples), len(s.Tokens))
	}
	r := s.recent(end - 1000)
	if len(r.Tokens) != 26 || r.Tokens[0] > end-1000 || r.Tokens[1] < end-1000 {
		t.Errorf("the last second holds %d tokens from %.0f ms before the end", len(r.Tokens), end-r.Tokens[0])
	}
	// a drain becomes a gap; a drain that did not is taken back
	s.drain(t0)
	s.gap(t0, t0.Add(200*time.Millisecond), true)
	s.drain(t0.Add(time.Second))
	s.undrain()
	if len(s.Gaps) != 1 || s.Gaps[0][1]-s.Gaps[0][0] != 200 || s.Gaps[0][2] != 1 {
		t.Errorf("gaps %v", s.Gaps)
	}
}

func BenchmarkSeriesToken(b *testing.B) {
	var s series
	t0 := time.Now()
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		s.token(t0.Add(time.Duration(i)*40*time.Millisecond), time.Second)
	}
}
