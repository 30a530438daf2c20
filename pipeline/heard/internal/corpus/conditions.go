package corpus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"

	"github.com/speech-pipeline/underrun/tts"
)

// Sox is the program the conditions resample, filter and encode FLAC with.
const Sox = "sox"

// Condition is what a recording goes through before heard reads it: noise,
// a second speaker, a change of level, of rate or of encoding.
type Condition struct {
	// Name names it in tables.
	Name string
	// Part says whether a detector may be tuned on it.
	Part Part
	// Sox says whether it needs sox.
	Sox  bool
	make func(ctx context.Context, in Input) (File, error)
}

// Input is what a condition is applied to.
type Input struct {
	// Recording is the recording; Other a second speaker's speech (at
	// any rate), for the conditions with two.
	Recording *Recording
	Other     tts.Audio
	// Seed makes the noise.
	Seed uint64
	// Dir holds sox's files while it runs.
	Dir string
}

// File is a recording as a condition made it.
type File struct {
	// Bytes is the file; Ext its kind ("wav", "flac").
	Bytes []byte
	Ext   string
	// Channel is the channel of the recording's speech (tts.MixChannels
	// for a mono file), and Args the flags that make heard read it.
	Channel int
	Args    []string
}

// Make applies the condition to in.
func (c Condition) Make(ctx context.Context, in Input) (File, error) {
	if c.Sox {
		if _, err := exec.LookPath(Sox); err != nil {
			return File{}, fmt.Errorf("%s: sox %w (apt-get install sox): %w", c.Name, ErrMissing, err)
		}
	}
	f, err := c.make(ctx, in)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	return f, nil
}

// Conditions are the corpus's conditions. Noise levels are RMS dBFS over
// the whole file, or SNR: the speech's active level (SpeechLevel) over
// the noise's RMS. The held-out ones include levels, colours at levels,
// a bleed of the second speaker, a level ramp, telephony's band and
// mu-law, and rates the tuning part does not have.
var Conditions = []Condition{
	{Name: "clean", Part: Tune, make: encoded(PCM16)},
	{Name: "white -60 dBFS", Part: Tune, make: noisy(White, -60, false)},
	{Name: "white SNR 30 dB", Part: Tune, make: noisy(White, 30, true)},
	{Name: "pink -45 dBFS", Part: Tune, make: noisy(Pink, -45, false)},
	{Name: "brown -35 dBFS", Part: Tune, make: noisy(Brown, -35, false)},
	{Name: "second speaker, left channel", Part: Tune, Sox: true, make: twoSpeakers(1, math.Inf(-1))},
	{Name: "level steps 0/-15/-6 dB", Part: Tune, make: levelSteps},
	{Name: "16 kHz", Part: Tune, Sox: true, make: resampled(16000, PCM16)},
	{Name: "44.1 kHz float", Part: Tune, Sox: true, make: resampled(44100, Float32)},
	{Name: "FLAC 48 kHz", Part: Tune, Sox: true, make: flac48},
	{Name: "8 kHz A-law", Part: Tune, Sox: true, make: resampled(8000, ALaw)},
	{Name: "white -45 dBFS", Part: HeldOut, make: noisy(White, -45, false)},
	{Name: "pink -60 dBFS", Part: HeldOut, make: noisy(Pink, -60, false)},
	{Name: "pink SNR 20 dB", Part: HeldOut, make: noisy(Pink, 20, true)},
	{Name: "brown SNR 25 dB", Part: HeldOut, make: noisy(Brown, 25, true)},
	{Name: "second speaker, right channel, -30 dB bleed", Part: HeldOut, Sox: true, make: twoSpeakers(2, -30)},
	{Name: "level ramp -20 dB, pink -65 dBFS", Part: HeldOut, make: levelRamp},
	{Name: "telephony 300-3400 Hz, 8 kHz mu-law", Part: HeldOut, Sox: true, make: telephony},
	{Name: "24 kHz 24-bit", Part: HeldOut, Sox: true, make: resampled(24000, PCM24)},
	{Name: "48 kHz", Part: HeldOut, Sox: true, make: resampled(48000, PCM16)},
}

// mono returns a mono WAV file of s.
func mono(s []float32, rate int, e Encoding) (File, error) {
	b, err := WAV([][]float32{s}, rate, e)
	return File{Bytes: b, Ext: "wav", Channel: tts.MixChannels}, err
}

func encoded(e Encoding) func(context.Context, Input) (File, error) {
	return func(_ context.Context, in Input) (File, error) {
		return mono(in.Recording.Audio.Samples, in.Recording.Audio.Rate, e)
	}
}

// noisy adds noise of colour c at db dBFS, or, with snr, db under the
// speech's active level.
func noisy(c Colour, db float64, snr bool) func(context.Context, Input) (File, error) {
	return func(_ context.Context, in Input) (File, error) {
		a := in.Recording.Audio
		level := db
		if snr {
			level = SpeechLevel(a.Samples, a.Rate) - db
		}
		rng := rand.New(rand.NewPCG(in.Seed, 0x6e6f697365))
		s := add(a.Samples, Noise(rng, c, len(a.Samples), a.Rate, level), 1)
		return mono(s, a.Rate, PCM16)
	}
}

// add returns a + gain·b.
func add(a, b []float32, gain float64) []float32 {
	out := make([]float32, len(a))
	for i := range a {
		out[i] = a[i] + float32(gain*float64(b[i]))
	}
	return out
}

// twoSpeakers puts the recording on channel ch of a stereo file and a
// second speaker, at the same speech level, on the other; bleed (dB, -inf
// for none) is how much of the second speaker is heard on the
// recording's channel too (echo, a shared room).
func twoSpeakers(ch int, bleed float64) func(context.Context, Input) (File, error) {
	return func(ctx context.Context, in Input) (File, error) {
		a := in.Recording.Audio
		if len(in.Other.Samples) == 0 {
			return File{}, errors.New("no second speaker")
		}
		other, err := Resample(ctx, in.Other, a.Rate, in.Dir)
		if err != nil {
			return File{}, err
		}
		gain := math.Pow(10, (SpeechLevel(a.Samples, a.Rate)-SpeechLevel(other.Samples, other.Rate))/20)
		second := make([]float32, len(a.Samples))
		for i := range second {
			// the second speaker talks on, over and over, from a point the
			// seed sets
			k := (i + int(in.Seed%997)*a.Rate/100) % len(other.Samples)
			second[i] = float32(gain * float64(other.Samples[k]))
		}
		ours := a.Samples
		if !math.IsInf(bleed, -1) {
			ours = add(ours, second, math.Pow(10, bleed/20))
		}
		chans := [][]float32{ours, second}
		side := "left"
		if ch == 2 {
			chans[0], chans[1], side = second, ours, "right"
		}
		b, err := WAV(chans, a.Rate, PCM16)
		return File{Bytes: b, Ext: "wav", Channel: ch, Args: []string{"--channel", side}}, err
	}
}

// levelSteps plays the first third at its level, the second 15 dB under
// it, the last 6 dB under, with 20 ms ramps between.
func levelSteps(_ context.Context, in Input) (File, error) {
	a := in.Recording.Audio
	n := len(a.Samples)
	ramp := a.Rate / 50
	gainAt := func(i int) float64 {
		db := func(k int) float64 { return []float64{0, -15, -6}[min(2, k)] }
		k := i * 3 / max(1, n)
		edge := (k + 1) * n / 3
		from, to := db(k), db(k+1)
		if d := edge - i; d < ramp && k < 2 {
			return math.Pow(10, (to+(from-to)*float64(d)/float64(ramp))/20)
		}
		return math.Pow(10, from/20)
	}
	s := make([]float32, n)
	for i, v := range a.Samples {
		s[i] = float32(float64(v) * gainAt(i))
	}
	return mono(s, a.Rate, PCM16)
}

// levelRamp lowers the level steadily, by 20 dB over the file, over
// constant pink noise at -65 dBFS.
func levelRamp(_ context.Context, in Input) (File, error) {
	a := in.Recording.Audio
	n := len(a.Samples)
	rng := rand.New(rand.NewPCG(in.Seed, 0x72616d70))
	noise := Noise(rng, Pink, n, a.Rate, -65)
	s := make([]float32, n)
	for i, v := range a.Samples {
		g := math.Pow(10, -20*float64(i)/float64(max(1, n))/20)
		s[i] = float32(g*float64(v)) + noise[i]
	}
	return mono(s, a.Rate, PCM16)
}

func resampled(rate int, e Encoding) func(context.Context, Input) (File, error) {
	return func(ctx context.Context, in Input) (File, error) {
		a, err := Resample(ctx, in.Recording.Audio, rate, in.Dir)
		if err != nil {
			return File{}, err
		}
		return mono(a.Samples, a.Rate, e)
	}
}

// telephony passes 300-3400 Hz, at 8 kHz, as G.711 mu-law.
func telephony(ctx context.Context, in Input) (File, error) {
	a, err := soxAudio(ctx, in.Recording.Audio, in.Dir, "sinc", "300-3400", "rate", "-v", "8000")
	if err != nil {
		return File{}, err
	}
	return mono(a.Samples, a.Rate, MuLaw)
}

// flac48 is the recording at 48 kHz as 16-bit FLAC (sox's encoder).
func flac48(ctx context.Context, in Input) (File, error) {
	a, err := Resample(ctx, in.Recording.Audio, 48000, in.Dir)
	if err != nil {
		return File{}, err
	}
	wav, err := WAV([][]float32{a.Samples}, a.Rate, Float32)
	if err != nil {
		return File{}, err
	}
	src, dst := filepath.Join(in.Dir, "flac-in.wav"), filepath.Join(in.Dir, "flac-out.flac")
	defer os.Remove(src)
	defer os.Remove(dst)
	if err := os.WriteFile(src, wav, 0o644); err != nil {
		return File{}, err
	}
	if err := run(exec.CommandContext(ctx, Sox, "-D", "-R", src, "-b", "16", dst)); err != nil {
		return File{}, err
	}
	b, err := os.ReadFile(dst)
	return File{Bytes: b, Ext: "flac", Channel: tts.MixChannels}, err
}

// Resample returns a at rate (sox's rate effect, very high quality,
// linear phase: the time base stays).
func Resample(ctx context.Context, a tts.Audio, rate int, dir string) (tts.Audio, error) {
	if a.Rate == rate {
		return a, nil
	}
	return soxAudio(ctx, a, dir, "rate", "-v", strconv.Itoa(rate))
}

// soxAudio runs a through sox's effects, as 32-bit float without dither.
func soxAudio(ctx context.Context, a tts.Audio, dir string, effects ...string) (tts.Audio, error) {
	wav, err := WAV([][]float32{a.Samples}, a.Rate, Float32)
	if err != nil {
		return tts.Audio{}, err
	}
	f, err := os.CreateTemp(dir, "sox-*.wav")
	if err != nil {
		return tts.Audio{}, err
	}
	src := f.Name()
	f.Close()
	dst := src + ".out.wav"
	defer os.Remove(src)
	defer os.Remove(dst)
	if err := os.WriteFile(src, wav, 0o644); err != nil {
		return tts.Audio{}, err
	}
	args := append([]string{"-D", "-R", src, "-e", "floating-point", "-b", "32", dst}, effects...)
	if err := run(exec.CommandContext(ctx, Sox, args...)); err != nil {
		return tts.Audio{}, err
	}
	return readWAV(dst)
}
