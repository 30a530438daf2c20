package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/httpserver"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/scenarios"
	"github.com/speech-pipeline/underrun/tts/stream"
)

func init() { commands = append(commands, newMockCommand) }

const mockLong = `Serve an OpenAI-compatible API that streams chosen timings, so a voice app
can be tested against exactly the stalls you pick: point it at the mock
instead of the real server.

Each request to /v1/chat/completions or /v1/completions gets the next turn
(round robin; the header X-Underrun-Turn: ID picks one by its ID) and
streams it chunk by chunk, each at its recorded time since the request
arrived, in vLLM's chunk format: a role chunk, content (reasoning_content
for reasoning) deltas, a finish chunk, the usage chunk when
stream_options.include_usage asks for it, and [DONE]. A turn that ended in
an error streams an error event; one cut short drops the connection;
max_tokens cuts a turn with finish reason "length". Requests without
"stream": true get the whole answer when its last chunk would have come.
GET /v1/models and /health answer too.

A turn with tool calls (a trace's tool records, a scenario's tool_calls)
streams as a model that calls tools, to a client that declares "tools": the
text up to the call, then the call (named as the trace names it when the
client declared that tool, else the client's first; arguments {}) with
finish reason "tool_calls", at the call's time; the request that carries
its result (a "tool" message with the call's id) gets the rest of the turn,
timed from the call's end, as the recorded stream resumed. A client that
declares no tools gets the whole turn in one answer, the call's pause in it.

With --tts it also serves OpenAI's speech API, POST /v1/audio/speech
({"input", "response_format": "pcm" or "wav" (the default here; OpenAI's
is mp3, which the mock does not make), "stream_format": "sse"}): espeak-ng
speaks each input and the audio goes out as espeak-ng makes it, pcm at
24 kHz (resampled from espeak-ng's 22,050 Hz), wav at espeak-ng's rate with
the sizes of a stream of unknown length; --tts-latency holds every answer
that long before its first byte. "speed" is checked, not applied; a
synthesis that fails mid-stream cuts the connection, as a server does.

The turns come from a recorded trace (--trace, any format analyze reads),
a scenario (--scenario, a built-in name or a YAML file: see
` + "`underrun scenarios`" + `), or the built-in default turn. Chunks
without recorded text stream filler words.`

const mockExample = `  underrun mock                                        # the default turn on 127.0.0.1:8000
  underrun mock --trace trace.jsonl --listen 127.0.0.1:9000
  underrun mock --scenario prefill-unchunked --turns 20
  underrun mock --tts --tts-latency 200ms --scenario prefill-unchunked   # an LLM and a TTS server
  curl -N http://127.0.0.1:8000/v1/audio/speech -d '{"input":"Hello there.","response_format":"wav"}' > hello.wav
  curl -N http://127.0.0.1:8000/v1/chat/completions -d '{"model":"m","stream":true,"messages":[{"role":"user","content":"hi"}]}'`

type mockCommand struct {
	env      *env
	listen   string
	traceArg string
	format   string
	scenario string
	turns    int
	model    string
	events   string
	force    bool
	// allowHosts are the Host names served besides loopback ones
	allowHosts []string

	tts         bool
	ttsLatency  time.Duration
	espeakVoice string
	speed       int
}

func newMockCommand(e *env) *cobra.Command {
	c := &mockCommand{env: e}
	cmd := newCommand("mock", "Serve an OpenAI-compatible API that streams the timing of a trace or scenario",
		mockLong, mockExample, positional(0, 0, ""),
		func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context()) })
	fs := cmd.Flags()
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8000", "`HOST:PORT` to serve on (port 0: any free port)")
	fs.StringVar(&c.traceArg, "trace", "", "stream the turns of this trace `FILE` (- for stdin)")
	bindFormat(fs, &c.format, "--trace's")
	fs.StringVar(&c.scenario, "scenario", "", "stream the turns of a `SCENARIO`: a built-in name or a YAML file")
	fs.IntVar(&c.turns, "turns", 0, "turns to take from --scenario (default: the scenario's count)")
	fs.StringVar(&c.model, "model", openai.DefaultMockModel, "`MODEL` name /v1/models reports (requests may name any)")
	fs.StringVar(&c.events, "events", "", "log one zerolog JSON event per request to `FILE` (- for stderr)")
	bindForce(fs, &c.force)
	bindAllowHost(fs, &c.allowHosts, "")
	fs.BoolVar(&c.tts, "tts", false, "also serve /v1/audio/speech: espeak-ng speaks each request, streamed as it is made")
	fs.DurationVar(&c.ttsLatency, "tts-latency", 0, "with --tts: hold every speech answer this long before its first byte")
	fs.StringVar(&c.espeakVoice, "espeak-voice", "", "with --tts: espeak-ng `VOICE` (-v), e.g. en-us")
	fs.IntVar(&c.speed, "espeak-wpm", 0, "with --tts: espeak-ng speaking rate (-s) in words per minute (default: its own, 175)")
	renamed(e, fs, "speed", "", "espeak-wpm")
	showFlags(cmd, "listen", "trace", "scenario", "tts", "tts-latency", "model", "events")
	return cmd
}

// loadTurns reads the turns to serve.
func (c *mockCommand) loadTurns(ctx context.Context) ([]*pipeline.Turn, string, error) {
	switch {
	case c.traceArg != "" && c.scenario != "":
		return nil, "", usagef("give --trace or --scenario, not both")
	case c.traceArg != "":
		in, err := openInput(c.env, c.traceArg)
		if err != nil {
			return nil, "", usagef("--trace: %w", err)
		}
		defer in.Close()
		dec, err := in.decoder(c.format)
		if err != nil {
			return nil, "", err
		}
		label := in.label
		var turns []*pipeline.Turn
		err = in.each(ctx, dec, func(t *pipeline.Turn) error {
			if err := t.Validate(); err != nil {
				return usageError{fmt.Errorf("%s: %w", label, err)}
			}
			turns = append(turns, t)
			return nil
		})
		if err != nil {
			return nil, "", err
		}
		if len(turns) == 0 {
			return nil, "", usagef("--trace %s: no turns to stream", label)
		}
		return turns, label, nil
	case c.scenario != "":
		return scenarioTurns(ctx, c.scenario, c.turns)
	}
	return []*pipeline.Turn{scenarios.DefaultTurn()}, "the built-in default turn", nil
}

func (c *mockCommand) run(ctx context.Context) (err error) {
	switch {
	case c.turns < 0:
		return usagef("--turns must not be negative, got %d", c.turns)
	case !c.tts && (c.ttsLatency != 0 || c.espeakVoice != "" || c.speed != 0):
		return usagef("--tts-latency, --espeak-voice and --espeak-wpm need --tts")
	case c.ttsLatency < 0 || c.speed < 0:
		return usagef("--tts-latency and --espeak-wpm must not be negative")
	}
	var speech stream.Synthesizer
	if c.tts {
		e, err := stream.NewEspeak()
		if err != nil {
			return usagef("--tts: %w (install the espeak-ng package)", err)
		}
		e.Engine.Voice, e.Engine.Speed = c.espeakVoice, c.speed
		speech = e
	}
	turns, from, err := c.loadTurns(ctx)
	if err != nil {
		return err
	}
	log := zerolog.Nop()
	switch c.events {
	case "":
	case "-":
		log = zerolog.New(c.env.stderr).With().Timestamp().Logger()
	default:
		f, ferr := openRecording(c.env.stderr, "--events", c.events, c.force)
		if ferr != nil {
			return ferr
		}
		defer func() { err = errors.Join(err, f.Close()) }() // a failed write fails the run
		log = zerolog.New(f).With().Timestamp().Logger()
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return usagef("--listen: %w", err)
	}
	m := &openai.Mock{Turns: turns, Model: c.model, Logger: log, Speech: speech, SpeechLatency: c.ttsLatency}
	fmt.Fprintf(c.env.stderr, "mock: streaming %d turn(s) from %s at http://%s/v1 (model %s); Ctrl-C to stop\n",
		len(turns), from, ln.Addr(), c.model)
	if speech != nil {
		fmt.Fprintf(c.env.stderr, "mock: espeak-ng speaks at http://%s%s (pcm at %d Hz, wav, stream_format sse), %v before the first byte\n",
			ln.Addr(), openai.SpeechPath, openai.DefaultSpeechRate, c.ttsLatency)
	}
	return serve(ctx, ln, m, c.allowHosts)
}

// serve serves h on ln until ctx is cancelled, then shuts down, giving
// open streams a moment to finish. Requests for a Host other than a
// loopback name or one of hosts (--allow-host) are refused.
func serve(ctx context.Context, ln net.Listener, h http.Handler, allowHosts []string) error {
	hosts, err := httpserver.AllowHosts(allowHosts)
	if err != nil {
		return usagef("--allow-host: %w", err)
	}
	srv := httpserver.New(hosts.Check(h, "--allow-host"))
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ln) }()
	select {
	case err := <-done:
		return err
	case <-ctx.Done():
	}
	sctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		srv.Close()
	}
	if err := <-done; err != nil && !errors.Is(err, http.ErrServerClosed) {
		return err
	}
	return nil
}

// bindAllowHost binds --allow-host, the Host names a server answers
// besides loopback ones (see pipeline/httpserver); more says what else
// holds.
func bindAllowHost(fs *pflag.FlagSet, hosts *[]string, more string) {
	fs.StringSliceVar(hosts, "allow-host", nil, "`HOST` name to answer besides loopback ones and the address listened on (repeatable; * for any)"+more+"; against DNS rebinding, others are refused")
}

// scenarioTurns returns n turns of the scenario name (a built-in name or
// a YAML file; n 0: the scenario's own count) and a label for them.
func scenarioTurns(ctx context.Context, name string, n int) ([]*pipeline.Turn, string, error) {
	s, err := scenarios.Open(name)
	if err != nil {
		return nil, "", usageError{err}
	}
	if n <= 0 {
		n = max(s.Turns, 1)
	}
	var turns []*pipeline.Turn
	err = s.EachTurn(ctx, n, func(t *pipeline.Turn) error { turns = append(turns, t); return nil })
	if err != nil {
		return nil, "", err
	}
	return turns, "scenario " + s.Name, nil
}
