package speak_test

import (
	"context"
	"fmt"
	"io"
	"strings"
	"sync"
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

// toneSynth speaks every text as 100 ms of tone at once, and fails on the
// text fail partway: after half of its audio.
type toneSynth struct{ fail string }

func (s toneSynth) Name() string { return "tone" }

func (s toneSynth) Synthesize(ctx context.Context, text string) (stream.Utterance, error) {
	return &toneUtterance{fail: text == s.fail}, nil
}

type toneUtterance struct {
	n    int
	fail bool
}

func (u *toneUtterance) Next() (stream.Piece, error) {
	if u.n == 2 {
		return stream.Piece{}, io.EOF
	}
	if u.n == 1 && u.fail {
		return stream.Piece{}, fmt.Errorf("%w: the voice model crashed", stream.ErrSynthesis)
	}
	u.n++
	s := make([]float32, 1102) // 50 ms at 22,050 Hz
	for i := range s {
		s[i] = 0.3
	}
	return stream.Piece{Samples: s, Rate: 22050, At: time.Now()}, nil
}

func (u *toneUtterance) Close() error { return nil }

// A synthesis that fails partway: the error is reported, the audio before
// it plays, and the turn goes on to its end.
func TestSynthesisFailsTurnGoesOn(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	cfg.Synth.Mode = tts.ModeRequest
	turn := sim.ConstantTurn("t1", "One two three four.", 10*time.Millisecond, 10*time.Millisecond, nil)
	r := run(t, cfg, toneSynth{fail: "two "}, turn)
	if len(r.Errors) != 1 || !strings.Contains(r.Errors[0], "crashed") || !strings.Contains(r.Errors[0], `"two "`) {
		t.Fatalf("errors %q, want the failure of chunk \"two \"", r.Errors)
	}
	var samples int64
	for _, c := range r.Chunks {
		samples += c.Samples
		if c.Text == "two " && (c.Err == "" || c.Samples != 1102) {
			t.Errorf("failed chunk %+v: want its error and the 50 ms before it", c)
		}
	}
	if len(r.Chunks) != 4 || r.Heard.Samples != samples || samples != 7*1102 {
		t.Errorf("%d chunks, %d samples heard of %d; want 4 chunks, all 7 pieces heard", len(r.Chunks), r.Heard.Samples, samples)
	}
}

// contexts counts the synthesis contexts a ContextSynthesizer opens.
type contexts struct {
	stream.ContextSynthesizer
	mu sync.Mutex
	n  int
}

func (c *contexts) OpenContext(ctx context.Context) (stream.Context, error) {
	c.mu.Lock()
	c.n++
	c.mu.Unlock()
	return c.ContextSynthesizer.OpenContext(ctx)
}

// TestStreamModeToolCallOpensContext: in stream mode the reply after a
// tool call is spoken into a new synthesis context, as the frameworks
// synthesize it on a stream of its own; without the call one context
// speaks the turn. The whole reply is heard either way.
func TestStreamModeToolCallOpensContext(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 320)
	for _, tool := range []bool{false, true} {
		cfg := pipeline.DefaultConfig()
		cfg.Synth.Mode = tts.ModeStream
		cfg.Policy, _ = tts.ParsePolicy("word")
		synth := &contexts{ContextSynthesizer: e}
		ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
		pl, err := player.New(22050, player.Options{})
		if err != nil {
			t.Fatal(err)
		}
		go pl.Run(ctx, 0)
		p, err := speak.New(speak.Config{Engine: cfg, Synthesizer: synth, Player: pl})
		if err != nil {
			t.Fatal(err)
		}
		tr, err := p.Begin(ctx, "t", "", time.Now())
		if err != nil {
			t.Fatal(err)
		}
		for i, w := range []string{"Let", " me", " check.", " It", " is", " sunny."} {
			if tool && i == 3 {
				if err := tr.ToolCall(pipeline.ToolCall{At: 35 * time.Millisecond, Duration: 300 * time.Millisecond, Name: "get_weather"}); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := tr.Push(pipeline.Chunk{At: time.Duration(10*i+10) * time.Millisecond, Text: w, Tokens: 1}); err != nil {
				t.Fatal(err)
			}
		}
		if err := tr.End(pipeline.StatusOK, ""); err != nil {
			t.Fatal(err)
		}
		r, err := tr.Wait(ctx)
		cancel()
		pl.Close()
		if err != nil {
			t.Fatal(err)
		}
		want := 1
		if tool {
			want = 2
		}
		if synth.n != want || len(r.Chunks) != 6 || len(r.Errors) > 0 {
			t.Errorf("tool call %v: %d contexts for %d chunks (errors %v), want %d for 6", tool, synth.n, len(r.Chunks), r.Errors, want)
		}
		// the whole reply is heard: more than a second of speech
		if !r.Heard.Started || r.Heard.Speech < time.Second {
			t.Errorf("tool call %v: heard %v of speech, want the whole reply", tool, r.Heard.Speech)
		}
	}
}
