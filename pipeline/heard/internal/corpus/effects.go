package corpus

import (
	"context"
	"math"
	"math/rand/v2"
	"strconv"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// step is one thing a condition does to the recording's audio.
type step func(ctx context.Context, in Input, a tts.Audio) (tts.Audio, error)

// last makes the condition's file of the audio the steps left.
type last func(ctx context.Context, in Input, a tts.Audio) (File, error)

// pcm16 writes the audio as a mono 16-bit WAV.
func pcm16(_ context.Context, _ Input, a tts.Audio) (File, error) {
	return mono(a.Samples, a.Rate, PCM16)
}

// chain applies the steps in turn to the recording and makes the file
// with end.
func chain(end last, steps ...step) func(context.Context, Input) (File, error) {
	return func(ctx context.Context, in Input) (File, error) {
		a := in.Recording.Audio
		for _, s := range steps {
			var err error
			if a, err = s(ctx, in, a); err != nil {
				return File{}, err
			}
		}
		return end(ctx, in, a)
	}
}

// mix is a step that adds a signal made for the audio (noise, voices,
// hum, an offset) or takes some of it away at random (dropouts): none of
// it where the input asks for the transforms only.
func mix(f func(in Input, a tts.Audio) []float32) step {
	return func(_ context.Context, in Input, a tts.Audio) (tts.Audio, error) {
		if in.TransformsOnly {
			return a, nil
		}
		return tts.Audio{Samples: f(in, a), Rate: a.Rate}, nil
	}
}

// sox is a step that runs the audio through sox's effects.
func sox(effects ...string) step {
	return func(ctx context.Context, in Input, a tts.Audio) (tts.Audio, error) {
		return soxAudio(ctx, a, in.Dir, effects...)
	}
}

// Room is a room's reverberation, as sox's reverb effect (a Freeverb)
// makes it: the dry sound with its reverberation mixed in.
type Room struct {
	// Reverberance, HFDamping and Scale are sox reverb's reverberance,
	// HF-damping and room-scale, in percent; PreDelay its pre-delay.
	Reverberance, HFDamping, Scale float64
	PreDelay                       time.Duration
}

// reverb puts the audio in room r.
func reverb(r Room) step {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	return sox("reverb", f(r.Reverberance), f(r.HFDamping), f(r.Scale), "100", f(float64(r.PreDelay.Milliseconds())), "0")
}

// The rooms of the conditions: a small furnished room (its reverberation
// time, RT60 by Schroeder's integral, 0.4 s: TestRooms), and a large bare
// one (0.9 s).
var (
	SmallRoom = Room{Reverberance: 30, HFDamping: 50, Scale: 70}
	LargeRoom = Room{Reverberance: 40, HFDamping: 30, Scale: 100, PreDelay: 10 * time.Millisecond}
)

// Compander is an automatic gain control as sox's compand effect makes
// it: the level, followed with Attack and Decay time constants, is mapped
// through the transfer function Curve (pairs of input and output dBFS,
// a Knee dB wide soft knee), a gain of Curve[1]-Curve[0] under the first
// point; no look-ahead, so the sound stays where it was.
type Compander struct {
	Attack, Decay time.Duration
	Knee          float64
	Curve         []float64
}

// compand runs the audio through the compander.
func compand(c Compander) step {
	f := func(v float64) string { return strconv.FormatFloat(v, 'f', -1, 64) }
	curve := ""
	for i, v := range c.Curve {
		if i > 0 {
			curve += ","
		}
		curve += f(v)
	}
	// the gain 0 dB, the level at the start the first point's, no delay
	return sox("compand", f(c.Attack.Seconds())+","+f(c.Decay.Seconds()), f(c.Knee)+":"+curve, "0", f(c.Curve[0]), "0")
}

// The automatic gain controls of the conditions, as a phone's or a
// conferencing client's gain control pumps up the noise of a pause: a
// fast one (attack 5 ms, release 300 ms) raising quiet sound by up to 20
// dB and compressing louder sound 2.5:1 to 3.3:1, and a slow one (attack
// 20 ms, release 800 ms) raising quiet sound by up to 30 dB and
// compressing louder sound 2:1 to 5:1.
var (
	FastAGC = Compander{Attack: 5 * time.Millisecond, Decay: 300 * time.Millisecond, Knee: 6, Curve: []float64{-70, -50, -40, -22, -20, -14, 0, -8}}
	SlowAGC = Compander{Attack: 20 * time.Millisecond, Decay: 800 * time.Millisecond, Knee: 6, Curve: []float64{-70, -40, -30, -18, -10, -10, 0, -6}}
)

// bandPass keeps from to to Hz (sox's sinc filter, linear phase, at the
// audio's rate).
func bandPass(from, to int) step {
	return sox("sinc", strconv.Itoa(from)+"-"+strconv.Itoa(to))
}

// clipped raises the audio until its peak is over dB over full scale and
// clips it there, as an input gain set too high does.
func clipped(over float64) step {
	return func(_ context.Context, _ Input, a tts.Audio) (tts.Audio, error) {
		var peak float64
		for _, v := range a.Samples {
			peak = max(peak, math.Abs(float64(v)))
		}
		if peak == 0 {
			return a, nil
		}
		g := math.Pow(10, over/20) / peak
		out := make([]float32, len(a.Samples))
		for i, v := range a.Samples {
			out[i] = float32(max(-1, min(1, g*float64(v))))
		}
		return tts.Audio{Samples: out, Rate: a.Rate}, nil
	}
}

// offset adds a constant: a converter's DC offset.
func offset(dc float64) step {
	return mix(func(_ Input, a tts.Audio) []float32 {
		out := make([]float32, len(a.Samples))
		for i, v := range a.Samples {
			out[i] = v + float32(dc)
		}
		return out
	})
}

// HumHarmonics are the levels of mains hum's harmonics, in dB against its
// fundamental (the second, third and on): a rectifier's buzz, strongest
// in the odd ones.
var HumHarmonics = []float64{-6, -3, -12, -9, -18, -15, -24, -21}

// Hum returns n samples at rate of mains hum at f Hz: the fundamental and
// HumHarmonics, at phases rng draws, db dBFS in all (RMS).
func Hum(rng *rand.Rand, f float64, n, rate int, db float64) []float32 {
	amps := []float64{1}
	for _, h := range HumHarmonics {
		amps = append(amps, math.Pow(10, h/20))
	}
	var power float64
	for _, a := range amps {
		power += a * a / 2
	}
	scale := math.Pow(10, db/20) / math.Sqrt(power)
	phases := make([]float64, len(amps))
	for k := range phases {
		phases[k] = 2 * math.Pi * rng.Float64()
	}
	out := make([]float32, n)
	for i := range out {
		t := float64(i) / float64(rate)
		var v float64
		for k, a := range amps {
			v += a * math.Sin(2*math.Pi*f*float64(k+1)*t+phases[k])
		}
		out[i] = float32(scale * v)
	}
	return out
}

// hum adds mains hum at f Hz, db dBFS.
func hum(f, db float64) step {
	return mix(func(in Input, a tts.Audio) []float32 {
		rng := rand.New(rand.NewPCG(in.Seed, 0x68756d))
		return add(a.Samples, Hum(rng, f, len(a.Samples), a.Rate, db), 1)
	})
}

// noise adds noise of colour c at db dBFS, or, with snr, db under the
// speech's active level.
func noise(c Colour, db float64, snr bool) step {
	return mix(func(in Input, a tts.Audio) []float32 {
		level := db
		if snr {
			level = SpeechLevel(a.Samples, a.Rate) - db
		}
		rng := rand.New(rand.NewPCG(in.Seed, 0x6e6f697365))
		return add(a.Samples, Noise(rng, c, len(a.Samples), a.Rate, level), 1)
	})
}

// Dropout is a stretch of the audio that a lost packet took: from Start
// for Length samples, zero.
type Dropout struct{ Start, Length int }

// Dropouts draws the losses of n samples at rate sent in 20 ms packets:
// each packet is lost with probability loss, and a lost one is silent for
// from to to of its start (an unconcealed loss, where a jitter buffer
// played nothing or a recorder wrote nothing for it). They are the
// network's, not an underrun of the player: a detector should report
// none of them.
func Dropouts(rng *rand.Rand, n, rate int, loss float64, from, to time.Duration) []Dropout {
	packet := rate / 50
	var out []Dropout
	for start := 0; start < n; start += packet {
		if rng.Float64() >= loss {
			continue
		}
		d := from + time.Duration(rng.Int64N(int64(to-from)+1))
		l := int(math.Round(d.Seconds() * float64(rate)))
		out = append(out, Dropout{Start: start, Length: min(l, n-start)})
	}
	return out
}

// dropouts silences what Dropouts draws.
func dropouts(loss float64, from, to time.Duration) step {
	return mix(func(in Input, a tts.Audio) []float32 {
		rng := rand.New(rand.NewPCG(in.Seed, 0x6c6f7373))
		out := append([]float32(nil), a.Samples...)
		for _, d := range Dropouts(rng, len(out), a.Rate, loss, from, to) {
			clear(out[d.Start : d.Start+d.Length])
		}
		return out
	})
}
