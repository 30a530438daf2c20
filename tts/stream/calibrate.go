package stream

import (
	"context"
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// Defaults of Calibrate.
const (
	// DefaultTurnTexts is how many texts Calibrate sends back to back, as
	// one turn's chunks: the first pays the time to first audio, the
	// others the continuation latency.
	DefaultTurnTexts = 3
	// DefaultTurnPause is how long Calibrate waits between turns, so that
	// each turn's first request finds the synthesizer idle.
	DefaultTurnPause = 500 * time.Millisecond
)

// CalibrateOptions tune Calibrate.
type CalibrateOptions struct {
	// Runs repeats each synthesis and keeps the fastest (default 1).
	Runs int
	// TurnTexts is how many texts make a turn (default DefaultTurnTexts);
	// Pause the idle time before each turn (default DefaultTurnPause).
	TurnTexts int
	Pause     time.Duration
}

// Measure is one synthesis as Calibrate measured it.
type Measure struct {
	// Text is what was spoken; Audio how long the audio is.
	Text  string
	Audio time.Duration
	// FirstAudio is how long after the request its first audio came;
	// Produce how long the rest took to arrive after it.
	FirstAudio, Produce time.Duration
	// First is true for a turn's first request.
	First bool
}

// Calibrate speaks texts with s as a voice pipeline would in request mode,
// a turn of TurnTexts texts back to back after each pause, and fits a
// voice profile: the voice to the audio's lengths (tts.FitVoice), the
// time to first audio to the median first-audio latency of each turn's
// first request, the continuation latency to that of the others, and the
// real-time factor to the median time the rest of the audio took to
// arrive per second of it. The profile's mode is request: a speech API
// answers one request per text.
func Calibrate(ctx context.Context, s Synthesizer, texts []string, opts CalibrateOptions) (tts.Calibration, []Measure, error) {
	if len(texts) < 4 {
		return tts.Calibration{}, nil, fmt.Errorf("calibrate: need at least 4 texts, got %d", len(texts))
	}
	runs, per, pause := max(1, opts.Runs), opts.TurnTexts, opts.Pause
	if per <= 0 {
		per = DefaultTurnTexts
	}
	if pause <= 0 {
		pause = DefaultTurnPause
	}
	var measures []Measure
	var cal tts.Calibration
	for i, text := range texts {
		if i%per == 0 && i > 0 {
			t := time.NewTimer(pause)
			select {
			case <-t.C:
			case <-ctx.Done():
				t.Stop()
				return tts.Calibration{}, nil, ctx.Err()
			}
		}
		m := Measure{Text: text, First: i%per == 0, FirstAudio: time.Duration(math.MaxInt64)}
		for run := range runs {
			got, err := measure(ctx, s, text)
			if err != nil {
				return tts.Calibration{}, nil, fmt.Errorf("calibrate: text %d %q: %w", i+1, clip(text), err)
			}
			if run == 0 || got.FirstAudio < m.FirstAudio {
				m.FirstAudio, m.Produce = got.FirstAudio, got.Produce
			}
			m.Audio = got.Audio
		}
		measures = append(measures, m)
		cal.Durations = append(cal.Durations, m.Audio)
	}
	var firsts, later, rtfs []float64
	for _, m := range measures {
		if m.First {
			firsts = append(firsts, m.FirstAudio.Seconds())
		} else {
			later = append(later, m.FirstAudio.Seconds())
		}
		rtfs = append(rtfs, m.Produce.Seconds()/m.Audio.Seconds())
	}
	sec := func(v float64) time.Duration { return time.Duration(v * float64(time.Second)).Round(time.Microsecond) }
	synth := tts.Synth{Mode: tts.ModeRequest, TTFA: sec(median(firsts)), Continuation: sec(median(later)), RTF: math.Round(median(rtfs)*1e4) / 1e4}
	var err error
	if cal.Profile, err = tts.FitProfile(s.Name(), texts, cal.Durations, synth); err != nil {
		return tts.Calibration{}, nil, err
	}
	return cal, measures, nil
}

// measure synthesizes text once.
func measure(ctx context.Context, s Synthesizer, text string) (Measure, error) {
	sent := time.Now()
	u, err := s.Synthesize(ctx, text)
	if err != nil {
		return Measure{}, err
	}
	defer u.Close()
	var first, last time.Time
	var audio time.Duration
	err = Each(u, func(p Piece) {
		if first.IsZero() {
			first = p.At
		}
		last = p.At
		if p.Rate > 0 {
			audio += time.Duration(float64(len(p.Samples)) * float64(time.Second) / float64(p.Rate))
		}
	})
	if err != nil {
		return Measure{}, err
	}
	if audio <= 0 {
		return Measure{}, fmt.Errorf("%w: %s gave no audio", ErrSynthesis, s.Name())
	}
	return Measure{Text: text, Audio: audio, FirstAudio: first.Sub(sent), Produce: last.Sub(first)}, nil
}

func median(v []float64) float64 {
	if len(v) == 0 {
		return 0
	}
	v = slices.Clone(v)
	slices.Sort(v)
	if n := len(v); n%2 == 1 {
		return v[n/2]
	}
	return (v[len(v)/2-1] + v[len(v)/2]) / 2
}
