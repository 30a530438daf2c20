package corpus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"os/exec"
	"strconv"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// Sox is the program the conditions resample, filter and encode FLAC with.
const Sox = "sox"

// Condition is what a recording goes through before heard reads it: noise,
// a second speaker, a change of level, of rate or of encoding, a room, a
// codec, the dynamics and losses of a call.
type Condition struct {
	// Name names it in tables.
	Name string
	// Part says whether a detector may be tuned on it.
	Part Part
	// Needs are the programs it runs.
	Needs []Tool
	make  func(ctx context.Context, in Input) (File, error)
}

// Input is what a condition is applied to.
type Input struct {
	// Recording is the recording; Other a second speaker's speech (at
	// any rate), for the conditions with two; Babble the speech of the
	// voices babble is made of (at any rate).
	Recording *Recording
	Other     tts.Audio
	Babble    []tts.Audio
	// Seed makes the noise, the babble's and the music's choices and the
	// dropouts.
	Seed uint64
	// Dir holds the programs' files while they run.
	Dir string
	// TransformsOnly leaves out what the condition adds or takes away at
	// random (noise, voices, music, hum, an offset, dropouts), keeping
	// what it does to the signal (rates, filters, dynamics, rooms,
	// codecs): to measure where those leave the recording's sound.
	TransformsOnly bool
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
	if err := c.Available(ctx); err != nil {
		return File{}, err
	}
	f, err := c.make(ctx, in)
	if err != nil {
		return File{}, fmt.Errorf("%s: %w", c.Name, err)
	}
	return f, nil
}

// Available reports whether the condition's programs are here: nil, or an
// error wrapping ErrMissing that says what to install.
func (c Condition) Available(ctx context.Context) error {
	for _, t := range c.Needs {
		if err := t.Available(ctx); err != nil {
			return fmt.Errorf("%s: %w", c.Name, err)
		}
	}
	return nil
}

// Conditions are the corpus's conditions. Noise levels are RMS dBFS over
// the whole file, or SNR: the speech's active level (SpeechLevel) over
// the noise's RMS. The held-out ones include levels, colours at levels,
// a bleed of the second speaker, a level ramp, telephony's band and
// mu-law, and rates the tuning part does not have; rooms, codecs, hum,
// clipping, gain controls, babble and dropouts at settings the tuning
// part does not have; a DC offset, the telephone band alone, music, GSM
// and Opus, which it has none of; and three calls that chain several.
var Conditions = []Condition{
	{Name: "clean", Part: Tune, make: encoded(PCM16)},
	{Name: "white -60 dBFS", Part: Tune, make: noisy(White, -60, false)},
	{Name: "white SNR 30 dB", Part: Tune, make: noisy(White, 30, true)},
	{Name: "pink -45 dBFS", Part: Tune, make: noisy(Pink, -45, false)},
	{Name: "brown -35 dBFS", Part: Tune, make: noisy(Brown, -35, false)},
	{Name: "second speaker, left channel", Part: Tune, Needs: soxOnly, make: twoSpeakers(1, math.Inf(-1))},
	{Name: "level steps 0/-15/-6 dB", Part: Tune, make: levelSteps},
	{Name: "16 kHz", Part: Tune, Needs: soxOnly, make: resampled(16000, PCM16)},
	{Name: "44.1 kHz float", Part: Tune, Needs: soxOnly, make: resampled(44100, Float32)},
	{Name: "FLAC 48 kHz", Part: Tune, Needs: soxOnly, make: flac48},
	{Name: "8 kHz A-law", Part: Tune, Needs: soxOnly, make: resampled(8000, ALaw)},
	{Name: "small room, RT60 0.4 s", Part: Tune, Needs: soxOnly, make: chain(pcm16, reverb(SmallRoom))},
	{Name: "MP3 64 kbps 44.1 kHz", Part: Tune, Needs: []Tool{SoxMP3}, make: chain(mp3File(44100, 64))},
	{Name: "hum 60 Hz -50 dBFS", Part: Tune, make: chain(pcm16, hum(60, -50))},
	{Name: "clipped, peaks +6 dB", Part: Tune, make: chain(pcm16, clipped(6))},
	{Name: "fast AGC, white -70 dBFS", Part: Tune, Needs: soxOnly, make: chain(pcm16, noise(White, -70, false), compand(FastAGC))},
	{Name: "babble of 4, SNR 25 dB", Part: Tune, Needs: soxOnly, make: chain(pcm16, babble(4, 25))},
	{Name: "dropouts 10 ms, 1%", Part: Tune, make: chain(pcm16, dropouts(0.01, 10*time.Millisecond, 10*time.Millisecond))},
	{Name: "white -45 dBFS", Part: HeldOut, make: noisy(White, -45, false)},
	{Name: "pink -60 dBFS", Part: HeldOut, make: noisy(Pink, -60, false)},
	{Name: "pink SNR 20 dB", Part: HeldOut, make: noisy(Pink, 20, true)},
	{Name: "brown SNR 25 dB", Part: HeldOut, make: noisy(Brown, 25, true)},
	{Name: "second speaker, right channel, -30 dB bleed", Part: HeldOut, Needs: soxOnly, make: twoSpeakers(2, -30)},
	{Name: "level ramp -20 dB, pink -65 dBFS", Part: HeldOut, make: levelRamp},
	{Name: "telephony 300-3400 Hz, 8 kHz mu-law", Part: HeldOut, Needs: soxOnly, make: telephony},
	{Name: "24 kHz 24-bit", Part: HeldOut, Needs: soxOnly, make: resampled(24000, PCM24)},
	{Name: "48 kHz", Part: HeldOut, Needs: soxOnly, make: resampled(48000, PCM16)},
	{Name: "large room, RT60 0.9 s", Part: HeldOut, Needs: soxOnly, make: chain(pcm16, reverb(LargeRoom))},
	{Name: "MP3 24 kbps 16 kHz", Part: HeldOut, Needs: []Tool{SoxMP3}, make: chain(mp3File(16000, 24))},
	{Name: "GSM 06.10", Part: HeldOut, Needs: []Tool{SoxGSM}, make: chain(pcm16, gsm)},
	{Name: "Opus 12 kbps", Part: HeldOut, Needs: []Tool{OpusEnc, OpusDec}, make: chain(pcm16, opus(12))},
	{Name: "hum 50 Hz -40 dBFS", Part: HeldOut, make: chain(pcm16, hum(50, -40))},
	{Name: "DC offset +0.05", Part: HeldOut, make: chain(pcm16, offset(0.05))},
	{Name: "clipped, peaks +15 dB", Part: HeldOut, make: chain(pcm16, clipped(15))},
	{Name: "slow AGC, pink -65 dBFS", Part: HeldOut, Needs: soxOnly, make: chain(pcm16, noise(Pink, -65, false), compand(SlowAGC))},
	{Name: "300-3400 Hz, 16-bit", Part: HeldOut, Needs: soxOnly, make: chain(pcm16, bandPass(300, 3400))},
	{Name: "babble of 8, SNR 15 dB", Part: HeldOut, Needs: soxOnly, make: chain(pcm16, babble(8, 15))},
	{Name: "music, SNR 15 dB", Part: HeldOut, make: chain(pcm16, music(15))},
	{Name: "dropouts 10-20 ms, 3%", Part: HeldOut, make: chain(pcm16, dropouts(0.03, 10*time.Millisecond, 20*time.Millisecond))},
	{Name: "call: babble, slow AGC, 300-3400 Hz, Opus 16 kbps", Part: HeldOut, Needs: []Tool{SoxTool, OpusEnc, OpusDec},
		make: chain(pcm16, babble(6, 20), compand(SlowAGC), bandPass(300, 3400), opus(16))},
	{Name: "speakerphone: small room, hum, GSM", Part: HeldOut, Needs: []Tool{SoxGSM},
		make: chain(pcm16, reverb(SmallRoom), hum(50, -50), gsm)},
	{Name: "pink SNR 25 dB, clipped +6 dB, dropouts, MP3 32 kbps", Part: HeldOut, Needs: []Tool{SoxMP3},
		make: chain(mp3File(24000, 32), noise(Pink, 25, true), clipped(6), dropouts(0.02, 10*time.Millisecond, 20*time.Millisecond))},
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
	return chain(pcm16, noise(c, db, snr))
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
		second := make([]float32, len(a.Samples))
		ours := a.Samples
		if !in.TransformsOnly {
			other, err := Resample(ctx, in.Other, a.Rate, in.Dir)
			if err != nil {
				return File{}, err
			}
			gain := math.Pow(10, (SpeechLevel(a.Samples, a.Rate)-SpeechLevel(other.Samples, other.Rate))/20)
			for i := range second {
				// the second speaker talks on, over and over, from a point
				// the seed sets
				k := (i + int(in.Seed%997)*a.Rate/100) % len(other.Samples)
				second[i] = float32(gain * float64(other.Samples[k]))
			}
			if !math.IsInf(bleed, -1) {
				ours = add(ours, second, math.Pow(10, bleed/20))
			}
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
	if in.TransformsOnly {
		clear(noise)
	}
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
	b, err := soxConvert(ctx, in.Dir, a, "flac", "-b", "16")
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
	src, err := tempFile(dir, "sox-*.wav", wav)
	if err != nil {
		return tts.Audio{}, err
	}
	dst := src + ".out.wav"
	defer os.Remove(src)
	defer os.Remove(dst)
	args := append([]string{"-D", "-R", src, "-e", "floating-point", "-b", "32", dst}, effects...)
	if err := run(exec.CommandContext(ctx, Sox, args...)); err != nil {
		return tts.Audio{}, err
	}
	return readWAV(dst)
}
