package tts

import (
	"bytes"
	"errors"
	"fmt"
	"io"

	"github.com/goccy/go-yaml"

	"github.com/speech-pipeline/underrun/tts/yamlguard"
)

// ProfileFormat names the voice profile file format; Version is its
// version.
const (
	ProfileFormat  = "underrun-voice"
	ProfileVersion = 1
)

// Profile is a voice profile file: the Voice (and, when measured, the
// Synth) that describe a real speech engine, as `underrun voice calibrate`
// writes it and every command reads it (--voice FILE).
type Profile struct {
	// Format is ProfileFormat; Version is ProfileVersion.
	Format  string `yaml:"format"`
	Version int    `yaml:"version"`
	// Engine names the engine the profile was measured on.
	Engine string `yaml:"engine,omitempty"`
	// Voice is the fitted speech-duration model.
	Voice Voice `yaml:"voice"`
	// Synth is the measured synthesizer latency, if any.
	Synth *Synth `yaml:"synth,omitempty"`
	// Fit says how well Voice matched the engine on the calibration texts.
	Fit *FitQuality `yaml:"fit,omitempty"`
}

// FitQuality says how well a calibrated Voice matches its engine.
type FitQuality struct {
	// Texts is how many texts were measured, Seconds their total audio.
	Texts   int     `yaml:"texts"`
	Seconds float64 `yaml:"seconds"`
	// MeanError and MaxError are the mean and largest relative error of
	// the voice's durations against the engine's, over the texts.
	MeanError float64 `yaml:"mean_error"`
	MaxError  float64 `yaml:"max_error"`
}

// ErrProfile reports a voice profile file that cannot be used.
var ErrProfile = errors.New("invalid voice profile")

// ReadProfile reads a voice profile in YAML; name labels errors. Unknown
// fields are errors, so that a misspelled parameter is not ignored.
func ReadProfile(r io.Reader, name string) (Profile, error) {
	// size, aliases and nesting are bounded before goccy/go-yaml sees them
	b, err := yamlguard.Default.ReadAll(r)
	if err != nil {
		return Profile{}, fmt.Errorf("%w %s: %w", ErrProfile, name, err)
	}
	var p Profile
	if err := yamlguard.Default.Unmarshal(b, &p, yaml.Strict()); err != nil {
		return Profile{}, fmt.Errorf("%w %s: %w", ErrProfile, name, err)
	}
	switch {
	case p.Format != ProfileFormat:
		return Profile{}, fmt.Errorf("%w %s: format is %q, want %q", ErrProfile, name, p.Format, ProfileFormat)
	case p.Version != ProfileVersion:
		return Profile{}, fmt.Errorf("%w %s: version %d, want %d", ErrProfile, name, p.Version, ProfileVersion)
	}
	if err := p.Voice.Validate(); err != nil {
		return Profile{}, fmt.Errorf("%w %s: voice: %w", ErrProfile, name, err)
	}
	if p.Synth != nil {
		if err := p.Synth.Validate(); err != nil {
			return Profile{}, fmt.Errorf("%w %s: synth: %w", ErrProfile, name, err)
		}
	}
	return p, nil
}

// WriteYAML writes the profile as YAML, with a comment saying what it is.
func (p Profile) WriteYAML(w io.Writer) error {
	p.Format, p.Version = ProfileFormat, ProfileVersion
	b, err := yaml.Marshal(p)
	if err != nil {
		return fmt.Errorf("voice profile: %w", err)
	}
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# underrun voice profile: use it with --voice FILE.\n")
	if p.Engine != "" {
		fmt.Fprintf(&buf, "# Measured on %s by `underrun voice calibrate`.\n", p.Engine)
	}
	buf.Write(b)
	_, err = w.Write(buf.Bytes())
	return err
}
