package main

import (
	"fmt"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

func init() { commands = append(commands, newVoiceCommand) }

const voiceCalibrateLong = `Measure a real speech engine and write a voice profile that every command
accepts (--voice FILE).

calibrate speaks a built-in set of assistant answers (` + "%d" + ` texts: short and long,
with commas, questions and several sentences) with the engine and fits the
voice model to the durations it measured: the speaking rate (words per
minute), how much of a word's time is its onset, and the pauses after commas
and sentence ends. It also times each synthesis and fits the time to first
audio (the fixed cost of a synthesis: for espeak-ng, starting the process) and
the real-time factor (synthesis time per second of audio).

The profile (YAML) goes to -o FILE, or to standard output; the summary goes
to standard error.

Exit codes: 0 written; 2 bad usage, or the engine is missing or failed.`

const voiceCalibrateExample = `  underrun voice calibrate --engine espeak-ng -o espeak.yaml
  underrun analyze --voice espeak.yaml trace.jsonl
  underrun voice calibrate --engine espeak-ng --espeak-voice en-us --speed 190 -o fast.yaml`

func newVoiceCommand(e *env) *cobra.Command {
	voice := &cobra.Command{
		Use:   "voice",
		Short: "Measure speech engines: voice profiles for --voice",
		Long: `Voice profiles describe how a real speech engine speaks: its rate, its pauses
and its synthesis latency. Make one with ` + "`underrun voice calibrate`" + `, then give it
to any command with --voice FILE.`,
		Example: "  underrun voice calibrate --engine espeak-ng -o espeak.yaml",
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return cmd.Help() },
	}
	voice.AddCommand(newVoiceCalibrateCommand(e))
	return voice
}

type voiceCalibrateCommand struct {
	env         *env
	engine      string
	out         string
	runs        int
	espeakVoice string
	speed       int
}

func newVoiceCalibrateCommand(e *env) *cobra.Command {
	c := &voiceCalibrateCommand{env: e}
	cmd := &cobra.Command{
		Use:     "calibrate",
		Short:   "Measure a speech engine and write its voice profile",
		Long:    fmt.Sprintf(voiceCalibrateLong, len(tts.CalibrationTexts)),
		Example: voiceCalibrateExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.run(cmd) },
	}
	fs := cmd.Flags()
	fs.StringVar(&c.engine, "engine", tts.EngineEspeak, "engine to measure: espeak-ng")
	fs.StringVarP(&c.out, "output", "o", "", "write the profile to `FILE` (default: standard output)")
	fs.IntVar(&c.runs, "runs", 2, "synthesize each text `N` times and keep the fastest (steadier latency figures)")
	fs.StringVar(&c.espeakVoice, "espeak-voice", "", "espeak-ng voice (-v), e.g. en-us (default: its own)")
	fs.IntVar(&c.speed, "speed", 0, "espeak-ng rate (-s) in words per minute (default: its own, 175)")
	return cmd
}

func (c *voiceCalibrateCommand) run(cmd *cobra.Command) error {
	if c.engine != tts.EngineEspeak {
		return usagef("--engine: can calibrate %s, got %q", tts.EngineEspeak, c.engine)
	}
	if c.runs < 1 {
		return usagef("--runs must be at least 1, got %d", c.runs)
	}
	if c.speed < 0 {
		return usagef("--speed must not be negative, got %d", c.speed)
	}
	engine, err := tts.NewEspeak()
	if err != nil {
		return usagef("--engine %s: %w (install the espeak-ng package)", c.engine, err)
	}
	engine.Voice, engine.Speed = c.espeakVoice, c.speed
	cal, err := tts.Calibrate(cmd.Context(), engine, tts.CalibrationTexts, c.runs)
	if err != nil {
		return usageError{err}
	}
	p := cal.Profile
	w := c.env.stderr
	fmt.Fprintf(w, "calibrated %s on %d texts (%.1f s of speech):\n", p.Engine, p.Fit.Texts, p.Fit.Seconds)
	fmt.Fprintf(w, "  rate            %7.1f words per minute (pauses excluded)\n", p.Voice.WPM)
	fmt.Fprintf(w, "  word onset      %7.2f of a word's time\n", p.Voice.WordOnset)
	fmt.Fprintf(w, "  comma pause     %7.0f ms\n", pipeline.Millis(p.Voice.CommaPause))
	fmt.Fprintf(w, "  sentence pause  %7.0f ms\n", pipeline.Millis(p.Voice.SentencePause))
	fmt.Fprintf(w, "  first audio     %7.1f ms per synthesis\n", pipeline.Millis(p.Synth.TTFA))
	fmt.Fprintf(w, "  real-time factor %6.4f\n", p.Synth.RTF)
	fmt.Fprintf(w, "  fit error       %6.1f%% mean, %.1f%% worst text\n", 100*p.Fit.MeanError, 100*p.Fit.MaxError)
	if c.out == "" {
		return p.WriteYAML(c.env.stdout)
	}
	f, err := createOutput("-o", c.out)
	if err != nil {
		return err
	}
	if err := p.WriteYAML(f); err != nil {
		f.Abort()
		return err
	}
	if err := f.Commit(); err != nil {
		return err
	}
	fmt.Fprintf(w, "wrote %s; use it with --voice %s\n", c.out, c.out)
	return nil
}
