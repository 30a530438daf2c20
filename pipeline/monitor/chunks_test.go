package monitor

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// TestSubscribersAskForChunks: an /events subscriber with ?chunks=1 gets
// a speech_chunk message per chunk handed to the synthesizer, with the
// chunk's timeline; one without it gets none.
func TestSubscribersAskForChunks(t *testing.T) {
	t.Parallel()
	clock := pipeline.NewManualClock(time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC))
	s, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 50*time.Millisecond), Clock: clock})
	plain := subscribe(t, ts)
	withChunks := subscribeTo(t, ts, "/events?chunks=1")
	m := &manualSession{t: t, s: s, clock: clock, c: ingest(t, ts, "kitchen")}
	m.send(`{"type":"turn_start","turn":"t1"}`)
	m.send(`{"type":"chunk","turn":"t1","text":"Hello"}`)
	clock.Advance(250 * time.Millisecond)
	m.send(`{"type":"chunk","turn":"t1","text":" again"}`)
	m.send(`{"type":"turn_end","turn":"t1"}`)
	withChunks.wait(t, "turn", nil)
	plain.wait(t, "turn", nil)
	if n := plain.count(string(TypeSpeechChunk)); n != 0 {
		t.Errorf("a subscriber that did not ask got %d speech chunks", n)
	}
	// token chunking, a request per token, 50 ms to first audio, 100 ms of
	// audio each: "Hello" released at 0, plays 50-150; " again" at 250,
	// ready 300, plays 300-400
	want := []map[string]any{
		{"index": 0.0, "text": "Hello", "release_ms": 0.0, "released_by": "token", "token": 0.0, "synth_start_ms": 0.0, "first_audio_ms": 50.0, "play_start_ms": 50.0, "play_end_ms": 150.0},
		{"index": 1.0, "text": " again", "release_ms": 250.0, "released_by": "token", "token": 1.0, "synth_start_ms": 250.0, "first_audio_ms": 300.0, "play_start_ms": 300.0, "play_end_ms": 400.0},
	}
	if n := withChunks.count(string(TypeSpeechChunk)); n != len(want) {
		t.Fatalf("%d speech chunks, want %d", n, len(want))
	}
	for i, w := range want {
		got := withChunks.wait(t, string(TypeSpeechChunk), func(m map[string]any) bool { return m["index"] == w["index"] })
		if got["session"] != "kitchen" || got["turn"] != "t1" {
			t.Errorf("chunk %d names %v/%v", i, got["session"], got["turn"])
		}
		for k, v := range w {
			if got[k] != v {
				t.Errorf("chunk %d: %s = %v, want %v", i, k, got[k], v)
			}
		}
	}
}
