package tts

import (
	"bytes"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/memtest"
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
		"wpm 1e-10":     strings.Replace(good, "wpm: 180", "wpm: 1e-10", 1),
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

// hostileDir holds the hostile YAML documents shared by every decoder's
// tests; each file's first line says what its error must say.
const hostileDir = "yamlguard/testdata/hostile"

// TestReadProfileHostile: alias bombs, deep nesting (80 KB of it cost
// gigabytes) and a huge profile are refused with the line, within bounded
// memory (not parallel: it measures allocation).
func TestReadProfileHostile(t *testing.T) {
	files, err := filepath.Glob(filepath.Join(hostileDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no hostile documents: %v", err)
	}
	docs := map[string]string{"huge": "# want: larger than 262144 bytes\nengine: \"" + strings.Repeat("a", 300<<10) + "\"\n"}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		docs[f] = string(b)
	}
	for name, doc := range docs {
		first, _, _ := strings.Cut(doc, "\n")
		want := strings.TrimPrefix(first, "# want: ")
		var err error
		mem := memtest.Allocated(func() { _, err = ReadProfile(strings.NewReader(doc), name) })
		if !errors.Is(err, ErrProfile) || !strings.Contains(err.Error(), want) {
			t.Errorf("%s: %v, want ErrProfile saying %q", name, err, want)
		}
		if mem > 64<<20 {
			t.Errorf("%s: refusing it allocated %d MB", name, mem>>20)
		}
	}
}

func FuzzReadProfile(f *testing.F) {
	f.Add("format: underrun-voice\nversion: 1\nvoice:\n  wpm: 150\n  word_onset: 0.3\n  comma_pause: 1s\n  sentence_pause: 2s\n")
	f.Add("voice: [1, 2]\n")
	// issue 45: a rate that looped the engine, a token of 292 years
	f.Add("format: underrun-voice\nversion: 1\nvoice:\n  wpm: 1e-10\n")
	f.Add("format: underrun-voice\nversion: 1\nvoice:\n  wpm: 150\n  token_audio: 2562047h\n")
	f.Add("")
	files, _ := filepath.Glob(filepath.Join(hostileDir, "*.yaml"))
	for _, file := range files {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(string(b))
		}
	}
	f.Fuzz(func(t *testing.T, in string) {
		var p Profile
		var err error
		if mem := memtest.Allocated(func() { p, err = ReadProfile(strings.NewReader(in), "fuzz") }); mem > 128<<20 {
			t.Fatalf("%d bytes of YAML cost %d MB", len(in), mem>>20)
		}
		if err != nil {
			return
		}
		if err := p.Voice.Validate(); err != nil {
			t.Errorf("accepted an invalid voice: %v", err)
		}
	})
}
