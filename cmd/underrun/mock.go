package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/internal/httpserver"
	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/scenarios"
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

The turns come from a recorded trace (--trace, any format analyze reads),
a scenario (--scenario, a built-in name or a YAML file: see
` + "`underrun scenarios`" + `), or the built-in default turn. Chunks
without recorded text stream filler words.`

const mockExample = `  underrun mock                                        # the default turn on 127.0.0.1:8000
  underrun mock --trace trace.jsonl --listen 127.0.0.1:9000
  underrun mock --scenario prefill-unchunked --turns 20
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
}

func newMockCommand(e *env) *cobra.Command {
	c := &mockCommand{env: e}
	cmd := &cobra.Command{
		Use:     "mock",
		Short:   "Serve an OpenAI-compatible API that streams the timing of a trace or scenario",
		Long:    mockLong,
		Example: mockExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8000", "address to serve on (port 0: any free port)")
	fs.StringVar(&c.traceArg, "trace", "", "stream the turns of this trace `FILE` (- for stdin)")
	fs.StringVar(&c.format, "format", "auto", "format of --trace: auto or one of "+trace.FormatNames())
	fs.StringVar(&c.scenario, "scenario", "", "stream the turns of a scenario: a built-in `NAME` or a YAML file")
	fs.IntVar(&c.turns, "turns", 0, "turns to take from --scenario (default: the scenario's count)")
	fs.StringVar(&c.model, "model", openai.DefaultMockModel, "model name /v1/models reports (requests may name any)")
	fs.StringVar(&c.events, "events", "", "log one zerolog JSON event per request to `FILE` (- for stderr)")
	bindForce(fs, &c.force)
	bindAllowHost(fs, &c.allowHosts, "")
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
		for {
			t, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				return nil, "", usageError{err}
			}
			if err := t.Validate(); err != nil {
				return nil, "", usageError{fmt.Errorf("%s: %w", label, err)}
			}
			turns = append(turns, t)
		}
		if len(turns) == 0 {
			return nil, "", usagef("--trace %s: no turns to stream", label)
		}
		return turns, label, nil
	case c.scenario != "":
		s, err := scenarios.Open(c.scenario)
		if err != nil {
			return nil, "", usageError{err}
		}
		n := c.turns
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
	return []*pipeline.Turn{scenarios.DefaultTurn()}, "the built-in default turn", nil
}

func (c *mockCommand) run(ctx context.Context) error {
	if c.turns < 0 {
		return usagef("--turns must not be negative, got %d", c.turns)
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
		f, err := openRecording("--events", c.events, c.force)
		if err != nil {
			return err
		}
		defer f.Close()
		log = zerolog.New(f).With().Timestamp().Logger()
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		return usagef("--listen: %w", err)
	}
	m := &openai.Mock{Turns: turns, Model: c.model, Logger: log}
	fmt.Fprintf(c.env.stderr, "mock: streaming %d turn(s) from %s at http://%s/v1 (model %s); Ctrl-C to stop\n",
		len(turns), from, ln.Addr(), c.model)
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
// besides loopback ones (see internal/httpserver); more says what else
// holds.
func bindAllowHost(fs *pflag.FlagSet, hosts *[]string, more string) {
	fs.StringSliceVar(hosts, "allow-host", nil, "`HOST` name to answer besides localhost, loopback addresses and the address listened on (repeatable; * for any)"+more+"; other names are refused, so that no web page can reach this server by DNS rebinding")
}
