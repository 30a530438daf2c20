package pipeline_test

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/tts"
)

// TestStallAfterSentenceEnd: a 2 s stall on the word after a sentence end
// (cmd/underrun/testdata/pipecat/sentence-end.yaml: TTFT 100 ms, TPOT
// 60 ms, 2 s before " Take"). Pipecat's aggregation releases "The room is
// on the second floor." only at the first character after its period, so
// the stall holds the finished sentence back and the listener hears it
// once "Sure." has played. With a TTS that takes a request per sentence
// (OpenAI's, 1071 ms to first audio), the sentence would have come late
// even released at its period (a shorter gap, the synthesizer's); the
// stall is still what made this one, 30 times the median ITL, and the
// engine names it: the late token is " Take", its ITL 2060 ms, the cause
// stall, offline and in the live guard, both when the gap is raised and
// at the turn's end, in each synthesizer mode.
func TestStallAfterSentenceEnd(t *testing.T) {
	t.Parallel()
	words := []string{"Sure", ".", " The", " room", " is", " on", " the", " second", " floor", ".", " Take", " the", " lift", " on", " your", " left", "."}
	turn := &pipeline.Turn{ID: "t1", Status: pipeline.StatusOK}
	at := 100 * gms
	for i, w := range words {
		if i > 0 {
			at += 60 * gms
		}
		if i == 10 {
			at += 2000 * gms
		}
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: at, Text: w, Tokens: 1})
	}
	for _, mode := range []tts.Mode{tts.ModeRequest, tts.ModeStream, tts.ModeParallel} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			cfg := testkit.Config(t, "pipecat", tts.OpenAISpeech, 0.1)
			cfg.Synth.Mode = mode
			off, err := pipeline.Play(cfg, turn)
			if err != nil {
				t.Fatal(err)
			}
			if len(off.Underruns) != 1 {
				t.Fatalf("%d underruns offline, want the one after %q: %+v", len(off.Underruns), "Sure.", off.Underruns)
			}
			u := off.Underruns[0]
			if u.Cause != pipeline.CauseStall || u.Token != 10 || u.ITL != 2060*gms || u.Position != pipeline.AtSentenceBoundary {
				t.Errorf("offline: %s at token %d (ITL %v, %s), want stall at token 10 (ITL 2.06s) at a sentence boundary", u.Cause, u.Token, u.ITL, u.Position)
			}
			c := liveRun(t, cfg, turn, 0)
			raised := c.kind(pipeline.EventUnderrun)
			if len(raised) != 1 {
				t.Fatalf("%d underrun events live, want 1", len(raised))
			}
			if got := raised[0].Underrun; got.Cause != u.Cause || got.Token != u.Token || got.ITL != u.ITL {
				t.Errorf("live, as raised: %s at token %d (ITL %v); offline %s at token %d (ITL %v)", got.Cause, got.Token, got.ITL, u.Cause, u.Token, u.ITL)
			}
			if final := c.turns[turn.ID]; len(final) != 1 || final[0] != u {
				t.Errorf("live, at the turn's end: %+v; offline %+v", final, u)
			}
			t.Logf("%s: %v gap at %v, %s at token %d (ITL %v)", mode, u.Duration.Round(time.Millisecond), u.Start.Round(time.Millisecond), u.Cause, u.Token, u.ITL)
		})
	}
}
