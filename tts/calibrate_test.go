package tts

import (
	"bytes"
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// heldOut is not among CalibrationTexts: the profile is judged on it.
const heldOut = `Thanks for waiting. I found two trains to the airport tomorrow morning. The
first leaves at six forty and arrives at seven thirty, the second leaves at seven fifteen and
arrives just after eight. Both have free seats, but the later one is cheaper. Shall I book it?`

func TestFitVoiceRecoversTheModel(t *testing.T) {
	t.Parallel()
	cases := []Voice{
		DefaultVoice(),
		{WPM: 210, WordOnset: 0.2, CommaPause: 80 * time.Millisecond, SentencePause: 500 * time.Millisecond},
		{WPM: 120, WordOnset: 0.6, CommaPause: 0, SentencePause: 250 * time.Millisecond},
	}
	for _, want := range cases {
		var ds []time.Duration
		for _, text := range CalibrationTexts {
			ds = append(ds, want.Duration(text))
		}
		got, err := FitVoice(CalibrationTexts, ds)
		if err != nil {
			t.Fatal(err)
		}
		if math.Abs(got.WPM-want.WPM) > 0.02*want.WPM || math.Abs(got.WordOnset-want.WordOnset) > 0.01 ||
			absDur(got.CommaPause-want.CommaPause) > 2*time.Millisecond || absDur(got.SentencePause-want.SentencePause) > 2*time.Millisecond {
			t.Errorf("fit %+v, want %+v", got, want)
		}
	}
}

func absDur(d time.Duration) time.Duration { return max(d, -d) }

func TestFitVoiceErrors(t *testing.T) {
	t.Parallel()
	if _, err := FitVoice([]string{"a"}, nil); !errors.Is(err, ErrFit) {
		t.Errorf("mismatched lengths: %v", err)
	}
	// one text cannot tell four parameters apart
	if _, err := FitVoice([]string{"Hello, there."}, []time.Duration{time.Second}); !errors.Is(err, ErrFit) {
		t.Errorf("one text: %v", err)
	}
	if _, err := Calibrate(context.Background(), mustSynthetic(t), CalibrationTexts, 1); err == nil {
		t.Error("calibrating the synthetic signal: no error")
	}
}

func TestFitLine(t *testing.T) {
	t.Parallel()
	a, b := fitLine([]float64{1, 2, 3, 4}, []float64{0.05 + 0.1, 0.05 + 0.2, 0.05 + 0.3, 0.05 + 0.4})
	if math.Abs(a-0.05) > 1e-9 || math.Abs(b-0.1) > 1e-9 {
		t.Errorf("fitLine = %v, %v; want 0.05, 0.1", a, b)
	}
}

func mustSynthetic(t *testing.T) *Synthetic {
	t.Helper()
	s, err := NewSynthetic(DefaultVoice(), 0)
	if err != nil {
		t.Fatal(err)
	}
	return s
}

func TestCalibrateEspeak(t *testing.T) {
	t.Parallel()
	e := needEspeak(t, "its calibration")
	ctx := context.Background()
	cal, err := Calibrate(ctx, e, CalibrationTexts, 1)
	if err != nil {
		t.Fatal(err)
	}
	p := cal.Profile
	t.Logf("espeak-ng profile: %+v synth %+v fit %+v", p.Voice, *p.Synth, *p.Fit)
	if p.Voice.WPM < 100 || p.Voice.WPM > 300 {
		t.Errorf("espeak-ng speaks at %v words per minute?", p.Voice.WPM)
	}
	// the held-out paragraph, spoken whole and sentence by sentence
	whole, err := e.Synthesize(ctx, heldOut)
	if err != nil {
		t.Fatal(err)
	}
	check := func(what string, real, est time.Duration) {
		if e := math.Abs(est.Seconds()-real.Seconds()) / real.Seconds(); e > 0.10 {
			t.Errorf("%s: the profile says %v, espeak-ng speaks %v (%.1f%% off, want within 10%%)", what, est, real, 100*e)
		} else {
			t.Logf("%s: the profile says %v, espeak-ng speaks %v (%.1f%% off)", what, est, real, 100*e)
		}
	}
	check("held-out paragraph", whole.Duration(), p.Voice.Duration(heldOut))
	var real, est time.Duration
	for _, s := range strings.SplitAfter(heldOut, ". ") {
		a, err := e.Synthesize(ctx, s)
		if err != nil {
			t.Fatal(err)
		}
		real += a.Duration()
		est += p.Voice.Duration(s)
	}
	check("held-out paragraph by sentence", real, est)

	// the profile survives its file
	var buf bytes.Buffer
	if err := p.WriteYAML(&buf); err != nil {
		t.Fatal(err)
	}
	back, err := ReadProfile(&buf, "profile.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if back.Voice != p.Voice || *back.Synth != *p.Synth {
		t.Errorf("round trip: got %+v %+v, want %+v %+v", back.Voice, *back.Synth, p.Voice, *p.Synth)
	}
}
