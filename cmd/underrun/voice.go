package main

import (
	"fmt"
	"time"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/stream"
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

With --tts-url it measures an OpenAI-compatible /v1/audio/speech server
instead (OpenAI, Kokoro-FastAPI, LocalAI, underrun mock --tts), as underrun
speak drives it, a request per text with its streamed audio read as it
arrives: the texts go in turns of --turn-texts back to back, after --pause of
quiet; the time to first audio is the median latency of each turn's first
request, the continuation latency that of the others, and the real-time
factor how long the rest of the audio took to arrive after its first, per
second of it. The profile's timing mode is request.

The profile (YAML) goes to -o FILE, or to standard output; the summary goes
to standard error.

Exit codes: 0 written; 2 bad usage, or the engine is missing or failed.`

const voiceCalibrateExample = `  underrun voice calibrate --audio-engine espeak-ng -o espeak.yaml
  underrun analyze --voice espeak.yaml trace.jsonl
  underrun voice calibrate --audio-engine espeak-ng --espeak-voice en-us --espeak-wpm 190 -o fast.yaml
  underrun voice calibrate --tts-url http://127.0.0.1:8880 --tts-model kokoro --tts-voice af_heart -o kokoro.yaml
  underrun speak --voice kokoro.yaml --tts-url http://127.0.0.1:8880 --tts-model kokoro --tts-voice af_heart`

func newVoiceCommand(e *env) *cobra.Command {
	voice := &cobra.Command{
		Use:   "voice",
		Short: "Measure speech engines: voice profiles for --voice",
		Long: `Voice profiles describe how a real speech engine speaks: its rate, its pauses
and its synthesis latency. Make one with ` + "`underrun voice calibrate`" + `, then give it
to any command with --voice FILE.`,
		Example: "  underrun voice calibrate --audio-engine espeak-ng -o espeak.yaml",
		Args:    positional(0, 0, ""),
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

	tts       ttsFlags
	turnTexts int
	pause     time.Duration
}

func newVoiceCalibrateCommand(e *env) *cobra.Command {
	c := &voiceCalibrateCommand{env: e}
	cmd := newCommand("calibrate", "Measure a speech engine and write its voice profile",
		fmt.Sprintf(voiceCalibrateLong, len(tts.CalibrationTexts)), voiceCalibrateExample, positional(0, 0, ""),
		func(cmd *cobra.Command, _ []string) error { return c.run(cmd) })
	fs := cmd.Flags()
	fs.StringVar(&c.engine, "audio-engine", tts.EngineEspeak, "speech `ENGINE` to measure: espeak-ng")
	fs.StringVarP(&c.out, "output", "o", "", "write the profile to `FILE` (default: standard output)")
	fs.IntVar(&c.runs, "runs", 2, "synthesize each text `N` times and keep the fastest (steadier latency figures)")
	fs.StringVar(&c.espeakVoice, "espeak-voice", "", "espeak-ng `VOICE` (-v), e.g. en-us (default: its own)")
	fs.IntVar(&c.speed, "espeak-wpm", 0, "espeak-ng speaking rate (-s) in words per minute (default: its own, 175)")
	renamed(e, fs, "speed", "", "espeak-wpm")
	renamed(e, fs, "engine", "", "audio-engine")
	c.tts.bind(fs, "measure the OpenAI-compatible /v1/audio/speech server at `URL`, not --audio-engine")
	fs.IntVar(&c.turnTexts, "turn-texts", stream.DefaultTurnTexts, "with --tts-url: texts sent back to back as one turn (the first pays the first-audio latency, the others the continuation)")
	fs.DurationVar(&c.pause, "pause", stream.DefaultTurnPause, "with --tts-url: idle time before each turn")
	showFlags(cmd, "output", "audio-engine", "runs", "espeak-voice", "espeak-wpm", "tts-url", "tts-model", "tts-voice")
	return cmd
}

func (c *voiceCalibrateCommand) run(cmd *cobra.Command) error {
	if c.tts.url != "" {
		return c.runSpeechAPI(cmd)
	}
	if c.engine != tts.EngineEspeak {
		return usagef("--audio-engine: can calibrate %s, got %q", tts.EngineEspeak, c.engine)
	}
	if c.runs < 1 {
		return usagef("--runs must be at least 1, got %d", c.runs)
	}
	if c.speed < 0 {
		return usagef("--espeak-wpm must not be negative, got %d", c.speed)
	}
	engine, err := tts.NewEspeak()
	if err != nil {
		return usagef("--audio-engine %s: %w (install the espeak-ng package)", c.engine, err)
	}
	engine.Voice, engine.Speed = c.espeakVoice, c.speed
	cal, err := tts.Calibrate(cmd.Context(), engine, tts.CalibrationTexts, c.runs)
	if err != nil {
		return usageError{err}
	}
	return c.write(cal.Profile, nil)
}

// runSpeechAPI calibrates a /v1/audio/speech server.
func (c *voiceCalibrateCommand) runSpeechAPI(cmd *cobra.Command) error {
	fs := cmd.Flags()
	switch {
	case fs.Changed("audio-engine") || c.espeakVoice != "" || c.speed != 0:
		return usagef("--audio-engine, --espeak-voice and --espeak-wpm are for espeak-ng: drop them with --tts-url")
	case c.runs < 1 || c.turnTexts < 1:
		return usagef("--runs and --turn-texts must be at least 1")
	case c.pause < 0 || c.tts.rate <= 0:
		return usagef("--pause must not be negative and --tts-rate must be positive")
	}
	s, err := c.tts.speech(fs)
	if err != nil {
		return err
	}
	if _, err := s.Body("probe"); err != nil {
		return usagef("--tts-format: %w", err)
	}
	cal, measures, err := stream.Calibrate(cmd.Context(), s, tts.CalibrationTexts, stream.CalibrateOptions{Runs: c.runs, TurnTexts: c.turnTexts, Pause: c.pause})
	if err != nil {
		return usageError{err}
	}
	return c.write(cal.Profile, measures)
}

// write prints the profile's summary and writes it.
func (c *voiceCalibrateCommand) write(p tts.Profile, measures []stream.Measure) error {
	w := c.env.stderr
	fmt.Fprintf(w, "calibrated %s on %d texts (%.1f s of speech):\n", p.Engine, p.Fit.Texts, p.Fit.Seconds)
	fmt.Fprintf(w, "  rate            %7.1f words per minute (pauses excluded)\n", p.Voice.WPM)
	fmt.Fprintf(w, "  word onset      %7.2f of a word's time\n", p.Voice.WordOnset)
	fmt.Fprintf(w, "  comma pause     %7.0f ms\n", pipeline.Millis(p.Voice.CommaPause))
	fmt.Fprintf(w, "  sentence pause  %7.0f ms\n", pipeline.Millis(p.Voice.SentencePause))
	if measures != nil {
		fmt.Fprintf(w, "  first audio     %7.1f ms (median of each turn's first request)\n", pipeline.Millis(p.Synth.TTFA))
		fmt.Fprintf(w, "  continuation    %7.1f ms (median of the requests after it, back to back)\n", pipeline.Millis(p.Synth.Continuation))
		fmt.Fprintf(w, "  real-time factor %6.4f (the rest of the audio, after its first, per second of it)\n", p.Synth.RTF)
	} else {
		fmt.Fprintf(w, "  first audio     %7.1f ms per synthesis\n", pipeline.Millis(p.Synth.TTFA))
		fmt.Fprintf(w, "  real-time factor %6.4f\n", p.Synth.RTF)
	}
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
