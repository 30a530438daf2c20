package tts

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"
)

func TestReadProfile(t *testing.T) {
	t.Parallel()
	good := `format: underrun-voice
version: 1
engine: espeak-ng
voice:
  name: espeak-ng
  wpm: 180
  word_onset: 0.3
  comma_pause: 200ms
  sentence_pause: 400ms
synth:
  ttfa: 40ms
  rtf: 0.01
`
	p, err := ReadProfile(strings.NewReader(good), "v.yaml")
	if err != nil {
		t.Fatal(err)
	}
	if p.Voice.WPM != 180 || p.Voice.CommaPause != 200*time.Millisecond || p.Synth.TTFA != 40*time.Millisecond {
		t.Errorf("read %+v %+v", p.Voice, p.Synth)
	}
	cases := map[string]string{
		"unknown field": strings.Replace(good, "wpm: 180", "wpm: 180\n  pitch: 3", 1),
		"wrong format":  strings.Replace(good, "underrun-voice", "other", 1),
		"wrong version": strings.Replace(good, "version: 1", "version: 9", 1),
		"bad voice":     strings.Replace(good, "wpm: 180", "wpm: -1", 1),
		"bad synth":     strings.Replace(good, "rtf: 0.01", "rtf: -2", 1),
		"not yaml":      "{{{",
		"bad duration":  strings.Replace(good, "200ms", "soon", 1),
	}
	for name, in := range cases {
		if _, err := ReadProfile(strings.NewReader(in), "v.yaml"); !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), "v.yaml") {
			t.Errorf("%s: err = %v, want ErrProfile naming the file", name, err)
		}
	}
}

func TestProfileRoundTrip(t *testing.T) {
	t.Parallel()
	p := Profile{Engine: "espeak-ng", Voice: DefaultVoice(), Synth: &Synth{TTFA: 35 * time.Millisecond, RTF: 0.02},
		Fit: &FitQuality{Texts: 3, Seconds: 4.5, MeanError: 0.03, MaxError: 0.08}}
	var b bytes.Buffer
	if err := p.WriteYAML(&b); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(b.String(), "# underrun voice profile") {
		t.Errorf("no header comment:\n%s", b.String())
	}
	got, err := ReadProfile(&b, "p")
	if err != nil {
		t.Fatal(err)
	}
	if got.Voice != p.Voice || *got.Synth != *p.Synth || *got.Fit != *p.Fit || got.Engine != p.Engine {
		t.Errorf("round trip: %+v, want %+v", got, p)
	}
}

func FuzzReadProfile(f *testing.F) {
	f.Add("format: underrun-voice\nversion: 1\nvoice:\n  wpm: 150\n  word_onset: 0.3\n  comma_pause: 1s\n  sentence_pause: 2s\n")
	f.Add("voice: [1, 2]\n")
	f.Add("")
	f.Fuzz(func(t *testing.T, in string) {
		p, err := ReadProfile(strings.NewReader(in), "fuzz")
		if err != nil {
			return
		}
		if err := p.Voice.Validate(); err != nil {
			t.Errorf("accepted an invalid voice: %v", err)
		}
	})
}
