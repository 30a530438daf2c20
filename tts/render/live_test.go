package render

import (
	"context"
	"math"
	"slices"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/tts"
)

func TestLiveStream(t *testing.T) {
	t.Parallel()
	l := NewLive()
	l.Add(3, []float32{0.5, 0.5})
	l.Add(4, []float32{0.25, 0.25})   // overlaps: mixed
	l.Add(10, []float32{0.9, 0.9, 2}) // clipped to 1
	buf := make([][2]float64, 6)
	n, ok := l.Stream(buf)
	if n != 6 || !ok {
		t.Fatalf("Stream = %d, %v", n, ok)
	}
	got := make([]float64, n)
	for i, f := range buf {
		got[i] = f[0]
		if f[0] != f[1] {
			t.Errorf("sample %d: channels differ", i)
		}
	}
	if want := []float64{0, 0, 0, 0.5, 0.75, 0.25}; !slices.Equal(got, want) {
		t.Errorf("first 6 samples %v, want %v", got, want)
	}
	// audio scheduled in the past is cut to what is still ahead
	l.Add(5, []float32{0.1, 0.2, 0.3})
	l.Stream(buf)
	for i := range got {
		got[i] = math.Round(buf[i][0]*1000) / 1000
	}
	if want := []float64{0.2, 0.3, 0, 0, 0.9, 0.9}; !slices.Equal(got, want) {
		t.Errorf("next 6 samples %v, want %v", got, want)
	}
	if l.Position() != 12 || l.End() != 13 {
		t.Errorf("position %d end %d, want 12 and 13", l.Position(), l.End())
	}
	l.Close()
	if n, ok := l.Stream(buf); n != 0 || ok {
		t.Errorf("after Close: %d, %v", n, ok)
	}
	if l.Err() != nil {
		t.Error(l.Err())
	}
}

// The live audio of every chunk is exactly its stretch of the rendered
// turn: what --play plays is what --wav writes.
func TestSpeechMatchesRender(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		cfg  pipeline.Config
	}{
		{"word", testkit.Config(t, "word", 100*ms, 0.1)},
		{"slow-synth", testkit.Config(t, "sentence", 100*ms, 1.7)},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			turn := testkit.WordTurn("s", paragraph, 300*ms, 40*ms, map[int]time.Duration{3: 1000 * ms})
			p, err := pipeline.Play(tc.cfg, turn)
			if err != nil {
				t.Fatal(err)
			}
			whole, err := Turn(context.Background(), turn, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			spoken := pipeline.SpokenText(turn)
			l := NewLive()
			for i, c := range p.Chunks {
				var gaps []pipeline.Underrun
				for _, u := range p.Underruns {
					if u.Chunk == i && u.Start >= c.PlayStart && u.Start < c.PlayEnd {
						gaps = append(gaps, u)
					}
				}
				s, err := Speech(context.Background(), tc.cfg, nil, c, spoken[c.From:c.To], false, gaps)
				if err != nil {
					t.Fatal(err)
				}
				from := int(math.Round(c.PlayStart.Seconds() * float64(tc.cfg.SampleRate)))
				if !slices.Equal(s, whole.Samples[from:from+len(s)]) {
					t.Fatalf("chunk %d: live samples differ from the rendered turn", i)
				}
				l.Add(int64(from), s)
			}
			buf := make([][2]float64, len(whole.Samples))
			l.Stream(buf)
			for i, f := range buf {
				if float32(f[0]) != max(-1, min(1, whole.Samples[i])) {
					t.Fatalf("sample %d: live %v, rendered %v", i, f[0], whole.Samples[i])
				}
			}
		})
	}
}

// wordsOnly is an engine that must not be asked to speak stand-in text.
type wordsOnly struct{ t *testing.T }

func (w wordsOnly) Name() string { return "words-only" }
func (w wordsOnly) Speech() bool { return true }
func (w wordsOnly) Synthesize(_ context.Context, text string) (tts.Audio, error) {
	w.t.Errorf("engine asked to speak %q", text)
	return tts.Audio{}, nil
}

// TestSpeechTextlessIsSynthetic: tokens without text are heard as the
// synthetic signal live, as in a rendered turn, never as their stand-in
// text spoken by a real engine.
func TestSpeechTextlessIsSynthetic(t *testing.T) {
	t.Parallel()
	cfg := testkit.Config(t, "word", 100*ms, 0.1)
	turn := &pipeline.Turn{ID: "bare", Status: pipeline.StatusOK}
	for i := range 12 {
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: time.Duration(300+40*i) * ms, Textless: true, Tokens: 1})
	}
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	engine := wordsOnly{t}
	whole, err := Turn(context.Background(), turn, p, Options{Engine: engine})
	if err != nil {
		t.Fatal(err)
	}
	spoken := pipeline.SpokenText(turn)
	for i, c := range p.Chunks {
		s, err := Speech(context.Background(), cfg, engine, c, spoken[c.From:c.To], true, nil)
		if err != nil {
			t.Fatal(err)
		}
		from := int(math.Round(c.PlayStart.Seconds() * float64(cfg.SampleRate)))
		if !slices.Equal(s, whole.Samples[from:from+len(s)]) {
			t.Fatalf("chunk %d: live samples differ from the rendered turn", i)
		}
	}
}
