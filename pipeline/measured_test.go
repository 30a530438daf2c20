package pipeline

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// measuredFake is a MeasuredSynth from a table keyed by byte offsets.
type measuredFake map[[2]int]SynthTiming

func (m measuredFake) Measured(turn string, from, to int) (SynthTiming, bool) {
	t, ok := m[[2]int{from, to}]
	return t, ok
}

// A turn played with a real synthesizer's measured timings: the engine's
// gaps are those of the measured first audio and lengths, by hand.
func TestMeasuredTimings(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cfg := DefaultConfig()
	p, err := tts.ParsePolicy("token")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy = p
	cfg.Synth.Mode = tts.ModeRequest
	turn := &Turn{ID: "t", Status: StatusOK, Chunks: []Chunk{
		{At: ms(0), Text: "One", Tokens: 1},      // bytes 0-3
		{At: ms(100), Text: " two", Tokens: 1},   // 3-7
		{At: ms(110), Text: " mm", Tokens: 1},    // 7-10: measured silent
		{At: ms(200), Text: " three", Tokens: 1}, // 10-16
		{At: ms(210), Text: " four", Tokens: 1},  // 16-21: not measured
	}}
	cfg.Measured = measuredFake{
		{0, 3}:   {Start: ms(0), Ready: ms(50), Done: ms(60), Audio: ms(100)},
		{3, 7}:   {Start: ms(100), Ready: ms(160), Done: ms(170), Audio: ms(100)},
		{7, 10}:  {Start: ms(110), Ready: ms(120), Done: ms(120)},
		{10, 16}: {Start: ms(200), Ready: ms(400), Done: ms(420), Audio: ms(100)},
	}
	pl, err := Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(pl.Chunks) != 4 {
		t.Fatalf("%d speech chunks, want 4 (the silent one is none)", len(pl.Chunks))
	}
	c := pl.Chunks
	if c[0].Ready != ms(50) || c[0].PlayStart != ms(50) || c[0].PlayEnd != ms(150) || c[1].PlayStart != ms(160) || c[2].Ready != ms(400) || c[2].PlayEnd != ms(500) {
		t.Errorf("chunks %+v", c)
	}
	// the unmeasured chunk keeps the models: a request (the mode here)
	// once the measured one before it is done, the time to first audio,
	// and the voice model's audio
	model := cfg.Voice.Duration(" four")
	if cfg.Synth.Timing() != tts.ModeRequest || c[3].Start != ms(420) || c[3].Ready != ms(420)+cfg.Synth.TTFA || c[3].Audio != model {
		t.Errorf("unmeasured chunk %+v, want ready at %v with %v of audio", c[3], ms(420)+cfg.Synth.TTFA, model)
	}
	want := []struct{ start, dur time.Duration }{{ms(150), ms(10)}, {ms(260), ms(140)}, {ms(500), ms(20)}}
	if len(pl.Underruns) != len(want) {
		t.Fatalf("underruns %+v, want %v", pl.Underruns, want)
	}
	for i, w := range want {
		if u := pl.Underruns[i]; u.Start != w.start || u.Duration != w.dur {
			t.Errorf("underrun %d at %v for %v, want at %v for %v", i, u.Start, u.Duration, w.start, w.dur)
		}
	}
}

// A measured chunk whose audio came in pieces, the second late: the
// player runs dry inside it, and the gap is the synthesizer's.
func TestMeasuredArrivals(t *testing.T) {
	t.Parallel()
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	cfg := DefaultConfig()
	cfg.Policy, _ = tts.ParsePolicy("token")
	turn := &Turn{ID: "t", Status: StatusOK, Chunks: []Chunk{{At: ms(0), Text: "One", Tokens: 1}, {At: ms(10), Text: " two", Tokens: 1}}}
	cfg.Measured = measuredFake{
		{0, 3}: {Start: 0, Ready: ms(20), Done: ms(200), Audio: ms(100),
			Arrivals: []Arrival{{At: ms(20), Audio: ms(40)}, {At: ms(100), Audio: ms(60)}, {At: ms(200), Audio: 0}}},
		{3, 7}: {Start: ms(10), Ready: ms(30), Done: ms(30), Audio: ms(50), Arrivals: []Arrival{{At: ms(30), Audio: ms(50)}}},
	}
	pl, err := Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	// plays 20-60, waits for the second piece until 100, plays to 160;
	// the empty piece at 200 has nothing to play, so it waits for nothing
	if len(pl.Underruns) != 1 {
		t.Fatalf("underruns %+v, want the one inside the first chunk", pl.Underruns)
	}
	u := pl.Underruns[0]
	if u.Start != ms(60) || u.Duration != ms(40) || u.Cause != CauseSynthesizer || u.Position != MidChunk {
		t.Errorf("underrun %+v, want 40ms from 60ms, synthesizer, mid chunk", u)
	}
	if c := pl.Chunks[1]; c.PlayStart != ms(160) || c.PlayEnd != ms(210) {
		t.Errorf("second chunk played %v-%v, want 160ms-210ms", c.PlayStart, c.PlayEnd)
	}
}
