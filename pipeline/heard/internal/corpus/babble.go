package corpus

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"sync"

	"github.com/speech-pipeline/underrun/tts"
)

// babble adds the babble of voices talkers (a café, an open office, a
// call centre behind the phone), snr dB under the recording's speech
// level: the speech of Input.Babble's voices (in turn, again where there
// are fewer), each from a point the seed draws and over and over, at one
// speech level.
func babble(talkers int, snr float64) step {
	return func(ctx context.Context, in Input, a tts.Audio) (tts.Audio, error) {
		if in.TransformsOnly {
			return a, nil
		}
		if len(in.Babble) == 0 {
			return tts.Audio{}, errors.New("no voices to babble with")
		}
		rng := rand.New(rand.NewPCG(in.Seed, 0x626162626c65))
		sum := make([]float64, len(a.Samples))
		for j := range talkers {
			v, err := resampleShared(ctx, in.Babble[j%len(in.Babble)], a.Rate, in.Dir)
			if err != nil {
				return tts.Audio{}, err
			}
			if len(v.Samples) == 0 {
				continue
			}
			g := math.Pow(10, -SpeechLevel(v.Samples, v.Rate)/20)
			from := rng.IntN(len(v.Samples))
			for i := range sum {
				sum[i] += g * float64(v.Samples[(from+i)%len(v.Samples)])
			}
		}
		return tts.Audio{Samples: add(a.Samples, scaled(sum, SpeechLevel(a.Samples, a.Rate)-snr), 1), Rate: a.Rate}, nil
	}
}

// scaled returns s at an RMS level of db dBFS.
func scaled(s []float64, db float64) []float32 {
	var power float64
	for _, v := range s {
		power += v * v
	}
	out := make([]float32, len(s))
	if power == 0 {
		return out
	}
	g := math.Pow(10, db/20) / math.Sqrt(power/float64(len(s)))
	for i, v := range s {
		out[i] = float32(g * v)
	}
	return out
}

// shared keeps the babble's voices at the rates asked for: the same few
// voices babble behind every recording.
var shared sync.Map // sharedKey -> tts.Audio

type sharedKey struct {
	first *float32
	n     int
	rate  int
}

// resampleShared is Resample, kept for the next recording at that rate.
func resampleShared(ctx context.Context, a tts.Audio, rate int, dir string) (tts.Audio, error) {
	if len(a.Samples) == 0 || a.Rate == rate {
		return a, nil
	}
	k := sharedKey{&a.Samples[0], len(a.Samples), rate}
	if v, ok := shared.Load(k); ok {
		return v.(tts.Audio), nil
	}
	out, err := Resample(ctx, a, rate, dir)
	if err == nil {
		shared.Store(k, out)
	}
	return out, err
}

// Music returns n samples at rate of music at db dBFS (RMS), from rng: a
// melody of plucked notes (six harmonics, falling 1/k, decaying with a
// 250 ms time constant) of the A minor pentatonic scale between 220 and
// 880 Hz, two a beat at 100 beats a minute, over a bass note a beat
// (55-110 Hz) and a held chord of three of the scale's notes changing
// every four beats: never silent, its energy where speech's is.
func Music(rng *rand.Rand, n, rate int, db float64) []float32 {
	scale := []float64{0, 3, 5, 7, 10} // semitones over A
	note := func(octave float64) float64 {
		return 220 * octave * math.Pow(2, scale[rng.IntN(len(scale))]/12)
	}
	out := make([]float64, n)
	sr := float64(rate)
	pluck := func(at int, f, amp, decay float64, harmonics int) {
		for i := at; i < n; i++ {
			t := float64(i-at) / sr
			env := amp * math.Exp(-t/decay) * min(1, t/0.01)
			if t > 0.01 && env < amp*1e-3 {
				break
			}
			var v float64
			for k := 1; k <= harmonics && f*float64(k) < sr/2; k++ {
				v += math.Sin(2*math.Pi*f*float64(k)*t) / float64(k)
			}
			out[i] += env * v
		}
	}
	beat := int(0.6 * sr)
	for b := 0; b*beat < n; b++ {
		pluck(b*beat, note(1)/4, 0.8, 0.4, 4) // the bass
		pluck(b*beat, note(float64(1+rng.IntN(2))), 1, 0.25, 6)
		pluck(b*beat+beat/2, note(float64(1+rng.IntN(2))), 0.7, 0.25, 6)
		if b%4 == 0 {
			for range 3 {
				pluck(b*beat, note(1), 0.3, 1.5, 3) // the chord
			}
		}
	}
	return scaled(out, db)
}

// music adds Music snr dB under the recording's speech level.
func music(snr float64) step {
	return mix(func(in Input, a tts.Audio) []float32 {
		rng := rand.New(rand.NewPCG(in.Seed, 0x6d75736963))
		return add(a.Samples, Music(rng, len(a.Samples), a.Rate, SpeechLevel(a.Samples, a.Rate)-snr), 1)
	})
}
