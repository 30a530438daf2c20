package pipeline_test

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
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
