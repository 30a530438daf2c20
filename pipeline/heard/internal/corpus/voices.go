package corpus

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"

	"github.com/speech-pipeline/underrun/tts"
)

// The engines the corpus speaks with.
const (
	Espeak   = "espeak-ng"
	Flite    = "flite"
	Festival = "festival"
)

// Voice is one synthesizer voice of the corpus.
type Voice struct {
	// Engine is Espeak, Flite or Festival; Name the engine's own name of
	// the voice (espeak-ng's -v, flite's -voice, festival's voice_NAME).
	Engine, Name string
	// Part says whether a detector may be tuned on the voice.
	Part Part
}

// Label names the voice in tables: the engine and the voice.
func (v Voice) Label() string { return v.Engine + " " + v.Name }

// Voices are the corpus's voices: espeak-ng's default and variants, flite's
// diphone (8 and 16 kHz) and cluster-unit voices, festival's diphone and
// HTS voices. The held-out ones include an engine family's voices that the
// tuning part does not have (flite's cluster-unit awb and rms, festival's
// HTS).
var Voices = []Voice{
	{Engine: Espeak, Name: "en-us", Part: Tune},
	{Engine: Espeak, Name: "en-us+f3", Part: Tune},
	{Engine: Flite, Name: "slt", Part: Tune},
	{Engine: Flite, Name: "kal16", Part: Tune},
	{Engine: Festival, Name: "kal_diphone", Part: Tune},
	{Engine: Espeak, Name: "en-gb-x-rp+m3", Part: HeldOut},
	{Engine: Flite, Name: "awb", Part: HeldOut},
	{Engine: Flite, Name: "rms", Part: HeldOut},
	{Engine: Flite, Name: "kal", Part: HeldOut},
	{Engine: Festival, Name: "ked_diphone", Part: HeldOut},
	{Engine: Festival, Name: "cmu_us_slt_arctic_hts", Part: HeldOut},
}

// Rates are the speaking rates the corpus speaks at, as factors of the
// engine's own: espeak-ng's words per minute (175 at 1), flite's and
// festival's duration stretch (its inverse).
var Rates = []float64{0.8, 1, 1.3}

// ErrMissing reports an engine or voice that is not installed.
var ErrMissing = errors.New("not installed")

// installs says what to install for each engine, for skip messages.
var installs = map[string]string{
	Espeak:   "apt-get install espeak-ng",
	Flite:    "apt-get install flite",
	Festival: "apt-get install festival festvox-kallpc16k festvox-kdlpc16k festvox-us-slt-hts",
}

var voicesFound probes[Voice]

// Available reports whether v can be spoken here: nil, or an error
// wrapping ErrMissing that says what to install.
func (v Voice) Available(ctx context.Context) error {
	return voicesFound.once(v, func() error { return v.probe(ctx) })
}

// probes keeps what probing found for each voice or tool: each is probed
// once.
type probes[K comparable] struct {
	mu    sync.Mutex
	found map[K]error
}

// once returns what probe found for k, probing it the first time.
func (p *probes[K]) once(k K, probe func() error) error {
	p.mu.Lock()
	defer p.mu.Unlock()
	if err, ok := p.found[k]; ok {
		return err
	}
	if p.found == nil {
		p.found = map[K]error{}
	}
	err := probe()
	p.found[k] = err
	return err
}

func (v Voice) probe(ctx context.Context) error {
	if _, err := exec.LookPath(v.Engine); err != nil {
		return fmt.Errorf("%s: %w (%s): %w", v.Label(), ErrMissing, installs[v.Engine], err)
	}
	if v.Engine == Flite {
		// flite speaks an unknown voice with its default one
		out, err := exec.CommandContext(ctx, Flite, "-lv").Output()
		if err != nil || !slices.Contains(strings.Fields(string(out)), v.Name) {
			return fmt.Errorf("%s: %w (flite -lv lists %q)", v.Label(), ErrMissing, strings.TrimSpace(string(out)))
		}
	}
	dir, err := os.MkdirTemp("", "corpus-probe")
	if err != nil {
		return err
	}
	defer os.RemoveAll(dir)
	a, err := v.speak(ctx, 1, []string{"Hello."}, dir)
	if err == nil && (len(a) != 1 || len(a[0].Samples) == 0) {
		err = errors.New("no audio")
	}
	if err != nil {
		return fmt.Errorf("%s: %w (%s): %w", v.Label(), ErrMissing, installs[v.Engine], err)
	}
	return nil
}

// Speak returns the voice's audio of each text, each spoken as an
// utterance of its own, at rate (a factor of the engine's own rate). dir
// holds the engines' files while they run.
func (v Voice) Speak(ctx context.Context, rate float64, texts []string, dir string) ([]tts.Audio, error) {
	if err := v.Available(ctx); err != nil {
		return nil, err
	}
	return v.speak(ctx, rate, texts, dir)
}

func (v Voice) speak(ctx context.Context, rate float64, texts []string, dir string) ([]tts.Audio, error) {
	if !(rate > 0) {
		return nil, fmt.Errorf("%s: rate %v: want a positive factor", v.Label(), rate)
	}
	switch v.Engine {
	case Espeak:
		e := &tts.Espeak{Voice: v.Name, Speed: int(math.Round(175 * rate))}
		out := make([]tts.Audio, len(texts))
		for i, text := range texts {
			a, err := e.Synthesize(ctx, text)
			if err != nil {
				return nil, fmt.Errorf("%s: %w", v.Label(), err)
			}
			out[i] = a
		}
		return out, nil
	case Flite:
		out := make([]tts.Audio, len(texts))
		for i, text := range texts {
			name := filepath.Join(dir, fmt.Sprintf("flite-%d.wav", i))
			cmd := exec.CommandContext(ctx, Flite, "-voice", v.Name, "--setf", "duration_stretch="+strconv.FormatFloat(1/rate, 'f', 3, 64), "-t", text, "-o", name)
			if err := run(cmd); err != nil {
				return nil, fmt.Errorf("%s %q: %w", v.Label(), text, err)
			}
			a, err := readWAV(name)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", v.Label(), text, err)
			}
			out[i] = a
		}
		return out, nil
	case Festival:
		// one festival process for all the texts: it takes a second to
		// start, and a few milliseconds an utterance
		var script strings.Builder
		fmt.Fprintf(&script, "(voice_%s)\n(Parameter.set 'Duration_Stretch %.3f)\n", v.Name, 1/rate)
		names := make([]string, len(texts))
		for i, text := range texts {
			names[i] = filepath.Join(dir, fmt.Sprintf("festival-%d.wav", i))
			fmt.Fprintf(&script, "(utt.save.wave (utt.synth (Utterance Text %s)) %s 'riff)\n", schemeString(text), schemeString(names[i]))
		}
		file := filepath.Join(dir, "festival.scm")
		if err := os.WriteFile(file, []byte(script.String()), 0o644); err != nil {
			return nil, err
		}
		if err := run(exec.CommandContext(ctx, Festival, "-b", file)); err != nil {
			return nil, fmt.Errorf("%s: %w", v.Label(), err)
		}
		out := make([]tts.Audio, len(texts))
		for i, name := range names {
			a, err := readWAV(name)
			if err != nil {
				return nil, fmt.Errorf("%s %q: %w", v.Label(), texts[i], err)
			}
			out[i] = a
		}
		return out, nil
	}
	return nil, fmt.Errorf("unknown engine %q: want %s, %s or %s", v.Engine, Espeak, Flite, Festival)
}

// schemeString quotes s as a Scheme string.
func schemeString(s string) string {
	return `"` + strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s) + `"`
}

// run runs cmd, its error carrying what it wrote on stderr.
func run(cmd *exec.Cmd) error {
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	if err := cmd.Run(); err != nil {
		return fmt.Errorf("%s: %w: %s", filepath.Base(cmd.Path), err, strings.TrimSpace(errOut.String()))
	}
	// festival reports a missing voice on stderr and exits 0
	if s := errOut.String(); strings.Contains(s, "SIOD ERROR") || strings.Contains(s, "unbound variable") {
		return fmt.Errorf("%s: %s", filepath.Base(cmd.Path), strings.TrimSpace(s))
	}
	return nil
}

func readWAV(name string) (tts.Audio, error) {
	b, err := os.ReadFile(name)
	if err != nil {
		return tts.Audio{}, err
	}
	return tts.DecodeWAV(b)
}
