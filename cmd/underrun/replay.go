package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"sync"
	"time"

	"github.com/gopxl/beep/v2"
	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/render"
)

func init() { commands = append(commands, newReplayCommand) }

const replayLong = `Play recorded token traces in wall-clock time through the live guard: the same
engine analyze uses, driven by a real clock. Each turn begins at its recorded
start (turns without one follow each other), each chunk arrives at its
recorded time, and every underrun is printed the moment the player's buffer
runs dry, then again, complete, when audio resumes; the report at the end is
the one analyze gives for the same trace.

--speed plays faster or slower than real time (the underruns stay exactly
those of the recording). --warn-tolerance prints a stall warning whenever the stall
tolerance (how much longer the stream can stay silent before the player
starves) falls to the threshold. With a build made with -tags speaker,
--play plays what the listener hears through the sound card as it happens.
--monitor URL instead feeds the trace into a running underrun monitor at its real
pace, as a voice app would (see underrun monitor).

Ctrl-C stops the replay; the turns so far are reported.

Exit codes: 0 pass; 1 the listener hears an interruption (a gap of --interruption or more) or a turn
without a reply (its request failed), or TPOT or TTFT over --tpot-slo or
--ttft-slo where given; 2 bad usage or bad input.`

const replayExample = `  underrun replay trace.jsonl
  underrun replay --speed 4 --warn-tolerance 150ms capture.jsonl
  underrun replay --chunking sentence --tts-latency 250ms --wav turn.wav --mark-gaps trace.jsonl
  underrun replay live.jsonl --monitor http://127.0.0.1:8765    # into a running monitor
  go build -tags speaker ./cmd/underrun && ./underrun replay --play trace.jsonl`

// openSpeaker starts playing s through the sound card at rate, with a
// buffer of that length, and returns the function that stops it; nil in
// builds without the speaker tag.
var openSpeaker func(rate int, buffer time.Duration, s beep.Streamer) (stop func(), err error)

// soundCard reports whether a playback device opens; nil in builds
// without the speaker tag.
var soundCard func() error

type replayCommand struct {
	env    *env
	cmd    *cobra.Command
	engine engineFlags
	out    reportFlags
	format string
	speed  float64
	warn   time.Duration
	play   bool
	to     string // feed a running monitor instead
	token  string
}

func newReplayCommand(e *env) *cobra.Command {
	c := &replayCommand{env: e}
	c.cmd = newCommand("replay [FILE...]", "Play token traces in wall-clock time, printing underruns as they happen",
		replayLong, replayExample, nil,
		func(cmd *cobra.Command, args []string) error { return c.run(cmd, args) })
	fs := c.cmd.Flags()
	c.engine.bind(fs)
	bindFormat(fs, &c.format, "input")
	fs.Float64Var(&c.speed, "speed", 1, "play `FACTOR` times as fast as recorded (2: twice as fast)")
	fs.DurationVar(&c.warn, "warn-tolerance", 0, "print a stall warning when the stall tolerance falls to this (0: none)")
	fs.BoolVar(&c.play, "play", false, "play what the listener hears through the sound card (builds with -tags speaker)")
	fs.StringVar(&c.to, "monitor", "", "feed the trace into the running monitor at `URL` at its real pace instead of guarding it here")
	fs.StringVar(&c.token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "the monitor's bearer `TOKEN`, with --monitor (default $UNDERRUN_MONITOR_TOKEN)")
	c.out.bind(fs)
	renamed(e, fs, "output", "o", "report")
	renamed(e, fs, "warn", "", "warn-tolerance")
	renamed(e, fs, "to", "", "monitor")
	showFlags(c.cmd, "speed", "warn-tolerance", "monitor", "play", "stack", "chunking", "tts-latency", "report", "wav")
	return c.cmd
}

func (c *replayCommand) run(cmd *cobra.Command, args []string) error {
	switch {
	case !(c.speed > 0) || math.IsInf(c.speed, 0):
		return usagef("--speed must be a positive number, got %v", c.speed)
	case c.warn < 0:
		return usagef("--warn-tolerance must not be negative, got %v", c.warn)
	case c.play && openSpeaker == nil:
		return usagef("--play: this build has no sound card support; build with: go build -tags speaker ./cmd/underrun")
	case c.play && c.speed != 1:
		return usagef("--play plays in real time: drop --speed")
	case c.to != "" && (c.speed != 1 || c.play):
		return usagef("--monitor feeds the monitor at the trace's real pace: drop --speed and --play")
	}
	if c.play && soundCard != nil {
		// before anything is read or played: without a card, exit 2 now
		if err := soundCard(); err != nil {
			return usagef("--play: %w", err)
		}
	}
	turns, err := c.read(cmd.Context(), args)
	if err != nil {
		return err
	}
	if c.to != "" {
		i := 0
		next := trace.DecoderFunc(func() (*pipeline.Turn, error) {
			if i == len(turns) {
				return nil, io.EOF
			}
			i++
			return turns[i-1], nil
		})
		return feedMonitor(cmd.Context(), c.env, next, c.to, c.token, "replay")
	}
	s, err := c.out.beginEngine(c.env, &c.engine)
	if err != nil {
		return err
	}
	live := c.env.stdout
	if c.out.output == "json" {
		live = c.env.stderr
	}
	r := &replayRun{cmd: c, session: s, live: live}
	if err := r.replay(cmd.Context(), turns); err != nil {
		s.abort()
		return err
	}
	if r.err != nil {
		s.abort()
		return r.err
	}
	fmt.Fprintln(live)
	return s.finish()
}

// read decodes every turn of the inputs (standard input when none).
func (c *replayCommand) read(ctx context.Context, args []string) ([]*pipeline.Turn, error) {
	if len(args) == 0 {
		args = []string{"-"}
	}
	var turns []*pipeline.Turn
	for _, name := range args {
		var err error
		if turns, err = c.readFile(ctx, turns, name); err != nil {
			return nil, err
		}
	}
	if len(turns) == 0 {
		return nil, usagef("replay: no turns in the input")
	}
	return turns, nil
}

// readFile appends the turns of one input to turns.
func (c *replayCommand) readFile(ctx context.Context, turns []*pipeline.Turn, name string) ([]*pipeline.Turn, error) {
	in, dec, err := openDecoder(c.env, name, c.format)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	err = in.each(ctx, dec, func(t *pipeline.Turn) error {
		if err := t.Validate(); err != nil {
			return usageError{fmt.Errorf("%s: %w", in.label, err)}
		}
		turns = append(turns, t)
		return nil
	})
	if err != nil {
		return nil, err
	}
	return turns, nil
}

// replayRun is one replay: the guard's events go to the live output, the
// report and the sinks.
type replayRun struct {
	cmd     *replayCommand
	session *session
	live    io.Writer
	clock   pipeline.Clock
	start   time.Time
	audio   *render.Live
	engine  tts.Engine
	mu      sync.Mutex
	err     error // first error of the event handler
}

func (r *replayRun) replay(ctx context.Context, turns []*pipeline.Turn) error {
	s := r.session
	cfg := s.cfg
	r.clock = pipeline.ScaledClock(pipeline.PreciseClock(nil, pipeline.DefaultSpin), r.cmd.speed)
	// the turns' starts are on this clock: a sink that tells a backend
	// maps them back to the wall clock
	s.flags.run.speed, s.flags.run.origin = r.cmd.speed, r.clock.Now()
	span, err := pipeline.ReplaySpan(turns)
	if err != nil {
		return usageError{err}
	}
	length := fmt.Sprintf("%.1f s of trace", span.Seconds())
	if r.cmd.speed != 1 {
		length += fmt.Sprintf(", %.1f s at %gx", span.Seconds()/r.cmd.speed, r.cmd.speed)
	}
	fmt.Fprintf(r.live, "replaying %d %s (%s); underruns print as they happen, Ctrl-C stops\n\n",
		len(turns), noun(len(turns), "turn", "turns"), length)
	fmt.Fprintf(r.live, "  %9s  %-12s  %s\n", "time", "turn", "event")
	var stop func()
	if r.cmd.play {
		engine, err := audioEngine(cfg, tts.EngineAuto)
		if err != nil {
			return err
		}
		r.engine, r.audio = engine, render.NewLive()
		if stop, err = openSpeaker(cfg.SampleRate, 50*time.Millisecond, r.audio); err != nil {
			return fmt.Errorf("--play: %w", err)
		}
	}
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{
		Clock: r.clock, Logger: s.log, OnEvent: r.event, WarnTolerance: r.cmd.warn,
	})
	if err != nil {
		return usageError{err}
	}
	r.start = r.clock.Now()
	err = pipeline.Replay(ctx, g, turns, pipeline.ReplayOptions{Clock: r.clock})
	interrupted := errors.Is(err, context.Canceled)
	if err != nil && !interrupted {
		g.Close()
		return usageError{err}
	}
	g.Close()
	if r.audio != nil {
		// let the speech already scheduled play out, as long as the sound
		// card keeps taking it
		last, moved := r.audio.Position(), time.Now()
		for !interrupted && ctx.Err() == nil && last < r.audio.End() && time.Since(moved) < time.Second {
			time.Sleep(20 * time.Millisecond)
			if p := r.audio.Position(); p != last {
				last, moved = p, time.Now()
			}
		}
		if last < r.audio.End() && ctx.Err() == nil {
			fmt.Fprintf(r.cmd.env.stderr, "underrun: --play: the sound card stopped taking audio\n")
		}
		r.audio.Close()
		closed := make(chan struct{})
		go func() { stop(); close(closed) }()
		select {
		case <-closed:
		case <-time.After(time.Second):
		}
	}
	if interrupted {
		fmt.Fprintf(r.live, "\nreplay interrupted: the report covers the turns so far\n")
	}
	return nil
}

func (r *replayRun) fail(err error) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err == nil {
		r.err = err
	}
}

// event handles one guard event (never concurrently).
func (r *replayRun) event(e pipeline.Event) {
	now := r.clock.Now().Sub(r.start)
	line := func(format string, args ...any) {
		fmt.Fprintf(r.live, "  %8.3fs  %-12s  %s\n", now.Seconds(), e.Turn, fmt.Sprintf(format, args...))
	}
	if text, ok := guardEventText(e); ok {
		line("%s", text)
		return
	}
	switch e.Kind {
	case pipeline.EventSpeech:
		if r.audio == nil {
			return
		}
		samples, err := render.Speech(context.Background(), r.session.cfg, r.engine, e.Speech, e.Text, e.Textless, e.Gaps)
		if err != nil {
			r.fail(fmt.Errorf("--play: %w", err))
			return
		}
		// the turn began e.Now ago; sample 0 of the stream is the start
		rate := float64(r.session.cfg.SampleRate)
		begin := now - e.Now
		r.audio.Add(int64(math.Round((begin+e.Speech.PlayStart).Seconds()*rate)), samples)
	case pipeline.EventTurn:
		line("%s", turnEndedText(e))
		// the event log has its live events already: report and sinks only
		r.session.report.Add(e.Record, e.Playout)
		for _, sink := range r.session.sinks {
			if err := sink.Add(e.Record, e.Playout); err != nil {
				r.fail(err)
			}
		}
	}
}

func noun(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}
