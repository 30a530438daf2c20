package main

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/gopxl/beep/v2"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/pipeline/trace"
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
--wav-out; or, in a build made with -tags speaker, the sound card (--play).

While it runs, the live guard's events are printed as replay prints them
("model:"), with the player's own ("heard:"). At the end comes the report of
what was heard (the player's underruns, graded, with the engine's causes
where the gap is one it predicted), and beside it what the engine predicts
for the same token arrivals given the synthesizer's measured timings, with
every difference listed. --record writes the tokens (a native trace) with
the synthesizer's measured timings and what was heard, so that
analyze --measured can play the same run through the model again.

Exit codes: 0 pass; 1 what was heard fails the verdict (an interruption, TPOT
over --tpot-slo), or with --check it differs from the prediction; 2 bad usage.`

const speakExample = `  underrun speak                                        # the default turn, spoken by espeak-ng
  underrun speak --scenario prefill-unchunked --wav-out heard.wav --record run.jsonl
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
	url, model, api, prompts, keyEnv, clock, session string
	requests, maxTokens                              int
	noUsage                                          bool
	idle                                             time.Duration
	format, scenario                                 string
	turns                                            int

	// synthesizer
	ttsURL, ttsModel, ttsVoice, ttsFormat, ttsStreamFormat, ttsKeyEnv string
	ttsRate                                                           int
	ttsSpeed                                                          float64
	espeakVoice                                                       string
	espeakSpeed                                                       int

	// player and outputs
	wavOut, record string
	play, force    bool
	playBuffer     time.Duration
	tolerance      time.Duration
	check          bool
	warn, pause    time.Duration
	period         time.Duration
}

func newSpeakCommand(e *env) *cobra.Command {
	c := &speakCommand{env: e}
	c.cmd = &cobra.Command{
		Use:     "speak [FILE...]",
		Short:   "Run the voice pipeline for real: a real synthesizer and player, counting the silence heard",
		Long:    speakLong,
		Example: speakExample,
		RunE:    func(cmd *cobra.Command, args []string) error { return c.run(cmd, args) },
	}
	fs := c.cmd.Flags()
	fs.StringVar(&c.url, "url", "", "take tokens from this OpenAI-compatible server (its root, its /v1, or the endpoint)")
	fs.StringVar(&c.model, "model", "", "model to request from --url")
	fs.StringVar(&c.api, "api", "chat", "endpoint of --url: chat or completions")
	fs.StringVar(&c.prompts, "prompts", "", "prompts for --url from `FILE` (JSONL or plain lines; default: a built-in set)")
	fs.IntVar(&c.requests, "requests", 0, "requests to --url (default: each prompt once)")
	fs.IntVar(&c.maxTokens, "max-tokens", 0, "max_tokens of each request (0: the server's default)")
	fs.StringVar(&c.keyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key of --url")
	fs.StringVar(&c.clock, "clock", "kernel", "when a chunk from --url arrived: kernel (receive stamps) or read")
	fs.BoolVar(&c.noUsage, "no-usage", false, "do not ask --url for the usage chunk")
	fs.DurationVar(&c.idle, "idle-timeout", 2*time.Minute, "fail a stream from --url that sends nothing for this long (0: never)")
	fs.StringVar(&c.session, "session", "", "session name recorded with every turn")
	fs.StringVar(&c.format, "format", "auto", "format of FILE arguments: auto or one of "+trace.FormatNames())
	fs.StringVar(&c.scenario, "scenario", "", "take tokens from a scenario: a built-in `NAME` or a YAML file")
	fs.IntVar(&c.turns, "turns", 0, "turns to take from --scenario (default: the scenario's count)")

	fs.StringVar(&c.ttsURL, "tts-url", "", "speak with this OpenAI-compatible /v1/audio/speech server instead of espeak-ng")
	fs.StringVar(&c.ttsModel, "tts-model", openai.DefaultSpeechModel, "model of --tts-url")
	fs.StringVar(&c.ttsVoice, "tts-voice", openai.DefaultSpeechVoice, "voice of --tts-url")
	fs.StringVar(&c.ttsFormat, "tts-format", openai.DefaultSpeechFormat, "response_format of --tts-url: pcm or wav")
	fs.IntVar(&c.ttsRate, "tts-rate", openai.DefaultSpeechRate, "sample rate of --tts-format pcm")
	fs.StringVar(&c.ttsStreamFormat, "tts-stream-format", "", "stream_format of --tts-url: audio or sse (default: not sent)")
	fs.Float64Var(&c.ttsSpeed, "tts-speed", 0, "speed of --tts-url (0: not sent)")
	fs.StringVar(&c.ttsKeyEnv, "tts-api-key-env", "OPENAI_API_KEY", "environment variable holding the API key of --tts-url")
	fs.StringVar(&c.espeakVoice, "espeak-voice", "", "espeak-ng voice (-v), e.g. en-us")
	fs.IntVar(&c.espeakSpeed, "speed", 0, "espeak-ng rate (-s) in words per minute (default: its own, 175)")

	fs.StringVar(&c.wavOut, "wav-out", "", "write what the player played, silence included, to `FILE` (WAV) as it plays")
	fs.BoolVar(&c.play, "play", false, "play through the sound card (builds with -tags speaker) instead of the clock-paced sink")
	fs.DurationVar(&c.playBuffer, "play-buffer", speakerBuffer, "with --play: the sound card's buffer (short: it asks for audio often, so a gap ends where it falls; long: a busy machine does not make it run dry)")
	fs.StringVar(&c.record, "record", "", "record the tokens, the synthesizer's measured timings and what was heard to `FILE` (a native trace)")
	bindForce(fs, &c.force)
	fs.DurationVar(&c.tolerance, "tolerance", speak.DefaultTolerance, "a heard gap and a predicted one are the same when their starts and lengths differ by at most this")
	fs.BoolVar(&c.check, "check", false, "exit 1 when what was heard differs from what the engine predicts")
	fs.DurationVar(&c.warn, "warn", 0, "print a stall warning when the model's stall tolerance falls to this (0: none)")
	fs.DurationVar(&c.pause, "pause", 0, "wait this long after a turn was heard before the next one begins")
	fs.DurationVar(&c.period, "period", player.DefaultPeriod, "how often the paced sink drains its buffer (each sample still plays at its own due time)")
	c.engine.bind(fs)
	// the model's own --wav rendering would be mistaken for what was played
	// (--wav-out); the other output flags are analyze's
	tmp := pflag.NewFlagSet("report", pflag.ContinueOnError)
	c.out.bind(tmp)
	tmp.VisitAll(func(f *pflag.Flag) {
		switch f.Name {
		case "wav", "turn", "mark-gaps", "audio-engine":
			return
		}
		fs.AddFlag(f)
	})
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
		return usagef("--tolerance must be positive, got %v", c.tolerance)
	case c.warn < 0 || c.pause < 0:
		return usagef("--warn and --pause must not be negative")
	case c.period <= 0 || c.period > time.Second:
		return usagef("--period: want a duration above 0 and up to 1s, got %v", c.period)
	case c.playBuffer < time.Millisecond || c.playBuffer > time.Second:
		return usagef("--play-buffer: want 1ms to 1s, got %v", c.playBuffer)
	case c.play && openSpeaker == nil:
		return usagef("--play: this build has no sound card support; build with: go build -tags speaker ./cmd/underrun")
	case c.ttsURL == "" && c.cmd.Flags().Changed("tts-model"), c.ttsURL == "" && c.cmd.Flags().Changed("tts-voice"),
		c.ttsURL == "" && c.cmd.Flags().Changed("tts-format"):
		return usagef("--tts-model, --tts-voice and --tts-format need --tts-url")
	case c.ttsURL != "" && (c.espeakVoice != "" || c.espeakSpeed != 0):
		return usagef("--espeak-voice and --speed are espeak-ng's: drop them with --tts-url")
	case c.espeakSpeed < 0:
		return usagef("--speed must not be negative, got %d", c.espeakSpeed)
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
	if c.ttsURL == "" {
		e, err := stream.NewEspeak()
		if err != nil {
			return nil, usagef("espeak-ng: %w (install the espeak-ng package, or speak with --tts-url)", err)
		}
		e.Engine.Voice, e.Engine.Speed = c.espeakVoice, c.espeakSpeed
		return e, nil
	}
	if _, err := openai.SpeechEndpoint(c.ttsURL); err != nil {
		return nil, usagef("--tts-url: %w", err)
	}
	key := os.Getenv(c.ttsKeyEnv)
	if key == "" && c.cmd.Flags().Changed("tts-api-key-env") {
		return nil, usagef("--tts-api-key-env: the environment variable %s is not set", c.ttsKeyEnv)
	}
	s := &openai.Speech{BaseURL: c.ttsURL, APIKey: key, Model: c.ttsModel, Voice: c.ttsVoice, Format: c.ttsFormat,
		Rate: c.ttsRate, StreamFormat: c.ttsStreamFormat, Speed: c.ttsSpeed}
	if _, err := s.Body("probe"); err != nil {
		return nil, usagef("--tts-format, --tts-stream-format: %w", err)
	}
	if c.ttsRate <= 0 {
		return nil, usagef("--tts-rate must be positive, got %d", c.ttsRate)
	}
	return s, nil
}

// probe speaks a short text once, not played: it tells the synthesizer's
// sample rate and warms it up (its data cached, its connection open).
func probe(ctx context.Context, s stream.Synthesizer) (rate int, first time.Duration, err error) {
	start := time.Now()
	u, err := s.Synthesize(ctx, "Ready.")
	if err != nil {
		return 0, 0, err
	}
	defer u.Close()
	err = stream.Each(u, func(p stream.Piece) {
		if rate == 0 {
			rate, first = p.Rate, p.At.Sub(start)
		}
	})
	if err != nil {
		return 0, 0, err
	}
	if rate == 0 {
		return 0, 0, fmt.Errorf("%w: %s gave no audio for %q", stream.ErrSynthesis, s.Name(), "Ready.")
	}
	return rate, first, nil
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
	if c.ttsURL != "" && cfg.Synth.Timing() == tts.ModeStream && !fs.Changed("tts-mode") && !fs.Changed("stack") && !fs.Changed("voice") {
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
	rate, warm, err := probe(ctx, synth)
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
	r.pipe, _ = speak.New(speak.Config{Engine: cfg, Synthesizer: synth, Player: r.player, OnChunk: r.chunkEvent, Logger: r.session.log})
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

// speakRun is one run of speak.
type speakRun struct {
	cmd     *speakCommand
	cfg     pipeline.Config
	synth   stream.Synthesizer
	rate    int
	live    io.Writer
	start   time.Time
	session *session
	guard   *pipeline.Guard
	player  *player.Player
	pipe    *speak.Pipeline
	wav     *player.WAV
	wavFile *os.File
	rec     *speak.Recorder
	recFile *os.File
	stop    func() // ends the drain
	drained chan struct{}
	cmps    []*speak.Comparison
	results []*speak.Result

	mu    sync.Mutex // live output
	texts map[string]map[int]string
	err   error
}

// open starts the report, the outputs, the player and the guard.
func (r *speakRun) open() (err error) {
	c := r.cmd
	if r.session, err = c.out.begin(c.env, r.cfg); err != nil {
		return err
	}
	r.session.writeReport = r.writeReport
	defer func() {
		if err != nil {
			r.abort()
		}
	}()
	if c.record != "" {
		if r.recFile, err = openRecording("--record", c.record, c.force); err != nil {
			return err
		}
		r.rec = speak.NewRecorder(r.recFile, "speak; "+r.synth.Name()+"; clock: the player's monotonic clock, chunks from a server by their receive stamps")
	}
	if c.wavOut != "" {
		if r.wavFile, err = openRecording("--wav-out", c.wavOut, c.force); err != nil {
			return err
		}
		r.wav = player.NewWAV(r.wavFile, r.rate)
	}
	opts := player.Options{Preroll: r.cfg.Preroll, OnGap: r.gapEvent}
	if r.wav != nil {
		opts.Record = r.wav.Write
	}
	if r.player, err = player.New(r.rate, opts); err != nil {
		return err
	}
	r.drained = make(chan struct{})
	if c.play {
		stop, err := openSpeaker(r.rate, c.playBuffer, playerStreamer{r.player})
		if err != nil {
			return fmt.Errorf("--play: %w", err)
		}
		r.stop = func() { r.player.Close(); stop(); close(r.drained) }
		// a card can take a moment before it plays steadily: the first
		// turn begins once it has taken speakerWarmup of (silent) audio
		ctx, cancel := context.WithTimeout(context.Background(), speakerReady)
		err = r.player.WaitDrained(ctx, int64(speakerWarmup.Seconds()*float64(r.rate)))
		cancel()
		if err != nil {
			return fmt.Errorf("--play: the sound card took no audio for %v: %w", speakerReady, err)
		}
	} else {
		ctx, cancel := context.WithCancel(context.Background())
		go func() {
			defer close(r.drained)
			r.player.Run(ctx, c.period)
		}()
		r.stop = func() { r.player.Close(); cancel(); <-r.drained }
	}
	// the event log says which events are the model's and which were heard
	r.guard, err = pipeline.NewGuard(r.cfg, pipeline.GuardOptions{
		Clock: pipeline.RealClock(), Logger: r.session.log.With().Str("source", "model").Logger(),
		OnEvent: r.guardEvent, WarnTolerance: c.warn,
	})
	if err != nil {
		return usageError{err}
	}
	r.session.log = r.session.log.With().Str("source", "heard").Logger()
	return nil
}

// speakerBuffer is the sound card's buffer for speak --play: short, so that
// the card asks for audio often and a gap's end is heard where it falls.
// speakerWarmup is how much silence the card must have taken before the
// first turn begins, within speakerReady.
const (
	speakerBuffer = 10 * time.Millisecond
	speakerWarmup = 200 * time.Millisecond
	speakerReady  = 5 * time.Second
)

// playerStreamer plays a Player through beep's speaker.
type playerStreamer struct{ p *player.Player }

func (s playerStreamer) Stream(buf [][2]float64) (int, bool) {
	mono := make([]float32, len(buf))
	if !s.p.Stream(mono) {
		return 0, false
	}
	for i, v := range mono {
		buf[i] = [2]float64{float64(v), float64(v)}
	}
	return len(buf), true
}

func (s playerStreamer) Err() error { return nil }

var _ beep.Streamer = playerStreamer{}

func (r *speakRun) playerText() string {
	switch {
	case r.cmd.play:
		return "plays through the sound card"
	case r.cmd.wavOut != "":
		return "is paced by the monotonic clock and writes what it plays to " + r.cmd.wavOut
	}
	return "is paced by the monotonic clock (--wav-out FILE keeps what it plays)"
}

// line prints one live line.
func (r *speakRun) line(turn, format string, args ...any) {
	r.mu.Lock()
	defer r.mu.Unlock()
	fmt.Fprintf(r.live, "  %8.3fs  %-12s  %s\n", time.Since(r.start).Seconds(), turn, fmt.Sprintf(format, args...))
}

func (r *speakRun) guardEvent(e pipeline.Event) {
	if text, ok := guardEventText(e); ok {
		r.line(e.Turn, "model: %s", text)
	}
}

func (r *speakRun) gapEvent(turn string, g player.Gap, e player.GapEvent) {
	switch e {
	case player.GapStarted:
		r.line(turn, "heard: silence began (%.1f ms into the turn)", pipeline.Millis(g.Start))
	case player.GapEnded:
		r.line(turn, "heard: %.1f ms of silence (%d samples), ended by chunk %d %q", pipeline.Millis(g.Duration), g.Samples, g.Chunk, r.chunkText(turn, g.Chunk))
	case player.GapCancelled:
		r.line(turn, "heard: the speech was over (no underrun)")
	}
}

func (r *speakRun) chunkEvent(turn string, t speak.Timing, e speak.ChunkEvent) {
	r.mu.Lock()
	if r.texts == nil {
		r.texts = map[string]map[int]string{}
	}
	if r.texts[turn] == nil {
		r.texts[turn] = map[int]string{}
	}
	r.texts[turn][t.Index] = t.Text
	r.mu.Unlock()
	if e == speak.ChunkDone {
		if t.Err != "" {
			r.line(turn, "synthesizer: chunk %d %q failed: %s", t.Index, clipText(t.Text), t.Err)
		}
		if r.rec != nil {
			r.fail(r.rec.WriteTiming(turn, t))
		}
	}
}

func (r *speakRun) chunkText(turn string, i int) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return clipText(r.texts[turn][i])
}

func clipText(s string) string {
	s = strings.TrimSpace(s)
	if len(s) <= 30 {
		return s
	}
	return s[:27] + "..."
}

func (r *speakRun) fail(err error) {
	if err == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// turn is one turn being spoken.
type speakTurn struct {
	r  *speakRun
	t  *speak.Turn
	id string
}

// begin opens turn id of session, its request sent at begin.
func (r *speakRun) begin(ctx context.Context, id, session string, begin time.Time) (*speakTurn, error) {
	t, err := r.pipe.Begin(ctx, id, session, begin)
	if err != nil {
		return nil, err
	}
	if err := r.guard.BeginAt(id, session, begin); err != nil {
		t.Abort()
		return nil, err
	}
	if r.rec != nil {
		r.fail(r.rec.BeginTurn(&pipeline.Turn{ID: id, Session: session, Start: begin}))
	}
	return &speakTurn{r: r, t: t, id: id}, nil
}

// push feeds a chunk to the pipeline and the guard.
func (st *speakTurn) push(c pipeline.Chunk) error {
	spoken, err := st.t.Push(c)
	if err != nil {
		return err
	}
	if err := st.r.guard.Chunk(st.id, spoken); err != nil {
		return err
	}
	if st.r.rec != nil {
		st.r.fail(st.r.rec.WriteChunk(st.id, spoken))
	}
	return nil
}

// end closes the turn's stream.
func (st *speakTurn) end(status pipeline.Status, errText string, outputTokens int) error {
	if err := st.t.End(status, errText); err != nil {
		return err
	}
	if err := st.r.guard.End(st.id, status); err != nil && !errors.Is(err, pipeline.ErrUnknownTurn) {
		return err
	}
	if st.r.rec != nil {
		st.r.fail(st.r.rec.EndTurn(&pipeline.Turn{ID: st.id, Status: status, Error: errText, OutputTokens: outputTokens}))
	}
	return nil
}

// heard waits until the turn was played out and accounts it.
func (st *speakTurn) heard(ctx context.Context) error {
	res, err := st.t.Wait(ctx)
	if err != nil {
		return err
	}
	r := st.r
	cmp, err := speak.Compare(r.cfg, res, r.cmd.tolerance)
	if err != nil {
		return err
	}
	r.results = append(r.results, res)
	r.cmps = append(r.cmps, cmp)
	if r.rec != nil {
		r.fail(r.rec.WriteHeard(res.Heard, r.rate))
	}
	h := res.Heard
	r.line(st.id, "heard to its end: %d %s, %.0f ms of silence; predicted %d; %s",
		len(h.Gaps), replayNoun(len(h.Gaps), "gap", "gaps"), pipeline.Millis(h.Silence()), len(cmp.Model.Underruns), agreeText(cmp))
	return r.session.played(res.Record, cmp.Heard)
}

func agreeText(cmp *speak.Comparison) string {
	if d := cmp.Differences(); len(d) > 0 {
		return fmt.Sprintf("%d %s", len(d), replayNoun(len(d), "difference", "differences"))
	}
	return "as predicted"
}

// replay speaks recorded turns, each chunk at its recorded time since its
// turn began.
func (r *speakRun) replay(ctx context.Context, turns []*pipeline.Turn) error {
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	wait := func(until time.Time) error {
		d := time.Until(until)
		if d <= 0 {
			return ctx.Err()
		}
		timer.Reset(d)
		select {
		case <-timer.C:
			return nil
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	for i, t := range turns {
		if i > 0 && r.cmd.pause > 0 {
			if err := wait(time.Now().Add(r.cmd.pause)); err != nil {
				return err
			}
		}
		begin := time.Now()
		st, err := r.begin(ctx, t.ID, t.Session, begin)
		if err != nil {
			return usageError{fmt.Errorf("turn %q: %w", t.ID, err)}
		}
		for _, ch := range t.Chunks {
			if err := wait(begin.Add(ch.At)); err != nil {
				st.t.Abort()
				return err
			}
			if ch.At <= 0 {
				ch.At = 1 // a chunk at the very request: At must be set
			}
			if err := st.push(ch); err != nil {
				st.t.Abort()
				return usageError{fmt.Errorf("turn %q: %w", t.ID, err)}
			}
		}
		status := t.Status
		if status == "" {
			status = pipeline.StatusOK
		}
		if err := st.end(status, t.Error, t.OutputTokens); err != nil {
			return err
		}
		if err := st.heard(ctx); err != nil {
			return err
		}
	}
	return nil
}

// live_ speaks the answers of the --url server, one request after
// another.
func (r *speakRun) live_(ctx context.Context, prompts []openai.Prompt) error {
	c := r.cmd
	key := os.Getenv(c.keyEnv)
	if key == "" && c.cmd.Flags().Changed("api-key-env") {
		return usagef("--api-key-env: the environment variable %s is not set", c.keyEnv)
	}
	n := c.requests
	if n == 0 {
		n = len(prompts)
	}
	feed := &liveFeed{r: r, ctx: ctx}
	client := &openai.Client{BaseURL: c.url, APIKey: key, IdleTimeout: c.idle, Trace: feed, ReadClock: c.clock == "read"}
	if !client.ReadClock {
		_ = rxstamp.Warm(ctx)
	}
	for i := range n {
		if i > 0 && c.pause > 0 {
			select {
			case <-time.After(c.pause):
			case <-ctx.Done():
				return ctx.Err()
			}
		}
		req := openai.Request{API: openai.API(c.api), Model: c.model, Prompt: prompts[i%len(prompts)], MaxTokens: c.maxTokens, NoUsage: c.noUsage}
		feed.err = nil
		_, err := client.Stream(ctx, "r"+strconv.Itoa(i+1), c.session, req)
		if err == nil {
			err = feed.err
		}
		if err != nil {
			if feed.turn != nil {
				feed.turn.t.Abort()
			}
			return err
		}
		if feed.turn == nil {
			continue
		}
		if err := feed.turn.heard(ctx); err != nil {
			return err
		}
		feed.turn = nil
	}
	return nil
}

// liveFeed takes the client's turn as it streams (an openai.TraceWriter).
type liveFeed struct {
	r    *speakRun
	ctx  context.Context
	turn *speakTurn
	err  error
}

func (f *liveFeed) BeginTurn(t *pipeline.Turn) error {
	st, err := f.r.begin(f.ctx, t.ID, t.Session, t.Start)
	if err != nil {
		f.err = err
		return err
	}
	f.turn = st
	return nil
}

func (f *liveFeed) WriteChunk(turn string, c pipeline.Chunk) error {
	if f.turn == nil {
		return nil
	}
	if err := f.turn.push(c); err != nil && f.err == nil {
		f.err = err
	}
	return nil
}

func (f *liveFeed) EndTurn(t *pipeline.Turn) error {
	if f.turn == nil {
		return nil
	}
	if t.Status == pipeline.StatusError {
		f.r.line(t.ID, "stream: %s", t.Error)
	}
	if err := f.turn.end(t.Status, t.Error, t.OutputTokens); err != nil && f.err == nil {
		f.err = err
	}
	return nil
}

// abort stops everything after an error, leaving the outputs as they are.
func (r *speakRun) abort() {
	if r.guard != nil {
		r.guard.Close()
	}
	if r.stop != nil {
		r.stop()
		r.stop = nil
	}
	if r.wav != nil {
		r.wav.Close()
	}
	if r.wavFile != nil {
		r.wavFile.Close()
	}
	if r.recFile != nil {
		r.recFile.Close()
	}
	if r.session != nil {
		r.session.abort()
	}
}

// finish closes the outputs and writes the report.
func (r *speakRun) finish() error {
	r.guard.Close()
	r.stop()
	r.stop = nil
	var errs []error
	if r.wav != nil {
		errs = append(errs, r.wav.Close())
		errs = append(errs, r.wavFile.Close())
	}
	if r.recFile != nil {
		errs = append(errs, r.recFile.Close())
	}
	errs = append(errs, r.err)
	if err := errors.Join(errs...); err != nil {
		r.session.abort()
		return err
	}
	err := r.session.finish()
	if err != nil && !errors.Is(err, errFail) {
		return err
	}
	if r.cmd.check {
		for _, cmp := range r.cmps {
			if !cmp.Agrees() {
				return errFail
			}
		}
	}
	return err
}

// writeReport renders the report of what was heard and, beside it, the
// comparison with the engine's prediction.
func (r *speakRun) writeReport(w io.Writer, rep *pipeline.Report, json_ bool) error {
	if json_ {
		var heard bytes.Buffer
		if err := rep.WriteJSON(&heard); err != nil {
			return err
		}
		out := struct {
			Heard      json.RawMessage `json:"heard"`
			Comparison comparisonJSON  `json:"comparison"`
		}{Heard: bytes.TrimSpace(heard.Bytes()), Comparison: r.comparisonJSON()}
		b, err := json.MarshalIndent(out, "", "  ")
		if err != nil {
			return err
		}
		_, err = w.Write(append(b, '\n'))
		return err
	}
	fmt.Fprintf(w, "\nwhat was heard (the player's own count of its silence):\n\n")
	if err := writeTextReport(w, rep, r.session.flags.list); err != nil {
		return err
	}
	return r.writeComparison(w)
}

// writeComparison writes heard against predicted, turn by turn.
func (r *speakRun) writeComparison(w io.Writer) error {
	fmt.Fprintf(w, "\nheard versus predicted: the engine given the same token arrivals and the synthesizer's\n")
	fmt.Fprintf(w, "measured timings (%s); a heard and a predicted gap are the same within %v\n\n", r.synthSummary(), r.cmd.tolerance)
	fmt.Fprintf(w, "  %-12s %12s %10s %12s %10s %9s %9s  %s\n", "turn", "heard ms", "length ms", "predicted ms", "length ms", "start +ms", "length +ms", "")
	total, agree := 0, 0
	for _, cmp := range r.cmps {
		for _, p := range cmp.Pairs {
			total++
			var hs, hl, ps, pl, ds, dl string = "-", "-", "-", "-", "", ""
			if p.Heard != nil {
				hs, hl = fmt.Sprintf("%.1f", pipeline.Millis(p.Heard.Start)), fmt.Sprintf("%.1f", pipeline.Millis(p.Heard.Duration))
			}
			if p.Predicted != nil {
				ps, pl = fmt.Sprintf("%.1f", pipeline.Millis(p.Predicted.Start)), fmt.Sprintf("%.1f", pipeline.Millis(p.Predicted.Duration))
			}
			if p.Heard != nil && p.Predicted != nil {
				ds, dl = fmt.Sprintf("%+.1f", pipeline.Millis(p.StartDiff)), fmt.Sprintf("%+.1f", pipeline.Millis(p.LengthDiff))
			}
			kind := "same"
			if p.Kind != "" {
				kind = string(p.Kind)
			} else {
				agree++
			}
			fmt.Fprintf(w, "  %-12s %12s %10s %12s %10s %9s %9s  %s\n", cmp.Turn, hs, hl, ps, pl, ds, dl, kind)
		}
	}
	if total == 0 {
		fmt.Fprintf(w, "  (no gap heard, none predicted)\n")
	}
	var diffs []string
	var worst time.Duration
	for _, cmp := range r.cmps {
		for _, p := range cmp.Differences() {
			diffs = append(diffs, fmt.Sprintf("%s %s", cmp.Turn, p.Kind))
		}
		for _, p := range cmp.Pairs {
			if p.Heard != nil && p.Predicted != nil {
				worst = max(worst, absDuration(p.StartDiff), absDuration(p.LengthDiff))
			}
		}
	}
	fmt.Fprintf(w, "\n%d of %d gaps heard as predicted (largest difference %.1f ms)", agree, total, pipeline.Millis(worst))
	if len(diffs) == 0 {
		fmt.Fprintf(w, "; no differences\n")
	} else {
		fmt.Fprintf(w, "; differences: %s\n", strings.Join(diffs, ", "))
	}
	if late := r.late(); late > 0 {
		fmt.Fprintf(w, "the player drained its buffer up to %.1f ms after the audio was due (each sample still played at its own time)\n", pipeline.Millis(late))
	}
	return nil
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

func (r *speakRun) late() time.Duration {
	var late time.Duration
	for _, res := range r.results {
		late = max(late, res.Heard.Late)
	}
	return late
}

// synthSummary says how the synthesizer did: its median first audio after
// being given a chunk, and its speed.
func (r *speakRun) synthSummary() string {
	var firsts []float64
	var audio, busy time.Duration
	chunks, failed := 0, 0
	for _, res := range r.results {
		for _, c := range res.Chunks {
			chunks++
			if c.Err != "" {
				failed++
			}
			if c.HasAudio {
				firsts = append(firsts, pipeline.Millis(c.First-c.Sent))
				audio += c.Audio
				busy += c.Done - c.First
			}
		}
	}
	s := fmt.Sprintf("%s, %s mode: %d chunks", r.synth.Name(), r.cfg.Synth.Timing(), chunks)
	if len(firsts) > 0 {
		slices.Sort(firsts)
		s += fmt.Sprintf(", first audio %.0f ms median after each was given", firsts[len(firsts)/2])
	}
	if audio > 0 {
		s += fmt.Sprintf(", RTF %.3f after it", busy.Seconds()/audio.Seconds())
	}
	if failed > 0 {
		s += fmt.Sprintf(", %d failed", failed)
	}
	return s
}

type comparisonJSON struct {
	ToleranceMs float64     `json:"tolerance_ms"`
	Synthesizer string      `json:"synthesizer"`
	Mode        tts.Mode    `json:"mode"`
	Agrees      bool        `json:"agrees"`
	Turns       []turnCompJ `json:"turns"`
}

type turnCompJ struct {
	Turn        string   `json:"turn"`
	Agrees      bool     `json:"agrees"`
	StartDiffMs float64  `json:"startup_diff_ms"`
	Pairs       []pairJ  `json:"gaps"`
	Errors      []string `json:"synthesis_errors,omitempty"`
}

type gapJ struct {
	StartMs    float64 `json:"start_ms"`
	DurationMs float64 `json:"duration_ms"`
	Class      string  `json:"class"`
	Cause      string  `json:"cause,omitempty"`
}

type pairJ struct {
	Kind         string   `json:"kind"`
	Heard        *gapJ    `json:"heard,omitempty"`
	Predicted    *gapJ    `json:"predicted,omitempty"`
	StartDiffMs  *float64 `json:"start_diff_ms,omitempty"`
	LengthDiffMs *float64 `json:"length_diff_ms,omitempty"`
}

func gapOf(u *pipeline.Underrun) *gapJ {
	if u == nil {
		return nil
	}
	return &gapJ{StartMs: round3(pipeline.Millis(u.Start)), DurationMs: round3(pipeline.Millis(u.Duration)), Class: string(u.Class), Cause: string(u.Cause)}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

func (r *speakRun) comparisonJSON() comparisonJSON {
	out := comparisonJSON{ToleranceMs: pipeline.Millis(r.cmd.tolerance), Synthesizer: r.synth.Name(), Mode: r.cfg.Synth.Timing(), Agrees: true, Turns: []turnCompJ{}}
	for i, cmp := range r.cmps {
		t := turnCompJ{Turn: cmp.Turn, Agrees: cmp.Agrees(), StartDiffMs: round3(pipeline.Millis(cmp.StartDiff)), Pairs: []pairJ{}, Errors: r.results[i].Errors}
		out.Agrees = out.Agrees && t.Agrees
		for _, p := range cmp.Pairs {
			pj := pairJ{Kind: string(p.Kind), Heard: gapOf(p.Heard), Predicted: gapOf(p.Predicted)}
			if pj.Kind == "" {
				pj.Kind = "same"
			}
			if p.Heard != nil && p.Predicted != nil {
				ds, dl := round3(pipeline.Millis(p.StartDiff)), round3(pipeline.Millis(p.LengthDiff))
				pj.StartDiffMs, pj.LengthDiffMs = &ds, &dl
			}
			t.Pairs = append(t.Pairs, pj)
		}
		out.Turns = append(out.Turns, t)
	}
	return out
}
