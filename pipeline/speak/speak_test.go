package speak_test

import (
	"context"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
	"github.com/speech-pipeline/underrun/sim"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/player"
	"github.com/speech-pipeline/underrun/tts/stream"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// run speaks turn through a pipeline of cfg and synth in real time and
// returns what was spoken and heard.
func run(t *testing.T, cfg pipeline.Config, synth stream.Synthesizer, turn *pipeline.Turn) *speak.Result {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	pl, err := player.New(22050, player.Options{Preroll: cfg.Preroll})
	if err != nil {
		t.Fatal(err)
	}
	defer pl.Close()
	go pl.Run(ctx, 0)
	p, err := speak.New(speak.Config{Engine: cfg, Synthesizer: synth, Player: pl})
	if err != nil {
		t.Fatal(err)
	}
	begin := time.Now()
	tr, err := p.Begin(ctx, turn.ID, "", begin)
	if err != nil {
		t.Fatal(err)
	}
	timer := time.NewTimer(0)
	<-timer.C
	for _, c := range turn.Chunks {
		if d := time.Until(begin.Add(c.At)); d > 0 {
			timer.Reset(d)
			<-timer.C
		}
		if _, err := tr.Push(c); err != nil {
			t.Fatal(err)
		}
	}
	if err := tr.End(pipeline.StatusOK, ""); err != nil {
		t.Fatal(err)
	}
	r, err := tr.Wait(ctx)
	if err != nil {
		t.Fatal(err)
	}
	return r
}

const text = "Sure, I can help with that. The room is on the second floor, next to the lift."

// stalled streams text with a stall early and one before its last word,
// long enough to starve the player however late a busy machine starts it.
func stalled() *pipeline.Turn {
	return sim.ConstantTurn("t1", text, 80*time.Millisecond, 30*time.Millisecond,
		[]sim.Stall{{Token: 6, Delay: 900 * time.Millisecond}, {Token: tokens.Count(text) - 2, Delay: 2500 * time.Millisecond}})
}

// What the player counted is what the engine predicts from the same token
// arrivals and the synthesizer's measured timings, in every timing mode.
func TestHeardIsPredicted(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 320) // short tests
	for _, mode := range []tts.Mode{tts.ModeRequest, tts.ModeStream, tts.ModeParallel} {
		t.Run(string(mode), func(t *testing.T) {
			t.Parallel()
			cfg := pipeline.DefaultConfig()
			cfg.Synth.Mode = mode
			r := run(t, cfg, e, stalled())
			if len(r.Errors) > 0 {
				t.Fatalf("synthesis errors: %v", r.Errors)
			}
			cmp, err := speak.Compare(cfg, r, 0)
			if err != nil {
				t.Fatal(err)
			}
			if len(r.Heard.Gaps) == 0 {
				t.Errorf("no gap heard; the stalls should starve the player")
			}
			for _, p := range cmp.Pairs {
				h, m := p.Heard, p.Predicted
				switch {
				case h != nil && m != nil:
					t.Logf("heard %v for %v, predicted %v for %v (%s)", h.Start, h.Duration, m.Start, m.Duration, p.Kind)
				case h != nil:
					t.Logf("heard %v for %v, not predicted (%s)", h.Start, h.Duration, p.Kind)
				default:
					t.Logf("predicted %v for %v, not heard (%s)", m.Start, m.Duration, p.Kind)
				}
			}
			if !cmp.Agrees() {
				t.Errorf("heard and predicted differ: %+v", cmp.Differences())
			}
			if d := cmp.StartDiff; d < -time.Millisecond || d > time.Millisecond {
				t.Errorf("start-up heard %v from the prediction's", d)
			}
		})
	}
}
