package corpus

import (
	"context"
	"errors"
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
	"gonum.org/v1/gonum/dsp/fourier"
)

// needs skips the test where a tool is missing.
func needs(t *testing.T, tools ...Tool) {
	t.Helper()
	for _, tool := range tools {
		if err := tool.Available(context.Background()); errors.Is(err, ErrMissing) {
			t.Skip(err)
		}
	}
}

// apply runs a step on a, as a condition of a recording of a would.
func apply(t *testing.T, s step, a tts.Audio, seed uint64) tts.Audio {
	t.Helper()
	out, err := s(context.Background(), Input{Recording: &Recording{Audio: a}, Seed: seed, Dir: t.TempDir()}, a)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// talk returns a stand-in for speech: a 120 Hz voice of 12 harmonics
// (falling 6 dB an octave) in syllables of 200 ms at 4 a second, 800 ms
// of them and a 250 ms pause, over and over, its peaks at peak.
func talk(seconds float64, rate int, peak float64) tts.Audio {
	n := int(seconds * float64(rate))
	s := make([]float32, n)
	var top float64
	v := make([]float64, n)
	for i := range v {
		t := float64(i) / float64(rate)
		if math.Mod(t, 1.05) >= 0.8 {
			continue
		}
		env := math.Pow(math.Sin(math.Pi*math.Mod(t, 0.25)/0.25), 2)
		for k := 1; k <= 12; k++ {
			v[i] += env * math.Sin(2*math.Pi*120*float64(k)*t) / float64(k)
		}
		top = max(top, math.Abs(v[i]))
	}
	for i := range s {
		s[i] = float32(peak * v[i] / top)
	}
	return tts.Audio{Samples: s, Rate: rate}
}

// tone returns a sine of f Hz at amplitude amp.
func tone(f, amp float64, n, rate int) []float32 {
	s := make([]float32, n)
	for i := range s {
		s[i] = float32(amp * math.Sin(2*math.Pi*f*float64(i)/float64(rate)))
	}
	return s
}

// amplitude returns the amplitude of s's component at f Hz (a single DFT
// bin over a whole number of its periods).
func amplitude(s []float32, rate int, f float64) float64 {
	periods := math.Floor(float64(len(s)) * f / float64(rate))
	n := int(periods * float64(rate) / f)
	var re, im float64
	for i, v := range s[:n] {
		p := 2 * math.Pi * f * float64(i) / float64(rate)
		re += float64(v) * math.Cos(p)
		im += float64(v) * math.Sin(p)
	}
	return 2 * math.Hypot(re, im) / float64(n)
}

func db(v float64) float64 { return 20 * math.Log10(v) }

// bandPower returns the power of s between from and to Hz, in dB: its
// spectrum over the largest power of two of samples it has.
func bandPower(s []float32, rate int, from, to float64) float64 {
	n := 1
	for n*2 <= len(s) {
		n *= 2
	}
	x := make([]float64, n)
	for i := range x {
		x[i] = float64(s[i])
	}
	var p float64
	for k, c := range fourier.NewFFT(n).Coefficients(nil, x) {
		if f := float64(k) * float64(rate) / float64(n); f >= from && f < to {
			p += real(c)*real(c) + imag(c)*imag(c)
		}
	}
	return 10 * math.Log10(p)
}

// decayTime returns the reverberation time (RT60) of the decay after an
// impulse ended at sample from: Schroeder's backward integral of its
// energy, its fall from -5 to -25 dB fitted by least squares and
// extrapolated to 60 dB (T20).
func decayTime(s []float32, rate, from int) float64 {
	tail := s[from:]
	edc := make([]float64, len(tail))
	var sum float64
	for i := len(tail) - 1; i >= 0; i-- {
		sum += float64(tail[i]) * float64(tail[i])
		edc[i] = sum
	}
	var n, sx, sy, sxx, sxy float64
	for i, e := range edc {
		l := 10 * math.Log10(e/edc[0])
		if l > -5 || l < -25 {
			continue
		}
		x := float64(i) / float64(rate)
		n++
		sx += x
		sy += l
		sxx += x * x
		sxy += x * l
	}
	slope := (n*sxy - sx*sy) / (n*sxx - sx*sx) // dB a second
	return -60 / slope
}

// The rooms reverberate for the time they are named for: RT60 by
// Schroeder's integral after a 5 ms burst, and the dry sound where it was.
func TestRooms(t *testing.T) {
	t.Parallel()
	needs(t, SoxTool)
	const rate = 16000
	rng := rand.New(rand.NewPCG(1, 1))
	s := make([]float32, 4*rate)
	burst := rate / 200
	for i := range burst {
		s[rate/2+i] = float32(0.5 * rng.NormFloat64())
	}
	for _, c := range []struct {
		name     string
		room     Room
		from, to float64
	}{{"small", SmallRoom, 0.35, 0.45}, {"large", LargeRoom, 0.8, 1.0}} {
		out := apply(t, reverb(c.room), tts.Audio{Samples: s, Rate: rate}, 1)
		if len(out.Samples) < len(s) {
			t.Fatalf("%s room: %d samples of %d", c.name, len(out.Samples), len(s))
		}
		rt := decayTime(out.Samples, rate, rate/2+burst)
		t.Logf("%s room: RT60 %.2f s", c.name, rt)
		if rt < c.from || rt > c.to {
			t.Errorf("%s room: RT60 %.2f s, want %.1f-%.1f", c.name, rt, c.from, c.to)
		}
		// the dry burst is still there, where it was, at its level
		var dry float64
		for i := range burst {
			dry += float64(s[rate/2+i]) * float64(out.Samples[rate/2+i])
		}
		var self float64
		for _, v := range s[rate/2 : rate/2+burst] {
			self += float64(v) * float64(v)
		}
		if r := dry / self; r < 0.5 || r > 1.5 {
			t.Errorf("%s room: the dry burst at %.2f of its level", c.name, r)
		}
	}
}

// The codecs code at their rates and give back the sound at its level:
// twice the speech makes a stream longer by what the bit rate makes of it
// (the headers left out; within 3%, and 6% for Opus in Ogg, which frames
// each 30-byte packet with a byte and each second with a page header),
// the decoded speech is within 2 dB of the original's level, and it is
// not the original (a lossy codec left its error).
func TestCodecs(t *testing.T) {
	t.Parallel()
	const seconds = 4.2
	in, twice := talk(seconds, 16000, 0.5), talk(2*seconds, 16000, 0.5)
	for _, c := range []struct {
		name  string
		tools []Tool
		code  func(t *testing.T, in tts.Audio) ([]byte, tts.Audio)
		kbps  float64
		tol   float64 // of the bit rate
	}{
		{"MP3 24 kbps 16 kHz", []Tool{SoxMP3}, func(t *testing.T, in tts.Audio) ([]byte, tts.Audio) {
			f, err := mp3File(16000, 24)(context.Background(), Input{Dir: t.TempDir()}, in)
			if err != nil {
				t.Fatal(err)
			}
			r, err := tts.OpenRecording(strings.NewReader(string(f.Bytes)), f.Channel)
			if err != nil {
				t.Fatal(err)
			}
			if r.Format() != "mp3" {
				t.Errorf("heard reads it as %s", r.Format())
			}
			a, err := tts.DecodeRecording(f.Bytes, f.Channel)
			if err != nil {
				t.Fatal(err)
			}
			return f.Bytes, a
		}, 24, 0.03},
		{"MP3 64 kbps 44.1 kHz", []Tool{SoxMP3}, func(t *testing.T, in tts.Audio) ([]byte, tts.Audio) {
			f, err := mp3File(44100, 64)(context.Background(), Input{Dir: t.TempDir()}, in)
			if err != nil {
				t.Fatal(err)
			}
			a, err := tts.DecodeRecording(f.Bytes, f.Channel)
			if err != nil {
				t.Fatal(err)
			}
			a, err = Resample(context.Background(), a, 16000, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return f.Bytes, a
		}, 64, 0.03},
		{"GSM 06.10", []Tool{SoxGSM}, func(t *testing.T, in tts.Audio) ([]byte, tts.Audio) {
			coded, a, err := gsmCode(context.Background(), t.TempDir(), in)
			if err != nil {
				t.Fatal(err)
			}
			if a.Rate != 8000 {
				t.Errorf("GSM decoded at %d Hz", a.Rate)
			}
			a, err = Resample(context.Background(), a, 16000, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			return coded, a
		}, 13.2, 0.03},
		{"Opus 12 kbps", []Tool{OpusEnc, OpusDec}, func(t *testing.T, in tts.Audio) ([]byte, tts.Audio) {
			coded, a, err := opusCode(context.Background(), t.TempDir(), in, 12)
			if err != nil {
				t.Fatal(err)
			}
			return coded, a
		}, 12, 0.06},
	} {
		t.Run(c.name, func(t *testing.T) {
			needs(t, c.tools...)
			coded, out := c.code(t, in)
			longer, _ := c.code(t, twice)
			if got := float64(len(longer)-len(coded)) * 8 / seconds / 1000; math.Abs(got/c.kbps-1) > c.tol {
				t.Errorf("%.1f kbit/s coded, want %.1f", got, c.kbps)
			}
			if out.Rate != in.Rate || math.Abs(float64(len(out.Samples)-len(in.Samples))) > 0.1*float64(in.Rate) {
				t.Fatalf("%d samples at %d Hz decoded, from %d at %d", len(out.Samples), out.Rate, len(in.Samples), in.Rate)
			}
			n := len(in.Samples)
			l, o := SpeechLevel(in.Samples, in.Rate), SpeechLevel(out.Samples[:n], out.Rate)
			if math.Abs(l-o) > 2 {
				t.Errorf("speech at %.1f dBFS decoded, %.1f coded", o, l)
			}
			diff := make([]float32, n)
			for i := range diff {
				diff[i] = out.Samples[i] - in.Samples[i]
			}
			if e := Level(diff) - Level(in.Samples); e < -45 {
				t.Errorf("decoded within %.1f dB of the original: no codec", e)
			}
		})
	}
}

// Mains hum is its fundamental and harmonics at the levels HumHarmonics
// gives, at the level asked for in all; and nothing where the input asks
// for the transforms only.
func TestHum(t *testing.T) {
	t.Parallel()
	const rate = 8000
	for _, f := range []float64{50, 60} {
		s := Hum(rand.New(rand.NewPCG(1, 2)), f, 4*rate, rate, -40)
		if got := Level(s); math.Abs(got+40) > 0.05 {
			t.Errorf("%v Hz hum at %.2f dBFS, want -40", f, got)
		}
		a1 := amplitude(s, rate, f)
		for k, h := range HumHarmonics {
			if got := db(amplitude(s, rate, f*float64(k+2)) / a1); math.Abs(got-h) > 0.2 {
				t.Errorf("%v Hz hum: harmonic %d at %.1f dB, want %.1f", f, k+2, got, h)
			}
		}
		// nothing between the harmonics
		if got := db(amplitude(s, rate, f*2.5) / a1); got > -40 {
			t.Errorf("%v Hz hum: %.1f dB at %.0f Hz", f, got, f*2.5)
		}
	}
	a := talk(1, rate, 0.5)
	out := apply(t, hum(50, -40), a, 1)
	h := Hum(rand.New(rand.NewPCG(1, 0x68756d)), 50, len(a.Samples), rate, -40)
	for i, v := range out.Samples {
		if v != a.Samples[i]+h[i] {
			t.Fatalf("sample %d: %v, want %v + %v", i, v, a.Samples[i], h[i])
		}
	}
	out, _ = hum(50, -40)(context.Background(), Input{TransformsOnly: true}, a)
	if &out.Samples[0] != &a.Samples[0] {
		t.Error("hum added where the input asks for the transforms only")
	}
}

// A DC offset is the mean it adds, kept through the 16-bit file.
func TestDCOffset(t *testing.T) {
	t.Parallel()
	a := talk(2, 16000, 0.5)
	out := apply(t, offset(0.05), a, 1)
	f, err := pcm16(context.Background(), Input{}, out)
	if err != nil {
		t.Fatal(err)
	}
	back, err := tts.DecodeRecording(f.Bytes, f.Channel)
	if err != nil {
		t.Fatal(err)
	}
	var mean, was float64
	for i, v := range back.Samples {
		mean += float64(v)
		was += float64(a.Samples[i])
	}
	if got := (mean - was) / float64(len(a.Samples)); math.Abs(got-0.05) > 1e-4 {
		t.Errorf("mean raised by %.5f, want 0.05", got)
	}
}

// Clipping raises the peak to the level asked for over full scale and
// cuts it there: a sine's share of clipped samples is what its gain
// makes, 1 - (2/π)·asin(1/g).
func TestClipping(t *testing.T) {
	t.Parallel()
	const rate = 16000
	for _, over := range []float64{6, 15} {
		out := apply(t, clipped(over), tts.Audio{Samples: tone(440, 0.5, rate, rate), Rate: rate}, 1)
		clippedN := 0
		for _, v := range out.Samples {
			if v > 1 || v < -1 {
				t.Fatalf("+%v dB: sample %v over full scale", over, v)
			}
			if math.Abs(float64(v)) == 1 {
				clippedN++
			}
		}
		g := math.Pow(10, over/20)
		want := 1 - 2/math.Pi*math.Asin(1/g)
		if got := float64(clippedN) / float64(len(out.Samples)); math.Abs(got-want) > 0.01 {
			t.Errorf("+%v dB: %.3f of the samples clipped, want %.3f", over, got, want)
		}
	}
}

// The gain controls follow their transfer functions: a steady tone comes
// out at the level the curve gives its peak level (between the knees,
// within 1.5 dB); and the noise of a pause after speech is raised at the
// pace of the release: by 10 dB or more within 1 s (fast) or 3 s
// (slow).
func TestAGC(t *testing.T) {
	t.Parallel()
	needs(t, SoxTool)
	const rate = 16000
	curve := func(c Compander, in float64) float64 {
		for i := 2; i < len(c.Curve); i += 2 {
			x0, y0, x1, y1 := c.Curve[i-2], c.Curve[i-1], c.Curve[i], c.Curve[i+1]
			if in <= x1 {
				return y0 + (y1-y0)*(in-x0)/(x1-x0)
			}
		}
		return c.Curve[len(c.Curve)-1]
	}
	for _, c := range []struct {
		name  string
		c     Compander
		after float64 // seconds
	}{{"fast", FastAGC, 1}, {"slow", SlowAGC, 3}} {
		for _, peak := range []float64{-55, -25} {
			s := tone(1000, math.Pow(10, peak/20), 4*rate, rate)
			out := apply(t, compand(c.c), tts.Audio{Samples: s, Rate: rate}, 1)
			// the last second: the gain has settled
			var top float64
			for _, v := range out.Samples[3*rate:] {
				top = max(top, math.Abs(float64(v)))
			}
			got, want := db(top), curve(c.c, peak)
			if math.Abs(got-want) > 1.5 {
				t.Errorf("%s: a tone peaking at %v dBFS comes out at %.1f, want %.1f", c.name, peak, got, want)
			}
		}
		// 2 s of speech over pink noise at -65 dBFS, then the noise alone
		rng := rand.New(rand.NewPCG(3, 4))
		s := Noise(rng, Pink, 6*rate, rate, -65)
		for i, v := range talk(2, rate, 0.5).Samples {
			s[i] += v
		}
		out := apply(t, compand(c.c), tts.Audio{Samples: s, Rate: rate}, 1)
		at := func(sec float64) float64 {
			i := int(sec * rate)
			return Level(out.Samples[i : i+rate/10])
		}
		early, late := at(2.05), at(2+c.after)
		t.Logf("%s: the noise after speech at %.1f dBFS, %v s on at %.1f", c.name, early, c.after, late)
		if late-early < 10 {
			t.Errorf("%s: the noise after speech raised by %.1f dB in %v s, want 10 or more", c.name, late-early, c.after)
		}
	}
}

// The band-pass keeps 300-3400 Hz at the file's rate in 16-bit PCM: tones
// inside within 1 dB, outside 40 dB down or more.
func TestBandPass(t *testing.T) {
	t.Parallel()
	needs(t, SoxTool)
	const rate = 22050
	for f, pass := range map[float64]bool{100: false, 500: true, 1000: true, 3000: true, 5000: false} {
		s := tone(f, 0.5, rate, rate)
		out := apply(t, bandPass(300, 3400), tts.Audio{Samples: s, Rate: rate}, 1)
		mid := out.Samples[rate/4 : 3*rate/4]
		g := db(amplitude(mid, rate, f) / 0.5)
		if pass && math.Abs(g) > 1 || !pass && g > -40 {
			t.Errorf("%v Hz through 300-3400 Hz: %.1f dB", f, g)
		}
	}
	c := conditionNamed(t, "300-3400 Hz, 16-bit")
	a := talk(1, rate, 0.5)
	f, err := c.Make(context.Background(), Input{Recording: &Recording{Audio: a}, Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if tag := int(f.Bytes[20]) | int(f.Bytes[21])<<8; tag != 1 || f.Bytes[34] != 16 {
		t.Errorf("format tag %d, %d bits: want 16-bit PCM (1), no mu-law", tag, f.Bytes[34])
	}
	if back, err := tts.DecodeRecording(f.Bytes, f.Channel); err != nil || back.Rate != rate {
		t.Errorf("read back at %d Hz (%v), want %d", back.Rate, err, rate)
	}
}

// conditionNamed returns the condition of Conditions named name.
func conditionNamed(t *testing.T, name string) Condition {
	t.Helper()
	for _, c := range Conditions {
		if c.Name == name {
			return c
		}
	}
	t.Fatalf("no condition %q", name)
	return Condition{}
}

// silentShare returns the share of s's 50 ms frames more than 15 dB under
// its RMS level.
func silentShare(s []float32, rate int) float64 {
	n := rate / 20
	l := Level(s)
	quiet, all := 0, 0
	for i := 0; i+n <= len(s); i += n {
		all++
		if Level(s[i:i+n]) < l-15 {
			quiet++
		}
	}
	return float64(quiet) / float64(all)
}

// Babble is many voices, never silent where one voice pauses, at the SNR
// asked for; music is never silent, its energy in the speech band, at the
// SNR asked for.
func TestBabbleAndMusic(t *testing.T) {
	t.Parallel()
	needs(t, SoxTool)
	const rate = 16000
	rec := talk(10, rate, 0.5)
	voices := []tts.Audio{talk(7, 22050, 0.3), talk(5, 16000, 0.1), talk(9, 8000, 0.6)}
	if s := silentShare(voices[1].Samples, voices[1].Rate); s < 0.15 {
		t.Fatalf("one voice silent in %.2f of its frames", s)
	}
	for _, c := range []struct {
		name  string
		step  step
		snr   float64
		quiet float64
	}{{"babble of 8", babble(8, 15), 15, 0.02}, {"music", music(15), 15, 0.02}} {
		out, err := c.step(context.Background(), Input{Recording: &Recording{Audio: rec}, Babble: voices, Seed: 5, Dir: t.TempDir()}, rec)
		if err != nil {
			t.Fatal(err)
		}
		added := make([]float32, len(rec.Samples))
		for i := range added {
			added[i] = out.Samples[i] - rec.Samples[i]
		}
		if got := SpeechLevel(rec.Samples, rate) - Level(added); math.Abs(got-c.snr) > 0.05 {
			t.Errorf("%s at SNR %.2f dB, want %v", c.name, got, c.snr)
		}
		if s := silentShare(added, rate); s > c.quiet {
			t.Errorf("%s silent in %.3f of its 50 ms frames", c.name, s)
		}
		// its energy where speech's is: 200-4000 Hz over 4-8 kHz by 20 dB
		if r := bandPower(added, rate, 200, 4000) - bandPower(added, rate, 4000, 8000); r < 20 {
			t.Errorf("%s: 200-4000 Hz only %.1f dB over 4-8 kHz", c.name, r)
		}
	}
	if _, err := babble(4, 20)(context.Background(), Input{Recording: &Recording{Audio: rec}, Dir: t.TempDir()}, rec); err == nil {
		t.Error("babble of no voices: no error")
	}
}

// Dropouts lose packets at the rate asked for, each silent for 10-20 ms
// from a packet's start, and touch nothing else.
func TestDropouts(t *testing.T) {
	t.Parallel()
	const rate, seconds = 16000, 200
	ds := Dropouts(rand.New(rand.NewPCG(7, 8)), seconds*rate, rate, 0.03, 10*time.Millisecond, 20*time.Millisecond)
	packets := seconds * 50
	// three standard deviations of a binomial count
	want, sd := 0.03*float64(packets), math.Sqrt(0.03*0.97*float64(packets))
	if got := float64(len(ds)); math.Abs(got-want) > 3*sd {
		t.Errorf("%d of %d packets lost, want %.0f ± %.0f", len(ds), packets, want, 3*sd)
	}
	for _, d := range ds {
		if d.Start%(rate/50) != 0 || d.Length < rate/100 || d.Length > rate/50 {
			t.Fatalf("dropout %+v: want a packet's start, 160-320 samples", d)
		}
	}
	a := talk(20, rate, 0.5)
	out := apply(t, dropouts(0.03, 10*time.Millisecond, 20*time.Millisecond), a, 9)
	lost := Dropouts(rand.New(rand.NewPCG(9, 0x6c6f7373)), len(a.Samples), rate, 0.03, 10*time.Millisecond, 20*time.Millisecond)
	in := make([]bool, len(a.Samples))
	for _, d := range lost {
		for i := d.Start; i < d.Start+d.Length; i++ {
			in[i] = true
		}
	}
	for i, v := range out.Samples {
		if in[i] && v != 0 || !in[i] && v != a.Samples[i] {
			t.Fatalf("sample %d: %v, was %v, in a dropout %v", i, v, a.Samples[i], in[i])
		}
	}
}

// Every tool a condition needs is found or reported missing with what to
// install.
func TestTools(t *testing.T) {
	t.Parallel()
	missing := Tool{Program: "opusenc-nowhere", Install: "apt-get install opus-tools"}
	if err := missing.probe(context.Background()); !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "apt-get install opus-tools") {
		t.Errorf("a program off the PATH: %v", err)
	}
}

// A sox without a format reports it missing, and with it, not.
func TestSoxFormats(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath(Sox); err != nil {
		t.Skip("sox is not installed (apt-get install sox):", err)
	}
	if err := (Tool{Program: Sox, Format: "wav"}).probe(context.Background()); err != nil {
		t.Errorf("sox without wav: %v", err)
	}
	if err := (Tool{Program: Sox, Format: "no-such-format", Install: "x"}).probe(context.Background()); !errors.Is(err, ErrMissing) {
		t.Errorf("sox with no-such-format: %v", err)
	}
}
