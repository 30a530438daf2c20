package render

import (
	"context"
	"sort"
	"sync"

	"github.com/gopxl/beep/v2"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// Live is what the listener hears, as it happens: a beep.Streamer that
// plays speech scheduled while it runs (Add) and silence in between, so a
// sound card can play a live or replayed stream the moment the guard
// schedules each chunk. Sample 0 is the first sample streamed. It never
// ends before Close. It is safe for concurrent use.
type Live struct {
	mu     sync.Mutex
	pos    int64
	segs   []segment // by start
	closed bool
}

type segment struct {
	at      int64
	samples []float32
}

var _ beep.Streamer = (*Live)(nil)

// NewLive returns a silent live stream.
func NewLive() *Live { return &Live{} }

// Add schedules samples to play from sample at; what lies before the
// stream's position is dropped, and later audio overlapping earlier audio
// is mixed with it.
func (l *Live) Add(at int64, samples []float32) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if skip := l.pos - at; skip > 0 {
		if skip >= int64(len(samples)) {
			return
		}
		samples, at = samples[skip:], l.pos
	}
	i := sort.Search(len(l.segs), func(i int) bool { return l.segs[i].at > at })
	l.segs = append(l.segs, segment{})
	copy(l.segs[i+1:], l.segs[i:])
	l.segs[i] = segment{at: at, samples: samples}
}

// Position returns how many samples have been streamed.
func (l *Live) Position() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.pos
}

// End returns the sample after the last scheduled audio (0 if none).
func (l *Live) End() int64 {
	l.mu.Lock()
	defer l.mu.Unlock()
	var end int64
	for _, s := range l.segs {
		end = max(end, s.at+int64(len(s.samples)))
	}
	return end
}

// Close ends the stream: Stream then reports it is drained.
func (l *Live) Close() {
	l.mu.Lock()
	l.closed = true
	l.mu.Unlock()
}

// Stream fills buf with the next samples (both channels the same).
func (l *Live) Stream(buf [][2]float64) (int, bool) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.closed {
		return 0, false
	}
	for i := range buf {
		buf[i] = [2]float64{}
	}
	from, to := l.pos, l.pos+int64(len(buf))
	keep := l.segs[:0]
	for _, s := range l.segs {
		end := s.at + int64(len(s.samples))
		if s.at < to && end > from {
			for j := max(s.at, from); j < min(end, to); j++ {
				v := buf[j-from][0] + float64(s.samples[j-s.at])
				v = max(-1, min(1, v))
				buf[j-from] = [2]float64{v, v}
			}
		}
		if end > to {
			keep = append(keep, s)
		}
	}
	clear(l.segs[len(keep):])
	l.segs = keep
	l.pos = to
	return len(buf), true
}

// Err returns nil: a live stream does not fail.
func (l *Live) Err() error { return nil }

// Speech returns the samples of one speech chunk as the player plays it: n
// samples of text at rate, gaps inside it (Event.Gaps, a synthesizer
// slower than real time) silent. The audio is the synthetic signal for a
// chunk with tokens that carry no text (textless, Event.Textless: its text
// is a stand-in, as in Turn), else cfg.Durations' when that is a
// tts.Cache, else engine's (nil: the synthetic signal), fitted to n.
func Speech(ctx context.Context, cfg pipeline.Config, engine tts.Engine, c pipeline.SpeechChunk, text string, textless bool, gaps []pipeline.Underrun) ([]float32, error) {
	rate := cfg.SampleRate
	samples := func(d float64) int64 { return int64(d*float64(rate) + 0.5) }
	from := samples(c.PlayStart.Seconds())
	n := samples(c.PlayEnd.Seconds()) - from
	out := make([]float32, max(0, n))
	speechN := n
	for _, u := range gaps {
		speechN -= u.Samples
	}
	var speech []float32
	cache, _ := cfg.Durations.(*tts.Cache)
	switch s, ok := engine.(*tts.Synthetic); {
	case cache != nil && !textless:
		a, err := cache.Audio(text)
		if err != nil {
			return nil, err
		}
		speech = tts.Fit(a, int(max(0, speechN)))
	case ok || engine == nil || textless:
		if !ok {
			var err error
			if s, err = tts.NewSynthetic(cfg.Voice, rate); err != nil {
				return nil, err
			}
		}
		speech = s.Render(text, int(max(0, speechN)))
	default:
		a, err := engine.Synthesize(ctx, text)
		if err != nil {
			return nil, err
		}
		speech = tts.Fit(a, int(max(0, speechN)))
	}
	k := 0
	at := int64(0)
	for _, u := range gaps {
		for ; at < u.StartSample-from && k < len(speech); at++ {
			out[at] = speech[k]
			k++
		}
		at = u.StartSample + u.Samples - from
	}
	for ; at < n && k < len(speech); at++ {
		out[at] = speech[k]
		k++
	}
	return out, nil
}
