package tts

import (
	"context"
	"math"
	"unicode/utf8"
)

// SyntheticName labels the synthetic engine in reports; it says plainly
// that the audio is not speech.
const SyntheticName = "synthetic (voice-like signal, not speech)"

// Synthetic is a pure-Go stand-in for a speech engine, for when none is
// installed: a buzzy voice-like tone, one swell per syllable, with the
// timing of a Voice (each word and each pause exactly as long as the voice
// model says). Pauses at punctuation carry a faint breath noise, never
// digital silence, so that the only silence in a rendered turn is the
// silence of the player. It is not speech.
type Synthetic struct {
	voice Voice
	rate  int
}

// NewSynthetic returns the synthetic engine with the timing of v, at rate
// samples per second (0: DefaultSampleRate).
func NewSynthetic(v Voice, rate int) (*Synthetic, error) {
	if err := v.Validate(); err != nil {
		return nil, err
	}
	if rate <= 0 {
		rate = DefaultSampleRate
	}
	return &Synthetic{voice: v, rate: rate}, nil
}

// Name returns SyntheticName.
func (s *Synthetic) Name() string { return SyntheticName }

// Speech returns false: the signal is not speech.
func (s *Synthetic) Speech() bool { return false }

// Synthesize returns the signal for text, Voice.Duration(text) long.
func (s *Synthetic) Synthesize(ctx context.Context, text string) (Audio, error) {
	if err := ctx.Err(); err != nil {
		return Audio{}, err
	}
	m := s.voice.Meter()
	total := m.Add(text)
	n := int(math.Round(total.Seconds() * float64(s.rate)))
	return Audio{Samples: s.Render(text, n), Rate: s.rate}, nil
}

// Synthetic signal levels.
const (
	synthLevel  = 0.35  // peak of a voiced syllable
	synthFloor  = 0.08  // level between syllables of a word
	breathLevel = 0.012 // noise in a pause
)

// Render returns exactly n samples of the signal for text: the time of each
// rune as the voice's meter gives it, stretched to n.
func (s *Synthetic) Render(text string, n int) []float32 {
	out := make([]float32, max(0, n))
	if n == 0 {
		return out
	}
	m := s.voice.Meter()
	type seg struct {
		d     float64 // seconds
		voice bool
		word  int // letters so far in the word (voiced)
	}
	var segs []seg
	var total float64
	letters := 0
	for _, r := range text {
		var buf [utf8.UTFMax]byte
		k := utf8.EncodeRune(buf[:], r)
		d := m.Add(string(buf[:k])).Seconds()
		w := isWordRune(r)
		if w {
			letters++
		} else {
			letters = 0
		}
		if d > 0 {
			segs = append(segs, seg{d, w, letters})
			total += d
		}
	}
	if total == 0 {
		// text with no time of its own stretched into a slot: a breath
		segs, total = []seg{{1, false, 0}}, 1
	}
	scale := float64(n) / total
	rng := uint32(2463534242)
	noise := func() float32 {
		rng ^= rng << 13
		rng ^= rng >> 17
		rng ^= rng << 5
		return float32(rng)/float32(math.MaxUint32)*2 - 1
	}
	phase := 0.0
	pos := 0.0
	i := 0
	for si, sg := range segs {
		end := pos + sg.d*scale
		if si == len(segs)-1 {
			end = float64(n)
		}
		start := i
		stop := min(n, int(math.Round(end)))
		for ; i < stop; i++ {
			if !sg.voice {
				out[i] = breathLevel * noise()
				continue
			}
			// one swell per two and a half letters: a syllable
			u := float64(i-start) / math.Max(1, float64(stop-start))
			syl := float64(sg.word-1)/2.5 + u/2.5
			env := synthFloor + (synthLevel-synthFloor)*math.Pow(math.Sin(math.Pi*(syl-math.Floor(syl))), 2)
			t := float64(i) / float64(s.rate)
			f0 := 118 + 14*math.Sin(2*math.Pi*0.7*t) + 4*math.Sin(2*math.Pi*5.5*t)
			phase += 2 * math.Pi * f0 / float64(s.rate)
			// a few harmonics, weighted like an open vowel
			v := math.Sin(phase) + 0.7*math.Sin(2*phase) + 0.5*math.Sin(3*phase) + 0.35*math.Sin(5*phase) + 0.2*math.Sin(7*phase)
			out[i] = float32(env * v / 2.75)
		}
		pos = end
	}
	// short fades at the edges, so chunks join without clicks
	fade := min(n/2, s.rate/400)
	for k := range fade {
		g := float32(k) / float32(fade)
		out[k] *= g
		out[n-1-k] *= g
	}
	// but never digital silence: the first and last samples keep a breath
	for _, k := range []int{0, n - 1} {
		if out[k] == 0 {
			out[k] = breathLevel / 2
		}
	}
	return out
}
