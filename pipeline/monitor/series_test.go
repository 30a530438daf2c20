package monitor

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

func TestSeriesKeepsWindow(t *testing.T) {
	t.Parallel()
	var s series
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.begin("t1", t0)
	ts := s.turn("t1")
	// ten minutes of 25 tokens a second
	for i := range 25 * 600 {
		at := t0.Add(time.Duration(i) * 40 * time.Millisecond)
		ts.token(at, at, pipeline.Backlog{Buffered: time.Second}, pipeline.Backlog{Buffered: time.Second})
	}
	end := unixMs(t0.Add(600 * time.Second))
	if n := len(ts.Tokens); n > seriesMax || n < int(seriesWindow/(40*time.Millisecond)) {
		t.Errorf("%d tokens kept, want the last minute's %d and at most %d", n, seriesWindow/(40*time.Millisecond), seriesMax)
	}
	if first := ts.Tokens[0]; end-first < float64(seriesWindow/time.Millisecond) {
		t.Errorf("the oldest token kept is %.0f ms old, want at least the window", end-first)
	}
	if len(ts.Samples) != len(ts.Tokens) {
		t.Errorf("%d samples for %d tokens (the backlog did not change: one sample each)", len(ts.Samples), len(ts.Tokens))
	}
	r := s.recent(end - 1000)
	if len(r.Turns) != 1 || len(r.Turns[0].Tokens) != 26 || r.Turns[0].Tokens[0] > end-1000 || r.Turns[0].Tokens[1] < end-1000 {
		t.Errorf("the last second holds %+v", r.Turns)
	}
	// a drain becomes a gap; a drain that did not is taken back
	ts.drain(t0)
	ts.gap(t0, t0.Add(200*time.Millisecond), true)
	ts.drain(t0.Add(time.Second))
	ts.undrain()
	if len(ts.Gaps) != 1 || ts.Gaps[0][1]-ts.Gaps[0][0] != 200 || ts.Gaps[0][2] != 1 {
		t.Errorf("gaps %v", ts.Gaps)
	}
}

// TestSeriesPerTurn: two turns open at once keep a buffer and a gap each;
// a gap of one does not close the other's, and a closed turn leaves the
// chart once it is out of the window.
func TestSeriesPerTurn(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	var s series
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	s.begin("a", t0)
	s.begin("b", t0.Add(10*ms))
	a, b := s.turn("a"), s.turn("b")
	a.drain(t0.Add(100 * ms)) // a's player runs dry
	b.sample(t0.Add(100*ms), pipeline.Backlog{Buffered: 14 * time.Second, Ready: 9 * time.Second})
	b.gap(t0.Add(200*ms), t0.Add(260*ms), false) // b has a glitch of its own
	if len(a.Gaps) != 1 || a.Gaps[0][1] != 0 {
		t.Errorf("a's open gap %v was closed by b's", a.Gaps)
	}
	if len(b.Gaps) != 1 || b.Gaps[0][1]-b.Gaps[0][0] != 60 || b.Samples[0][1] != 14000 || b.Samples[0][2] != 9000 {
		t.Errorf("b's history %+v", b)
	}
	s.end("a", t0.Add(300*ms))
	if s.turn("a") != nil || len(a.Gaps) != 0 {
		t.Errorf("a ended with its drain open: the drain stays, or a is still open: %+v", a)
	}
	// a second turn named a, later, is a history of its own
	s.begin("a", t0.Add(2*seriesWindow))
	if len(s.Turns) != 2 || s.Turns[0] != b || s.turn("a") == a {
		t.Errorf("after the window: turns %+v, want b (still open) and the new a", s.Turns)
	}
	if r := s.recent(unixMs(t0.Add(2 * seriesWindow))); len(r.Turns) != 2 {
		t.Errorf("recent: %d turns, want the two open ones", len(r.Turns))
	}
}

func BenchmarkSeriesToken(b *testing.B) {
	var s series
	t0 := time.Now()
	s.begin("t", t0)
	ts := s.turn("t")
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		at := t0.Add(time.Duration(i) * 40 * time.Millisecond)
		ts.token(at, at, pipeline.Backlog{Buffered: time.Second}, pipeline.Backlog{Buffered: 2 * time.Second})
	}
}

// TestSeriesRoom: a turn's lists get, with their first point, the room the
// turn before it used; a turn with no point yet still shows none (null),
// as the first turn does.
func TestSeriesRoom(t *testing.T) {
	t.Parallel()
	var s series
	t0 := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	first := s.begin("t1", t0)
	for i := range 50 {
		at := t0.Add(time.Duration(i) * 40 * time.Millisecond)
		first.token(at, at, pipeline.Backlog{}, pipeline.Backlog{Buffered: time.Duration(i+1) * time.Millisecond})
	}
	s.end("t1", t0.Add(2*time.Second))
	second := s.begin("t2", t0.Add(2*time.Second))
	b, err := json.Marshal(&series{Turns: []*turnSeries{second}})
	if err != nil {
		t.Fatal(err)
	}
	if want := `{"turns":[{"turn":"t2","open":true,"samples":null,"tokens":null,"gaps":null,"stalls":null}]}`; string(b) != want {
		t.Errorf("a turn without points:\n got %s\nwant %s", b, want)
	}
	at := t0.Add(2 * time.Second)
	second.token(at, at, pipeline.Backlog{}, pipeline.Backlog{Buffered: time.Millisecond})
	if got, want := cap(second.Samples), len(first.Samples); got < want {
		t.Errorf("the second turn's samples have room for %d, want the first's %d", got, want)
	}
	if got, want := cap(second.Tokens), len(first.Tokens); got < want {
		t.Errorf("the second turn's tokens have room for %d, want the first's %d", got, want)
	}
	if len(second.Samples) != 2 || len(second.Tokens) != 1 {
		t.Errorf("second turn: %d samples, %d tokens, want 2 and 1", len(second.Samples), len(second.Tokens))
	}
}
