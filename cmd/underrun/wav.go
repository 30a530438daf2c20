package main

import (
	"context"
	"fmt"
	"slices"
	"time"

	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/cmd/underrun/internal/outfile"
	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/render"
)

func init() {
	sinkFactories = append(sinkFactories, wavSinkFactory)
	configHooks = append(configHooks, audioEngineHook)
}

const audioEngineHelp = "speech `ENGINE` of --wav and --play: auto (espeak-ng when installed), " +
	"espeak-ng (its measured durations replace the voice model's), synthetic (the voice model's timing; not speech)"

// wantsAudio reports whether the command's flags ask for audio: --wav, or
// --play where the command has it.
func wantsAudio(fs *pflag.FlagSet) bool {
	if f := fs.Lookup("wav"); f != nil && f.Value.String() != "" {
		return true
	}
	if f := fs.Lookup("play"); f != nil && f.Value.String() == "true" {
		return true
	}
	return false
}

// audioEngineHook makes a real engine's durations the engine's when audio
// is asked for and the engine is espeak-ng (named, or found by auto).
func audioEngineHook(fs *pflag.FlagSet) func(e *env, cfg *pipeline.Config) error {
	return func(e *env, cfg *pipeline.Config) error {
		f := fs.Lookup("audio-engine")
		if f == nil {
			return nil
		}
		name := f.Value.String()
		if !wantsAudio(fs) {
			if f.Changed {
				return usagef("--audio-engine needs --wav FILE (or --play)")
			}
			return nil
		}
		switch name {
		case tts.EngineSynthetic:
			return nil
		case tts.EngineEspeak, tts.EngineAuto:
			engine, err := tts.NewEspeak()
			if err != nil {
				if name == tts.EngineAuto {
					return nil
				}
				return usagef("--audio-engine %s: %w (install the espeak-ng package, or use --audio-engine synthetic)", name, err)
			}
			cfg.Durations = tts.NewCache(context.Background(), engine).WithVoice(cfg.Voice)
			fmt.Fprintf(e.stderr, "underrun: espeak-ng speaks every sentence whole: its measured durations replace the voice model's, shared out to the chunks that hold each sentence (--audio-engine synthetic keeps the model)\n")
			return nil
		}
		return usagef("--audio-engine: unknown engine %q; want %s", name, tts.EngineNames)
	}
}

// wavFlagNames are the flags of the --wav sink.
var wavFlagNames = []string{"wav", "turn", "mark-gaps", "audio-engine"}

// wavFlags are the flags of the --wav sink.
type wavFlags struct {
	path     string
	turn     string
	markGaps bool
	engine   string
}

func wavSinkFactory(fs *pflag.FlagSet, _ *reportFlags) func(e *env, cfg pipeline.Config) (turnSink, error) {
	w := &wavFlags{}
	fs.StringVar(&w.path, "wav", "", "write what the listener hears to `FILE` (WAV), every underrun as silence of its exact length")
	ownTurn := fs.Lookup("turn") == nil
	if ownTurn {
		fs.StringVar(&w.turn, "turn", "", "with --wav: render the turn with this `ID` (default: the first turn with speech)")
	}
	fs.BoolVar(&w.markGaps, "mark-gaps", false, "with --wav: mark the start of every underrun with a short soft tone")
	fs.StringVar(&w.engine, "audio-engine", tts.EngineAuto, audioEngineHelp)
	return func(e *env, cfg pipeline.Config) (turnSink, error) {
		if w.path == "" {
			if fs.Changed("mark-gaps") {
				return nil, usagef("--mark-gaps needs --wav FILE")
			}
			if ownTurn && fs.Changed("turn") {
				return nil, usagef("--turn needs --wav FILE")
			}
			return nil, nil
		}
		if !ownTurn {
			w.turn = fs.Lookup("turn").Value.String()
		}
		engine, err := audioEngine(cfg, w.engine)
		if err != nil {
			return nil, err
		}
		// opened before any synthesis, so that a path that cannot be
		// written fails at once
		out, err := createOutput("--wav", w.path)
		if err != nil {
			return nil, err
		}
		return &wavSink{env: e, flags: w, engine: engine, out: out}, nil
	}
}

// audioEngine returns the engine that speaks the chunks: the one whose
// durations the configuration uses, or the one the flag names.
func audioEngine(cfg pipeline.Config, name string) (tts.Engine, error) {
	if c, ok := cfg.Durations.(*tts.Cache); ok {
		return c.Engine(), nil
	}
	switch name {
	case tts.EngineAuto, tts.EngineSynthetic:
		return tts.NewSynthetic(cfg.Voice, cfg.SampleRate)
	}
	engine, err := tts.OpenEngine(name, cfg.Voice, cfg.SampleRate)
	if err != nil {
		return nil, usagef("--audio-engine: %w", err)
	}
	return engine, nil
}

// maxWAV bounds the audio --wav renders of one turn, which is held in
// memory (four bytes a sample) before it is written.
const maxWAV = time.Hour

// wavSink renders one turn of the run into a WAV file.
type wavSink struct {
	env    *env
	flags  *wavFlags
	engine tts.Engine
	out    *outfile.File
	audio  *tts.Audio
	turn   string
	gaps   []pipeline.Underrun
	turns  int
}

func (s *wavSink) Add(t *pipeline.Turn, p *pipeline.Playout) error {
	s.turns++
	if s.audio != nil || len(p.Chunks) == 0 || s.flags.turn != "" && t.ID != s.flags.turn {
		return nil
	}
	if end := p.Chunks[len(p.Chunks)-1].PlayEnd; end > maxWAV {
		return usagef("--wav: turn %q plays for %v; a WAV holds at most %v of it (render another turn with --turn)", t.ID, end.Round(time.Second), maxWAV)
	}
	a, err := render.Turn(context.Background(), t, p, render.Options{Engine: s.engine, MarkGaps: s.flags.markGaps})
	if err != nil {
		return fmt.Errorf("--wav: turn %q: %w", t.ID, err)
	}
	s.audio, s.turn, s.gaps = &a, t.ID, slices.Clone(p.Underruns)
	return nil
}

// Abort leaves the WAV file as it was.
func (s *wavSink) Abort() { s.out.Abort() }

func (s *wavSink) Close() error {
	if s.audio == nil {
		s.out.Abort()
		if s.flags.turn != "" {
			return usagef("--wav: no turn %q with speech among the %d turns played", s.flags.turn, s.turns)
		}
		return usagef("--wav: no turn with speech among the %d turns played", s.turns)
	}
	err := render.WriteWAV(s.out, *s.audio)
	if err != nil {
		s.out.Abort()
	} else {
		err = s.out.Commit()
	}
	if err != nil {
		return fmt.Errorf("--wav %s: %w", s.flags.path, err)
	}
	tally := pipeline.TallyUnderruns(s.gaps)
	fmt.Fprintf(s.env.stderr, "underrun: wrote %s: turn %q, %.2f s at %d Hz, %s (%s, %.0f ms of silence), spoken by %s\n",
		s.flags.path, s.turn, s.audio.Duration().Seconds(), s.audio.Rate, plural(len(s.gaps), "underrun"), plural(tally.Interruptions, "interruption"), pipeline.Millis(tally.Silence), s.engine.Name())
	if !s.engine.Speech() {
		fmt.Fprintf(s.env.stderr, "underrun: note: no speech engine was used, so the WAV carries a voice-like signal with the voice model's timing, NOT speech (install espeak-ng for real speech)\n")
	}
	if s.flags.turn == "" && s.turns > 1 {
		fmt.Fprintf(s.env.stderr, "underrun: %d turns were played; --turn ID renders another\n", s.turns)
	}
	return nil
}

var _ turnSink = (*wavSink)(nil)
