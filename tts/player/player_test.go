package player

import (
	"context"
	"math"
	"os"
	"path/filepath"
	"slices"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

const rate = 1000 // one sample per millisecond: times and samples read alike

var t0 = time.Unix(1000, 0)

func ms(n int) time.Duration { return time.Duration(n) * time.Millisecond }

func at(n int) time.Time { return t0.Add(ms(n)) }

func tone(n int) tts.Audio {
	a := tts.Audio{Rate: rate, Samples: make([]float32, n)}
	for i := range a.Samples {
		a.Samples[i] = 0.5
	}
	return a
}

type arrival struct {
	at, samples, chunk int
}

// play runs one turn that begins at 0 through a player advanced in steps
// of step ms up to until ms, the turn finished at finish ms.
func play(t *testing.T, opts Options, arrivals []arrival, finish, step, until int) (Heard, []float32) {
	t.Helper()
	var rec []float32
	opts.Record = func(s []float32) { rec = append(rec, s...) }
	clock := t0
	opts.Now = func() time.Time { return clock }
	p, err := New(rate, opts)
	if err != nil {
		t.Fatal(err)
	}
	if err := p.begin(t0); err != nil {
		t.Fatal(err)
	}
	if err := p.Begin("t1", t0); err != nil {
		t.Fatal(err)
	}
	next := 0
	finished := false
	for now := 0; now <= until; now += step {
		// audio arrives when it arrives, whatever the drain's schedule;
		// its arrival is stamped, and the player has it since then
		for next < len(arrivals) && arrivals[next].at <= now {
			a := arrivals[next]
			if _, err := p.Add("t1", tone(a.samples), at(a.at), a.chunk); err != nil {
				t.Fatal(err)
			}
			next++
		}
		if !finished && finish <= now {
			if err := p.Finish("t1", at(finish)); err != nil {
				t.Fatal(err)
			}
			finished = true
		}
		clock = at(now)
		p.advance(at(now))
	}
	clock = at(until)
	p.advance(at(until))
	ctx, cancel := context.WithTimeout(context.Background(), time.Second)
	defer cancel()
	h, err := p.Wait(ctx, "t1")
	if err != nil {
		t.Fatalf("Wait: %v", err)
	}
	return h, rec
}

func TestPlayer(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name                 string
		preroll              int
		arrivals             []arrival
		finish               int
		start, end, speech   time.Duration
		gaps                 []Gap
		notStarted, noFinish bool
	}{
		{name: "one chunk", arrivals: []arrival{{50, 100, 0}}, finish: 60, start: ms(50), end: ms(150), speech: ms(100)},
		{name: "a late chunk", arrivals: []arrival{{50, 100, 0}, {300, 100, 1}}, finish: 300,
			start: ms(50), end: ms(400), speech: ms(200),
			gaps: []Gap{{Start: ms(150), Duration: ms(150), StartSample: 150, Samples: 150, Chunk: 1, Played: 100}}},
		{name: "a chunk in time", arrivals: []arrival{{50, 100, 0}, {140, 100, 1}}, finish: 140, start: ms(50), end: ms(250), speech: ms(200)},
		{name: "two gaps in one chunk's pieces", arrivals: []arrival{{10, 20, 0}, {40, 20, 0}, {100, 10, 1}}, finish: 100,
			start: ms(10), end: ms(110), speech: ms(50),
			gaps: []Gap{{Start: ms(30), Duration: ms(10), StartSample: 30, Samples: 10, Chunk: 0, Played: 20}, {Start: ms(60), Duration: ms(40), StartSample: 60, Samples: 40, Chunk: 1, Played: 50}}},
		{name: "pre-roll waits for enough audio", preroll: 150, arrivals: []arrival{{50, 100, 0}, {120, 100, 1}}, finish: 120,
			start: ms(120), end: ms(320), speech: ms(200)},
		{name: "pre-roll of a short turn", preroll: 500, arrivals: []arrival{{50, 100, 0}}, finish: 80, start: ms(80), end: ms(180), speech: ms(100)},
		{name: "speech over before the synthesizer said so", arrivals: []arrival{{10, 50, 0}}, finish: 400, start: ms(10), end: ms(60), speech: ms(50)},
		{name: "no audio", finish: 30, notStarted: true},
	}
	for _, tt := range tests {
		for _, step := range []int{1, 7, 1000} {
			h, rec := play(t, Options{Preroll: ms(tt.preroll)}, tt.arrivals, tt.finish, step, 1000)
			if h.Started == tt.notStarted {
				t.Errorf("%s, step %d: started %v", tt.name, step, h.Started)
			}
			if tt.notStarted {
				continue
			}
			if h.Start != tt.start || h.End != tt.end || h.Speech != tt.speech {
				t.Errorf("%s, step %d: start %v end %v speech %v, want %v %v %v", tt.name, step, h.Start, h.End, h.Speech, tt.start, tt.end, tt.speech)
			}
			if !slices.Equal(h.Gaps, tt.gaps) {
				t.Errorf("%s, step %d: gaps %+v, want %+v", tt.name, step, h.Gaps, tt.gaps)
			}
			// what was recorded is the timeline: silence, then the audio
			var heard int
			for _, v := range rec {
				if v != 0 {
					heard++
				}
			}
			if int64(heard) != h.Samples {
				t.Errorf("%s, step %d: %d samples of audio recorded, %d played", tt.name, step, heard, h.Samples)
			}
			if len(rec) < int(tt.end/time.Millisecond) || (tt.finish < 1000 && len(rec) != 1000) {
				t.Errorf("%s: %d samples recorded, the turn ended at %v", tt.name, len(rec), tt.end)
			}
			for _, g := range h.Gaps {
				for k := g.StartSample; k < g.StartSample+g.Samples; k++ {
					if rec[k] != 0 {
						t.Errorf("%s: sample %d of gap %+v is not silent", tt.name, k, g)
						break
					}
				}
			}
		}
	}
}

func TestPlayerEvents(t *testing.T) {
	t.Parallel()
	type ev struct {
		kind  GapEvent
		start time.Duration
		dur   time.Duration
		chunk int
	}
	var got []ev
	opts := Options{OnGap: func(turn string, g Gap, e GapEvent) { got = append(got, ev{e, g.Start, g.Duration, g.Chunk}) }}
	play(t, opts, []arrival{{0, 10, 0}, {50, 10, 1}, {200, 10, 2}}, 300, 5, 400)
	want := []ev{{GapStarted, ms(10), 0, -1}, {GapEnded, ms(10), ms(40), 1}, {GapStarted, ms(60), 0, -1}, {GapEnded, ms(60), ms(140), 2},
		{GapStarted, ms(210), 0, -1}, {GapCancelled, ms(210), 0, -1}}
	if !slices.Equal(got, want) {
		t.Errorf("events %+v, want %+v", got, want)
	}
}

// A turn begun while another plays waits for it; its start-up counts
// from its own beginning.
func TestPlayerTurnsInOrder(t *testing.T) {
	t.Parallel()
	p, _ := New(rate, Options{Now: func() time.Time { return t0 }})
	p.begin(t0)
	p.Begin("a", t0)
	p.Add("a", tone(100), at(10), 0)
	p.Finish("a", at(10))
	p.Begin("b", at(50))
	p.Add("b", tone(30), at(60), 0)
	p.Finish("b", at(60))
	p.advance(at(500))
	ha, _ := p.Wait(context.Background(), "a")
	hb, _ := p.Wait(context.Background(), "b")
	if ha.Start != ms(10) || ha.End != ms(110) {
		t.Errorf("turn a played %v-%v, want 10ms-110ms", ha.Start, ha.End)
	}
	if hb.Start != ms(60) || hb.End != ms(90) || len(hb.Gaps) != 0 {
		t.Errorf("turn b played %v-%v with gaps %v, want 60ms-90ms (since its beginning) without gaps", hb.Start, hb.End, hb.Gaps)
	}
}

func TestPlayerResamples(t *testing.T) {
	t.Parallel()
	p, _ := New(rate, Options{Now: func() time.Time { return t0 }})
	p.begin(t0)
	p.Begin("a", t0)
	for range 3 { // 3 x 333 samples at 2 kHz: 499 at 1 kHz, the remainders carried
		p.Add("a", tts.Audio{Rate: 2 * rate, Samples: make([]float32, 333)}, t0, 0)
	}
	p.Finish("a", t0)
	p.advance(at(1000))
	h, _ := p.Wait(context.Background(), "a")
	if h.Samples != 499 {
		t.Errorf("played %d samples, want 499", h.Samples)
	}
}

// A sound card plays what it was given when it asked: audio that arrives
// after a pull waits for the next one.
func TestPlayerStream(t *testing.T) {
	t.Parallel()
	now := t0
	p, _ := New(rate, Options{Now: func() time.Time { return now }})
	p.Begin("a", t0)
	p.Add("a", tone(20), t0, 0)
	buf := make([]float32, 50)
	p.Stream(buf) // 0-50 ms, asked at 0: 20 ms of audio, then a gap
	now = at(25)
	p.Add("a", tone(10), now, 1)
	p.Finish("a", now)
	now = at(30)
	p.Stream(buf) // 50-100 ms: the rest
	h, err := p.Wait(context.Background(), "a")
	if err != nil {
		t.Fatal(err)
	}
	// the second pull, asked at 30 ms, is timed from then
	want := []Gap{{Start: ms(20), Duration: ms(30), StartSample: 20, Samples: 30, Chunk: 1, Played: 20}}
	if !slices.Equal(h.Gaps, want) || h.End != ms(40) {
		t.Errorf("gaps %+v end %v, want %+v end 40ms", h.Gaps, h.End, want)
	}
}

func TestPlayerErrors(t *testing.T) {
	t.Parallel()
	if _, err := New(0, Options{}); err == nil {
		t.Errorf("rate 0 accepted")
	}
	if _, err := New(rate, Options{Preroll: -1}); err == nil {
		t.Errorf("negative pre-roll accepted")
	}
	p, _ := New(rate, Options{Now: func() time.Time { return t0 }})
	if _, err := p.Add("x", tone(1), t0, 0); err == nil {
		t.Errorf("Add to a turn never begun succeeded")
	}
	p.Begin("a", t0)
	if err := p.Begin("a", t0); err == nil {
		t.Errorf("a turn begun twice")
	}
	p.Finish("a", t0)
	if _, err := p.Add("a", tone(1), t0, 0); err == nil {
		t.Errorf("Add after Finish succeeded")
	}
	p.Close()
	if _, err := p.Wait(context.Background(), "a"); err != ErrClosed {
		t.Errorf("Wait after Close = %v, want ErrClosed", err)
	}
	if err := p.Begin("b", t0); err != ErrClosed {
		t.Errorf("Begin after Close = %v, want ErrClosed", err)
	}
}

// Run plays by the wall clock, and what it plays goes to the WAV as it
// plays.
func TestRunWritesWAV(t *testing.T) {
	t.Parallel()
	f, err := os.Create(filepath.Join(t.TempDir(), "heard.wav"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	const r = 8000
	w := NewWAV(f, r)
	var rec []float32
	p, _ := New(r, Options{Record: func(s []float32) { rec = append(rec, s...); w.Write(s) }})
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- p.Run(ctx, time.Millisecond) }()
	begin := time.Now()
	p.Begin("a", begin)
	a := tts.Audio{Rate: r, Samples: make([]float32, r/20)} // 50 ms of a ramp
	for i := range a.Samples {
		a.Samples[i] = float32(i%100)/100 - 0.5
	}
	p.Add("a", a, time.Now(), 0)
	p.Finish("a", time.Now())
	h, err := p.Wait(ctx, "a")
	if err != nil {
		t.Fatal(err)
	}
	cancel()
	if err := <-done; err != context.Canceled {
		t.Errorf("Run = %v, want context.Canceled", err)
	}
	if err := w.Close(); err != nil {
		t.Fatal(err)
	}
	if !h.Started || h.Samples != int64(len(a.Samples)) || len(h.Gaps) != 0 {
		t.Fatalf("heard %+v, want all %d samples without a gap", h, len(a.Samples))
	}
	b, err := os.ReadFile(f.Name())
	if err != nil {
		t.Fatal(err)
	}
	got, err := tts.DecodeWAV(b)
	if err != nil {
		t.Fatal(err)
	}
	if got.Rate != r || len(got.Samples) != len(rec) {
		t.Fatalf("WAV has %d samples at %d Hz, %d were played at %d", len(got.Samples), got.Rate, len(rec), r)
	}
	for i := range rec {
		if d := got.Samples[i] - rec[i]; d > 1.0/16384 || d < -1.0/16384 {
			t.Fatalf("WAV sample %d = %v, played %v", i, got.Samples[i], rec[i])
		}
	}
	// the audio sits where the player said it played
	first := int(math.Round((h.Begin.Sub(p.Origin()) + h.Start).Seconds() * r))
	if first > 0 && got.Samples[first-1] != 0 {
		t.Errorf("sample %d before the start is not silent", first-1)
	}
	if d := got.Samples[first+1] - a.Samples[1]; d > 1.0/16384 || d < -1.0/16384 {
		t.Errorf("WAV sample %d = %v, want the turn's second sample %v", first+1, got.Samples[first+1], a.Samples[1])
	}
}

// TestPlayerThroughTransport plays two 50 ms chunks, at 0 and 50 ms, that
// a player without a transport plays back to back, through each preset:
// the gaps the engine's model predicts for the same turn
// (pipeline.TestTransportHandComputed), here with real samples and a
// drifting sender that oversleeps 1 ms.
func TestPlayerThroughTransport(t *testing.T) {
	t.Parallel()
	gap := func(start, d, chunk, played int) Gap {
		return Gap{Start: ms(start), Duration: ms(d), StartSample: int64(start), Samples: int64(d), Chunk: chunk, Played: int64(played)}
	}
	tests := []struct {
		transport string
		start     time.Duration
		gaps      []Gap
	}{
		{"none", 0, nil},
		{"pipecat", 0, []Gap{gap(40, 10, 1, 40)}},
		{"livekit", ms(50), nil},
		{"telephony-20ms", 0, []Gap{gap(40, 20, 1, 40)}},
		{"websocket-raw,overshoot=1ms", 0, []Gap{gap(20, 1, 0, 20), gap(41, 1, 0, 41), gap(52, 1, 1, 52), gap(73, 1, 1, 73), gap(94, 1, 1, 94)}},
	}
	for _, tt := range tests {
		tr, err := tts.ParseTransport(tt.transport)
		if err != nil {
			t.Fatal(err)
		}
		for _, step := range []int{1, 7} {
			h, _ := play(t, Options{Transport: tr}, []arrival{{0, 50, 0}, {50, 50, 1}}, 50, step, 1000)
			if h.Start != tt.start || h.Speech != ms(100) {
				t.Errorf("%s, step %d: start %v, speech %v; want %v, 100ms", tt.transport, step, h.Start, h.Speech, tt.start)
			}
			if !slices.Equal(h.Gaps, tt.gaps) {
				t.Errorf("%s, step %d: gaps %+v, want %+v", tt.transport, step, h.Gaps, tt.gaps)
			}
		}
	}
}

// TestPlayerTransportIdle: a 4 s stall after 50 ms of audio through
// Pipecat's transport: the 10 ms it held goes out 3 s after the last audio,
// padded, so the listener hears two gaps, as the engine predicts
// (pipeline.TestTransportIdleStopsTheBot).
func TestPlayerTransportIdle(t *testing.T) {
	t.Parallel()
	tr, err := tts.ParseTransport("pipecat")
	if err != nil {
		t.Fatal(err)
	}
	h, _ := play(t, Options{Transport: tr}, []arrival{{0, 50, 0}, {4000, 50, 1}}, 4000, 5, 5000)
	want := []Gap{
		{Start: ms(40), Duration: ms(2960), StartSample: 40, Samples: 2960, Chunk: 0, Played: 40},
		{Start: ms(3010), Duration: ms(990), StartSample: 3010, Samples: 990, Chunk: 1, Played: 3010},
	}
	if !slices.Equal(h.Gaps, want) {
		t.Errorf("gaps %+v, want %+v", h.Gaps, want)
	}
}
