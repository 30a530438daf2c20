package render

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"

	"github.com/gopxl/beep/v2"
	"github.com/gopxl/beep/v2/wav"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// Gap marks: a short soft tone at the start of each underrun.
const (
	MarkFrequency = 660.0
	MarkLevel     = 0.06
	MarkLength    = 60 // milliseconds, or the gap, if shorter
)

// Options choose how a turn is rendered.
type Options struct {
	// Engine speaks the chunks (nil: the synthetic signal with the
	// playout's voice). When the playout's Config.Durations is a tts.Cache,
	// its audio is used and Engine is ignored.
	Engine tts.Engine
	// MarkGaps puts a short soft tone at the start of every underrun.
	MarkGaps bool
}

// ErrRender reports a turn that cannot be rendered.
var ErrRender = errors.New("render")

// Turn renders turn t as played through p (after p.End): audio at p's
// sample rate from the turn's request (time 0) to the end of its speech.
func Turn(ctx context.Context, t *pipeline.Turn, p *pipeline.Playout, opts Options) (tts.Audio, error) {
	cfg := p.Config()
	rate := cfg.SampleRate
	samples := func(d float64) int { return int(math.Round(d * float64(rate))) }
	out := tts.Audio{Rate: rate}
	if len(p.Chunks) == 0 {
		return out, nil
	}
	spoken := pipeline.SpokenText(t)
	end := 0
	for _, c := range p.Chunks {
		end = max(end, samples(c.PlayEnd.Seconds()))
	}
	out.Samples = make([]float32, end)

	cache, _ := cfg.Durations.(*tts.Cache)
	engine := opts.Engine
	synth, err := tts.NewSynthetic(cfg.Voice, rate)
	if err != nil {
		return out, err
	}
	if s, ok := engine.(*tts.Synthetic); ok || engine == nil {
		if ok {
			synth = s
		}
		engine = synth
	}
	gaps := p.Underruns
	for i, c := range p.Chunks {
		if err := ctx.Err(); err != nil {
			return out, err
		}
		if c.From < 0 || c.To > len(spoken) || c.From > c.To {
			return out, fmt.Errorf("%w: turn %q chunk %d covers bytes %d..%d of %d: the playout is not of this turn", ErrRender, t.ID, i, c.From, c.To, len(spoken))
		}
		// the slots the chunk's speech fills: its play time minus the gaps
		// inside it (a synthesizer slower than real time)
		type slot struct{ from, to int }
		var slots []slot
		at := samples(c.PlayStart.Seconds())
		for _, u := range gaps {
			if u.Chunk != i || u.Start < c.PlayStart || u.Start >= c.PlayEnd {
				continue
			}
			slots = append(slots, slot{at, int(u.StartSample)})
			at = int(u.StartSample + u.Samples)
		}
		slots = append(slots, slot{at, samples(c.PlayEnd.Seconds())})
		n := 0
		for _, s := range slots {
			n += max(0, s.to-s.from)
		}
		text := spoken[c.From:c.To]
		var speech []float32
		switch {
		case p.Textless(c) || engine == tts.Engine(synth) && cache == nil:
			speech = synth.Render(text, n)
		case cache != nil:
			// the chunk's share of its sentences' audio, as the engine
			// measured it (PlayTurn), or the chunk alone
			a, err := cache.Audio(text)
			if p.InContext() {
				a, err = cache.AudioInContext(spoken, c.From, c.To)
			}
			if err != nil {
				return out, err
			}
			speech = tts.Fit(a, n)
		default:
			a, err := engine.Synthesize(ctx, text)
			if err != nil {
				return out, err
			}
			speech = tts.Fit(a, n)
		}
		k := 0
		for _, s := range slots {
			for j := s.from; j < s.to && j < len(out.Samples); j++ {
				out.Samples[j] = speech[k]
				k++
			}
		}
	}
	if opts.MarkGaps {
		for _, u := range gaps {
			mark(out.Samples, int(u.StartSample), int(u.Samples), rate)
		}
	}
	return out, nil
}

// mark adds the gap tone at sample from, at most n samples long.
func mark(s []float32, from, n, rate int) {
	n = min(n, MarkLength*rate/1000, len(s)-from)
	for k := range max(0, n) {
		w := math.Sin(math.Pi * float64(k) / float64(n)) // Hann-like swell
		s[from+k] += float32(MarkLevel * w * w * math.Sin(2*math.Pi*MarkFrequency*float64(k)/float64(rate)))
	}
}

// WriteWAV writes a as a 16-bit mono PCM WAV file, encoded by beep.
func WriteWAV(w io.WriteSeeker, a tts.Audio) error {
	if a.Rate <= 0 {
		return fmt.Errorf("%w: sample rate %d", ErrRender, a.Rate)
	}
	format := beep.Format{SampleRate: beep.SampleRate(a.Rate), NumChannels: 1, Precision: 2}
	if err := wav.Encode(w, Streamer(a), format); err != nil {
		return fmt.Errorf("write wav: %w", err)
	}
	return nil
}

// Streamer plays a as a beep.Streamer (both channels the same).
func Streamer(a tts.Audio) beep.Streamer {
	pos := 0
	return beep.StreamerFunc(func(buf [][2]float64) (int, bool) {
		if pos >= len(a.Samples) {
			return 0, false
		}
		n := copy2(buf, a.Samples[pos:])
		pos += n
		return n, true
	})
}

func copy2(dst [][2]float64, src []float32) int {
	n := min(len(dst), len(src))
	for i := range n {
		v := float64(max(-1, min(1, src[i])))
		dst[i] = [2]float64{v, v}
	}
	return n
}
