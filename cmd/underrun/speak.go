package main

import (
	"context"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/scenarios"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/player"
	"github.com/speech-pipeline/underrun/tts/stream"
)

func init() { commands = append(commands, newSpeakCommand) }

const speakLong = `Run the voice pipeline for real, in wall-clock time, and count the silence the
listener hears: tokens stream into a text buffer, the chunking policy releases
the text (--chunking, every preset the engine has), a real synthesizer speaks
each chunk while the stream goes on, and a player drains a real buffer at the
sample rate, counting every moment it had nothing to play while the turn's
speech was not finished.

Tokens come from a live OpenAI-compatible server (--url and --model: the
capture client, its chunks timed by the kernel's receive stamps), a recorded
trace (FILE arguments, any format analyze reads), or a scenario (--scenario);
by default, the built-in default turn. Turns are spoken one after another: the
next request goes out when the turn before it has been heard to its end.

The synthesizer is espeak-ng run as a process, its audio read from its output
as it is written (default), or any OpenAI-compatible /v1/audio/speech
endpoint (--tts-url: OpenAI, Kokoro-FastAPI, LocalAI, underrun mock --tts),
its streamed answer read as it arrives (--tts-format pcm or wav). --tts-mode
says how it is driven: stream (one espeak-ng process per turn, fed chunk by
chunk; the engine's default), request (one request or process per chunk, one
after another; the default with --tts-url, as the speech API has no synthesis
context) or parallel (one per chunk, all at once, played in order).

The player is a sink paced by the monotonic clock, which plays each sample
at its due time from what had arrived by then and writes what it played to
--wav; or, in a build made with -tags speaker, the sound card (--play).

While it runs, the live guard's events are printed as replay prints them
("model:"), with the player's own ("heard:"). At the end comes the report of
what was heard (the player's underruns, graded, with the engine's causes
where the gap is one it predicted), and beside it what the engine predicts
for the same token arrivals given the synthesizer's measured timings, with
every difference listed. --record writes the tokens (a native trace) with
the synthesizer's measured timings and what was heard, so that
analyze --measured can play the same run through the model again.

Exit codes: 0 pass; 1 what was heard fails the verdict (an interruption, a
turn without a reply, TPOT over --tpot-slo where given), or with --check it differs from the prediction; 2 bad usage.`

const speakExample = `  underrun speak                                        # the default turn, spoken by espeak-ng
  underrun speak --scenario prefill-unchunked --wav heard.wav --record run.jsonl
  underrun speak trace.jsonl --chunking sentence --tts-mode stream
  # your deployment: your LLM server and your TTS server
  underrun speak --url http://127.0.0.1:8000 --model m --tts-url http://127.0.0.1:8880 --tts-model kokoro --tts-voice af_heart
  # or everything against the mock
  underrun mock --tts --scenario prefill-unchunked &
  underrun speak --url http://127.0.0.1:8000 --model mock --tts-url http://127.0.0.1:8000 --check
  underrun analyze --measured run.jsonl run.jsonl                  # the same run through the model again`

type speakCommand struct {
	env    *env
	cmd    *cobra.Command
	engine engineFlags
	out    reportFlags

	// tokens
	llmFlags
	requests         int
	format, scenario string
	turns            int

	// synthesizer
	tts             ttsFlags
	ttsStreamFormat string
	ttsSpeed        float64
	espeakVoice     string
	espeakSpeed     int

	// player and outputs
	wavOut, record string
	play           bool
	playBuffer     time.Duration
	tolerance      time.Duration
	check          bool
	warn, pause    time.Duration
	period         time.Duration
}

func newSpeakCommand(e *env) *cobra.Command {
	c := &speakCommand{env: e}
	c.cmd = newCommand("speak [FILE...]", "Run the voice pipeline for real: a real synthesizer and player, counting the silence heard",
		speakLong, speakExample, nil,
		func(cmd *cobra.Command, args []string) error { return c.run(cmd, args) })
	fs := c.cmd.Flags()
	c.llmFlags.bind(fs, "take tokens from the LLM server at `URL` (its root, its /v1, or the endpoint)")
	fs.IntVar(&c.requests, "requests", 0, "requests to --url (default: each prompt once)")
	bindFormat(fs, &c.format, "FILE arguments'")
	fs.StringVar(&c.scenario, "scenario", "", "take tokens from a `SCENARIO`: a built-in name or a YAML file")
	fs.IntVar(&c.turns, "turns", 0, "turns to take from --scenario (default: the scenario's count)")

	c.tts.bind(fs, "speak with the OpenAI-compatible /v1/audio/speech server at `URL`, not espeak-ng")
	fs.StringVar(&c.ttsStreamFormat, "tts-stream-format", "", "stream_format of --tts-url: audio or sse (default: not sent)")
	fs.Float64Var(&c.ttsSpeed, "tts-speed", 0, "speed of --tts-url (0: not sent)")
	fs.StringVar(&c.espeakVoice, "espeak-voice", "", "espeak-ng `VOICE` (-v), e.g. en-us")
	fs.IntVar(&c.espeakSpeed, "espeak-wpm", 0, "espeak-ng speaking rate (-s) in words per minute (default: its own, 175)")

	fs.StringVar(&c.wavOut, "wav", "", "write what the player played, silence included, to `FILE` (WAV) as it plays")
	fs.BoolVar(&c.play, "play", false, "play through the sound card (builds with -tags speaker) instead of the clock-paced sink")
	fs.DurationVar(&c.playBuffer, "play-buffer", speakerBuffer, "with --play: the sound card's buffer (short: a gap ends where it falls; long: a busy machine does not run it dry)")
	fs.StringVar(&c.record, "record", "", "record the tokens, the synthesizer's measured timings and what was heard to `FILE` (a native trace)")
	fs.DurationVar(&c.tolerance, "match-within", speak.DefaultTolerance, "a heard gap and a predicted one are the same when their starts and lengths differ by at most this")
	fs.BoolVar(&c.check, "check", false, "exit 1 when what was heard differs from what the engine predicts")
	fs.DurationVar(&c.warn, "warn-tolerance", 0, "print a stall warning when the model's stall tolerance falls to this (0: none)")
	fs.DurationVar(&c.pause, "pause", 0, "wait this long after a turn was heard before the next one begins")
	fs.DurationVar(&c.period, "period", player.DefaultPeriod, "how often the paced sink drains its buffer (each sample still plays at its own due time)")
	c.engine.bind(fs)
	// the model's own --wav rendering would be mistaken for what was played
	// (speak's own --wav); the other output flags are analyze's
	c.out.bindWithout(fs, wavFlagNames...)
	renamed(e, fs, "output", "o", "report")
	renamed(e, fs, "wav-out", "", "wav")
	renamed(e, fs, "speed", "", "espeak-wpm")
	renamed(e, fs, "warn", "", "warn-tolerance")
	renamed(e, fs, "tolerance", "", "match-within")
	showFlags(c.cmd, "url", "model", "scenario", "tts-url", "tts-model", "tts-voice", "stack", "chunking", "wav", "record", "play", "check", "report")
	return c.cmd
}

func (c *speakCommand) validate(args []string) error {
	sources := 0
	for _, given := range []bool{c.url != "", len(args) > 0, c.scenario != ""} {
		if given {
			sources++
		}
	}
	switch {
	case sources > 1:
		return usagef("give one source of tokens: --url, FILE arguments or --scenario")
	case c.url != "" && c.model == "":
		return usagef("--url needs --model")
	case c.api != "chat" && c.api != "completions":
		return usagef("--api: want chat or completions, got %q", c.api)
	case c.clock != "kernel" && c.clock != "read":
		return usagef("--clock: want kernel or read, got %q", c.clock)
	case c.requests < 0 || c.maxTokens < 0 || c.turns < 0:
		return usagef("--requests, --max-tokens and --turns must not be negative")
	case c.tolerance <= 0:
		return usagef("--match-within must be positive, got %v", c.tolerance)
	case c.warn < 0 || c.pause < 0:
		return usagef("--warn-tolerance and --pause must not be negative")
	case c.period <= 0 || c.period > time.Second:
		return usagef("--period: want a duration above 0 and up to 1s, got %v", c.period)
	case c.playBuffer < time.Millisecond || c.playBuffer > time.Second:
		return usagef("--play-buffer: want 1ms to 1s, got %v", c.playBuffer)
	case c.play && openSpeaker == nil:
		return usagef("--play: this build has no sound card support; build with: go build -tags speaker ./cmd/underrun")
	case c.tts.url == "" && c.cmd.Flags().Changed("tts-model"), c.tts.url == "" && c.cmd.Flags().Changed("tts-voice"),
		c.tts.url == "" && c.cmd.Flags().Changed("tts-format"):
		return usagef("--tts-model, --tts-voice and --tts-format need --tts-url")
	case c.tts.url != "" && (c.espeakVoice != "" || c.espeakSpeed != 0):
		return usagef("--espeak-voice and --espeak-wpm are espeak-ng's: drop them with --tts-url")
	case c.espeakSpeed < 0:
		return usagef("--espeak-wpm must not be negative, got %d", c.espeakSpeed)
	}
	if c.play && soundCard != nil {
		// before anything runs: without a card, exit 2 now
		if err := soundCard(); err != nil {
			return usagef("--play: %w", err)
		}
	}
	return nil
}

// synthesizer returns the synthesizer the flags name.
func (c *speakCommand) synthesizer() (stream.Synthesizer, error) {
	if c.tts.url == "" {
		e, err := stream.NewEspeak()
		if err != nil {
			return nil, usagef("espeak-ng: %w (install the espeak-ng package, or speak with --tts-url)", err)
		}
		e.Engine.Voice, e.Engine.Speed = c.espeakVoice, c.espeakSpeed
		return e, nil
	}
	s, err := c.tts.speech(c.cmd.Flags())
	if err != nil {
		return nil, err
	}
	s.StreamFormat, s.Speed = c.ttsStreamFormat, c.ttsSpeed
	if _, err := s.Body("probe"); err != nil {
		return nil, usagef("--tts-format, --tts-stream-format: %w", err)
	}
	if c.tts.rate <= 0 {
		return nil, usagef("--tts-rate must be positive, got %d", c.tts.rate)
	}
	return s, nil
}

func (c *speakCommand) run(cmd *cobra.Command, args []string) error {
	if err := c.validate(args); err != nil {
		return err
	}
	ctx := cmd.Context()
	cfg, err := c.engine.config()
	if err != nil {
		return err
	}
	fs := c.cmd.Flags()
	if c.tts.url != "" && cfg.Synth.Timing() == tts.ModeStream && !fs.Changed("tts-mode") && !fs.Changed("stack") && !fs.Changed("voice") {
		// the speech API takes a request per text: stream mode, the
		// engine's default, cannot drive it
		cfg.Synth.Mode = tts.ModeRequest
	}
	synth, err := c.synthesizer()
	if err != nil {
		return err
	}
	var turns []*pipeline.Turn
	from := "the built-in default turn"
	switch {
	case len(args) > 0:
		if turns, err = (&replayCommand{env: c.env, format: c.format}).read(ctx, args); err != nil {
			return err
		}
		from = strings.Join(args, ", ")
	case c.scenario != "":
		if turns, from, err = scenarioTurns(ctx, c.scenario, c.turns); err != nil {
			return err
		}
	case c.url == "":
		turns = defaultTurns()
	}
	var prompts []openai.Prompt
	if c.url != "" {
		if _, err := openai.Endpoint(c.url, openai.API(c.api)); err != nil {
			return usagef("--url: %w", err)
		}
		if prompts, err = loadPrompts(c.prompts); err != nil {
			return err
		}
		from = c.url
	}
	rate, warm, err := stream.Probe(ctx, synth)
	if err != nil {
		return usageError{fmt.Errorf("the synthesizer: %w", err)}
	}
	r := &speakRun{cmd: c, cfg: cfg, synth: synth, rate: rate, live: c.env.stdout, start: time.Now()}
	if c.out.output == "json" {
		r.live = c.env.stderr
	}
	if err := r.open(); err != nil {
		return err
	}
	if _, err := speak.New(speak.Config{Engine: cfg, Synthesizer: synth, Player: r.player}); err != nil {
		r.abort()
		return usageError{fmt.Errorf("--tts-mode: %w", err)}
	}
	pipe, _ := speak.New(speak.Config{Engine: cfg, Synthesizer: synth, Player: r.player, OnChunk: r.chunkEvent, Logger: r.session.log})
	if r.sess, err = speak.NewSession(speak.SessionOptions{Pipeline: pipe, Guard: r.guard, Recorder: r.rec, Rate: rate, Tolerance: c.tolerance}); err != nil {
		r.abort()
		return err
	}
	fmt.Fprintf(r.live, "speaking %s with %s (%s mode, %d Hz, first audio %.0f ms when warm), chunking %s; the player %s\n\n",
		from, synth.Name(), cfg.Synth.Timing(), rate, pipeline.Millis(warm), cfg.Policy.Name(), r.playerText())
	fmt.Fprintf(r.live, "  %9s  %-12s  %s\n", "time", "turn", "event")
	if c.url != "" {
		err = r.live_(ctx, prompts)
	} else {
		err = r.replay(ctx, turns)
	}
	interrupted := errors.Is(err, context.Canceled) || ctx.Err() != nil
	if err != nil && !interrupted {
		r.abort()
		return err
	}
	if interrupted {
		fmt.Fprintf(r.live, "\nspeak interrupted: the report covers the turns heard so far\n")
	}
	return r.finish()
}

// defaultTurns is the built-in default turn.
func defaultTurns() []*pipeline.Turn {
	return []*pipeline.Turn{scenarios.DefaultTurn()}
}
