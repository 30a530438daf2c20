package tts

import (
	"bytes"
	"context"
	"encoding/binary"
	"errors"
	"math"
	"os/exec"
	"strings"
	"sync/atomic"
	"testing"
	"time"
)

// wavBytes builds a 16-bit PCM WAV; streamed leaves the sizes open as a
// writer to a pipe does (espeak-ng --stdout).
func wavBytes(samples []int16, rate, channels int, streamed bool) []byte {
	var b bytes.Buffer
	data := len(samples) * 2
	riff, dsize := uint32(36+data), uint32(data)
	if streamed {
		riff, dsize = 0x7ffff024, 0x7ffff000
	}
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, riff)
	b.WriteString("WAVEfmt ")
	binary.Write(&b, binary.LittleEndian, uint32(16))
	binary.Write(&b, binary.LittleEndian, uint16(1))
	binary.Write(&b, binary.LittleEndian, uint16(channels))
	binary.Write(&b, binary.LittleEndian, uint32(rate))
	binary.Write(&b, binary.LittleEndian, uint32(rate*2*channels))
	binary.Write(&b, binary.LittleEndian, uint16(2*channels))
	binary.Write(&b, binary.LittleEndian, uint16(16))
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, dsize)
	binary.Write(&b, binary.LittleEndian, samples)
	return b.Bytes()
}

func TestDecodeWAV(t *testing.T) {
	t.Parallel()
	samples := []int16{0, 16384, -16384, 32767, -32768, 100}
	cases := []struct {
		name     string
		b        []byte
		n        int
		rate     int
		wantErr  bool
		firstTwo []float32
	}{
		{"mono", wavBytes(samples, 22050, 1, false), 6, 22050, false, []float32{0, 0.5}},
		{"streamed", wavBytes(samples, 22050, 1, true), 6, 22050, false, []float32{0, 0.5}},
		{"stereo", wavBytes(samples, 16000, 2, false), 3, 16000, false, []float32{0.25, 0.25}},
		{"empty data", wavBytes(nil, 8000, 1, true), 0, 8000, false, nil},
		{"not riff", []byte("RIFX....WAVE"), 0, 0, true, nil},
		{"short", []byte("RIFF"), 0, 0, true, nil},
		{"no data", wavBytes(samples, 8000, 1, false)[:36], 0, 0, true, nil},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			a, err := DecodeWAV(tc.b)
			if (err != nil) != tc.wantErr {
				t.Fatalf("err = %v, want error %v", err, tc.wantErr)
			}
			if err != nil {
				return
			}
			if len(a.Samples) != tc.n || a.Rate != tc.rate {
				t.Fatalf("got %d samples at %d Hz, want %d at %d", len(a.Samples), a.Rate, tc.n, tc.rate)
			}
			for i, w := range tc.firstTwo {
				if math.Abs(float64(a.Samples[i]-w)) > 1e-4 {
					t.Errorf("sample %d = %v, want %v", i, a.Samples[i], w)
				}
			}
		})
	}
}

func FuzzDecodeWAV(f *testing.F) {
	f.Add(wavBytes([]int16{1, 2, 3}, 22050, 1, true))
	f.Add(wavBytes([]int16{1, 2, 3, 4}, 8000, 2, false))
	f.Add([]byte("RIFF\x00\x00\x00\x00WAVEdata\xff\xff\xff\xff"))
	f.Fuzz(func(t *testing.T, b []byte) {
		a, err := DecodeWAV(b)
		if err == nil && a.Rate <= 0 {
			t.Errorf("no error but rate %d", a.Rate)
		}
		if len(a.Samples) > len(b) {
			t.Errorf("%d samples from %d bytes", len(a.Samples), len(b))
		}
	})
}

func TestAudioDurationAndFit(t *testing.T) {
	t.Parallel()
	a := Audio{Samples: make([]float32, 22050), Rate: 22050}
	if got := a.Duration(); got != time.Second {
		t.Errorf("Duration = %v, want 1s", got)
	}
	if got := (Audio{}).Duration(); got != 0 {
		t.Errorf("zero Audio lasts %v", got)
	}
	ramp := Audio{Samples: []float32{0, 1, 2, 3}, Rate: 4}
	cases := []struct {
		n    int
		want []float32
	}{
		{4, []float32{0, 1, 2, 3}},
		{7, []float32{0, 0.5, 1, 1.5, 2, 2.5, 3}},
		{2, []float32{0, 3}},
		{1, []float32{0}},
		{0, []float32{}},
	}
	for _, tc := range cases {
		got := Fit(ramp, tc.n)
		if len(got) != len(tc.want) {
			t.Fatalf("Fit to %d: %d samples", tc.n, len(got))
		}
		for i := range got {
			if math.Abs(float64(got[i]-tc.want[i])) > 1e-6 {
				t.Errorf("Fit to %d: %v, want %v", tc.n, got, tc.want)
				break
			}
		}
	}
	if got := Fit(Audio{}, 5); len(got) != 5 || got[0] != 0 {
		t.Errorf("Fit of nothing: %v", got)
	}
}

func TestCacheSynthesizesOnce(t *testing.T) {
	t.Parallel()
	var calls atomic.Int32
	boom := errors.New("boom")
	e := EngineFunc{Label: "count", IsSpeech: true, Func: func(_ context.Context, text string) (Audio, error) {
		calls.Add(1)
		if text == "fail" {
			return Audio{}, boom
		}
		return Audio{Samples: make([]float32, 100*len(text)), Rate: 1000}, nil
	}}
	c := NewCache(context.Background(), e)
	for range 3 {
		d, err := c.Duration("hello")
		if err != nil || d != 500*time.Millisecond {
			t.Fatalf("Duration = %v, %v; want 500ms", d, err)
		}
	}
	if calls.Load() != 1 {
		t.Errorf("%d syntheses for one text, want 1", calls.Load())
	}
	if _, err := c.Duration("fail"); !errors.Is(err, boom) {
		t.Errorf("failing engine: %v", err)
	}
	if c.Engine().Name() != "count" {
		t.Errorf("Engine() = %q", c.Engine().Name())
	}
}

func TestOpenEngine(t *testing.T) {
	t.Parallel()
	s, err := OpenEngine(EngineSynthetic, DefaultVoice(), 16000)
	if err != nil || s.Speech() || !strings.Contains(s.Name(), "not speech") {
		t.Errorf("synthetic: %v, speech %v, name %q", err, s != nil && s.Speech(), s.Name())
	}
	if _, err := OpenEngine("festival", DefaultVoice(), 0); err == nil {
		t.Error("unknown engine: no error")
	}
	a, err := OpenEngine(EngineAuto, DefaultVoice(), 0)
	if err != nil {
		t.Fatal(err)
	}
	_, lookErr := exec.LookPath(EspeakProgram)
	if got, want := a.Speech(), lookErr == nil; got != want {
		t.Errorf("auto speaks %v, want %v (espeak-ng installed: %v)", got, want, lookErr == nil)
	}
}

func TestSyntheticSignal(t *testing.T) {
	t.Parallel()
	s, err := NewSynthetic(DefaultVoice(), 24000)
	if err != nil {
		t.Fatal(err)
	}
	text := "Hello there, this is not speech. It only sounds a little like it."
	a, err := s.Synthesize(context.Background(), text)
	if err != nil {
		t.Fatal(err)
	}
	want := DefaultVoice().Duration(text)
	if d := a.Duration() - want; d < -time.Millisecond || d > time.Millisecond {
		t.Errorf("lasts %v, the voice says %v", a.Duration(), want)
	}
	// never a silent 10 ms frame: pauses breathe
	for f := 0; (f+1)*240 <= len(a.Samples); f++ {
		var e float64
		for _, v := range a.Samples[f*240 : (f+1)*240] {
			e += float64(v) * float64(v)
		}
		if e/240 < 1e-8 {
			t.Fatalf("frame %d is silent", f)
		}
	}
	var peak float32
	for _, v := range a.Samples {
		peak = max(peak, v, -v)
	}
	if peak > 1 || peak < 0.1 {
		t.Errorf("peak %v, want a clear signal within [-1, 1]", peak)
	}
	for _, n := range []int{0, 1, 2, 7, 1000} {
		if got := len(s.Render(text, n)); got != n {
			t.Errorf("Render(%d) gave %d samples", n, got)
		}
		if got := s.Render(".", n); n > 0 && got[0] == 0 && got[n-1] == 0 {
			t.Errorf("Render(%q, %d) starts and ends silent", ".", n)
		}
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := s.Synthesize(ctx, text); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
	if _, err := NewSynthetic(Voice{}, 0); err == nil {
		t.Error("invalid voice: no error")
	}
}

func TestEndsPhrase(t *testing.T) {
	t.Parallel()
	cases := map[string]bool{
		"Hello":       false,
		" there":      false,
		"Hello.":      true,
		"Hello, ":     true,
		`"Done!" `:    true,
		"(see above)": false,
		"Wait;":       true,
		"":            false,
		"   ":         false,
	}
	for in, want := range cases {
		if got := EndsPhrase(in); got != want {
			t.Errorf("EndsPhrase(%q) = %v, want %v", in, got, want)
		}
	}
}

func TestEspeak(t *testing.T) {
	t.Parallel()
	e := needEspeak(t, "the espeak-ng engine test")
	ctx := context.Background()
	word, err := e.Synthesize(ctx, " hello")
	if err != nil {
		t.Fatal(err)
	}
	sentence, err := e.Synthesize(ctx, " hello.")
	if err != nil {
		t.Fatal(err)
	}
	if word.Rate <= 0 || word.Duration() < 150*time.Millisecond || word.Duration() > 2*time.Second {
		t.Errorf("%q: %v at %d Hz", " hello", word.Duration(), word.Rate)
	}
	// mid-sentence text runs on; a sentence end keeps its pause
	if sentence.Duration() < word.Duration()+100*time.Millisecond {
		t.Errorf("%q lasts %v, %q %v: want the sentence pause", " hello.", sentence.Duration(), " hello", word.Duration())
	}
	dash, err := e.Synthesize(ctx, "-v is no option here")
	if err != nil || dash.Duration() < 300*time.Millisecond {
		t.Errorf("text starting with a dash: %v, %v", dash.Duration(), err)
	}
	bad := &Espeak{Path: e.Path, Voice: "no-such-voice-xyz"}
	if _, err := bad.Synthesize(ctx, "hello"); err == nil {
		t.Log("espeak-ng accepted an unknown voice")
	} else if !errors.Is(err, ErrEngine) {
		t.Errorf("unknown voice: %v, want ErrEngine", err)
	}
	missing := &Espeak{Path: "/nonexistent/espeak-ng"}
	if _, err := missing.Synthesize(ctx, "hello"); !errors.Is(err, ErrEngine) {
		t.Errorf("missing program: %v", err)
	}
}

// needEspeak returns espeak-ng, or skips the test, saying what it skips,
// when it is not installed.
func needEspeak(t *testing.T, what string) *Espeak {
	t.Helper()
	e, err := NewEspeak()
	if errors.Is(err, ErrNoEngine) {
		t.Skipf("espeak-ng is not installed (%v): skipping %s (apt-get install espeak-ng)", err, what)
	}
	if err != nil {
		t.Fatal(err)
	}
	return e
}
