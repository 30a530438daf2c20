package pipeline_test

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/tts"
)

// TestBacklog checks both measures of the audio not yet played against a
// turn worked by hand: each token is 100 ms of audio, released at once,
// ready 50 ms later. Token 0 comes at 10 ms (ready 60, plays 60-160),
// token 1 at 260 (ready 310, plays 310-410).
func TestBacklog(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cfg := guardConfig(t, "token", 50*ms, 0, 0)
	cfg.Synth.Mode = tts.ModeRequest
	cfg.TokenAudio = 100 * ms
	turn := textlessTurn("t", 10*ms, 260*ms)
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	g, clock, _ := manualGuard(t, cfg, 0)
	if err := g.Begin("t", ""); err != nil {
		t.Fatal(err)
	}
	fed := 0
	for _, tc := range []struct {
		at              time.Duration
		buffered, ready time.Duration
	}{
		{5 * ms, 0, 0},
		{30 * ms, 100 * ms, 0},        // released, not made yet
		{60 * ms, 100 * ms, 100 * ms}, // made, not played
		{110 * ms, 50 * ms, 50 * ms},  // half played
		{200 * ms, 0, 0},              // dry
		{270 * ms, 100 * ms, 0},       // token 1 released; the player is still dry
		{360 * ms, 50 * ms, 50 * ms},  // playing again
		{500 * ms, 0, 0},              // all played
	} {
		want := pipeline.Backlog{Buffered: tc.buffered, Ready: tc.ready}
		if got := p.Backlog(tc.at); got != want {
			t.Errorf("offline at %v: %+v, want %+v", tc.at, got, want)
		}
		// the live guard, at the same moment of the same turn
		clock.Set(epoch.Add(tc.at))
		for ; fed < len(turn.Chunks) && turn.Chunks[fed].At <= tc.at; fed++ {
			if err := g.Chunk("t", turn.Chunks[fed]); err != nil {
				t.Fatal(err)
			}
		}
		if got, ok := g.Backlog("t"); !ok || got != want {
			t.Errorf("live at %v: %+v (%v), want %+v", tc.at, got, ok, want)
		}
		if got := p.Buffered(tc.at); got != tc.buffered {
			t.Errorf("Buffered(%v) = %v, want %v", tc.at, got, tc.buffered)
		}
	}
}

// TestPlayedAudioSkipsGaps: a chunk whose audio the synthesizer makes
// slower than real time plays in bursts; the gaps inside it play nothing.
func TestPlayedAudioSkipsGaps(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	c := pipeline.SpeechChunk{Audio: 100 * ms, PlayStart: 0, PlayEnd: 150 * ms}
	gaps := []pipeline.Underrun{{Chunk: 0, Start: 40 * ms, Duration: 50 * ms}, {Chunk: 1, Start: 20 * ms, Duration: 5 * ms}}
	for _, tc := range []struct{ at, want time.Duration }{
		{20 * ms, 20 * ms}, {40 * ms, 40 * ms}, {60 * ms, 40 * ms}, {90 * ms, 40 * ms}, {120 * ms, 70 * ms}, {200 * ms, 100 * ms},
	} {
		if got := pipeline.PlayedAudio(c, 0, gaps, tc.at); got != tc.want {
			t.Errorf("PlayedAudio at %v = %v, want %v", tc.at, got, tc.want)
		}
	}
}

// TestChunkStep: the step ChunkStep returns is what Backlog reads just
// before and just after Chunk, on a clock that stands still meanwhile, and
// the guard's events are those of Chunk.
func TestChunkStep(t *testing.T) {
	t.Parallel()
	cfg := guardConfig(t, "word", 100*gms, 0.5, 0)
	turn := testkit.WordTurn("t", guardText, 250*gms, 37*gms, map[int]time.Duration{3: 700 * gms})
	byChunk, clock1, c1 := manualGuard(t, cfg, 50*gms)
	byStep, clock2, c2 := manualGuard(t, cfg, 50*gms)
	for _, g := range []*pipeline.Guard{byChunk, byStep} {
		if err := g.Begin("t", "s"); err != nil {
			t.Fatal(err)
		}
	}
	steps := 0
	for i, ch := range turn.Chunks {
		clock1.Set(epoch.Add(ch.At))
		clock2.Set(epoch.Add(ch.At))
		ch.At = 0
		before, _ := byChunk.Backlog("t")
		if err := byChunk.Chunk("t", ch); err != nil {
			t.Fatal(err)
		}
		after, _ := byChunk.Backlog("t")
		step, err := byStep.ChunkStep("t", ch)
		if err != nil {
			t.Fatal(err)
		}
		if step.Before != before || step.After != after || !step.At.Equal(clock2.Now()) {
			t.Errorf("chunk %d: step %+v, want before %+v, after %+v at %v", i, step, before, after, clock2.Now())
		}
		if step.Before != step.After {
			steps++
		}
	}
	if steps == 0 {
		t.Error("no chunk changed the backlog")
	}
	if _, err := byStep.ChunkStep("nope", pipeline.Chunk{}); err == nil {
		t.Error("ChunkStep of an unknown turn: no error")
	}
	byChunk.Close()
	byStep.Close()
	if len(c1.events) != len(c2.events) {
		t.Fatalf("%d events by ChunkStep, %d by Chunk", len(c2.events), len(c1.events))
	}
	for i := range c1.events {
		a, b := c1.events[i], c2.events[i]
		if a.Kind != b.Kind || a.At != b.At || a.Now != b.Now {
			t.Errorf("event %d: %s at %v (now %v) by ChunkStep, %s at %v (now %v) by Chunk", i, b.Kind, b.At, b.Now, a.Kind, a.At, a.Now)
		}
	}
}

// BenchmarkBacklog reads the backlog of a turn whose text came far ahead
// of its speech, as a fast model's does: 200 chunks released, 10 played.
func BenchmarkBacklog(b *testing.B) {
	cfg := guardConfig(b, "token", 0, 0, 0)
	cfg.TokenAudio = 50 * gms
	p, err := pipeline.NewPlayout(cfg, "b")
	if err != nil {
		b.Fatal(err)
	}
	for i := range 200 {
		if err := p.Push(pipeline.Chunk{At: time.Duration(i) * gms, Text: " tok", Tokens: 1}); err != nil {
			b.Fatal(err)
		}
	}
	at := 500 * gms
	p.Advance(at)
	want := p.Backlog(at)
	if want.Buffered != 9500*gms {
		b.Fatalf("backlog %+v, want 9.5 s buffered", want)
	}
	b.ReportAllocs()
	for b.Loop() {
		if p.Backlog(at) != want {
			b.Fatal("backlog changed")
		}
	}
}
