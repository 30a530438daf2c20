package main

import (
	"context"
	"fmt"
	"net"
	"sync"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
)

func init() { commands = append(commands, newProxyCommand) }

const proxyLong = `Put underrun in front of any OpenAI-compatible server to guard live traffic
without changing the app or the server: point the app at the proxy instead.

Every byte passes through unchanged, each write flushed at once; requests
other than streaming completions (and any other route) pass untouched.
Each streaming /v1/chat/completions or /v1/completions response is also
played, as it streams, through the speech model in wall-clock time: the
moment a listener's audio would run dry an "underrun_started" event is
logged, then the underrun itself (the same as analyze would report) and a
turn summary; --warn-tolerance logs a "stall_warning" when the stream is
that close to starving the player. Events are zerolog JSON lines, written to
--events FILE (- for stderr); without it, stderr gets one line a turn (and
the stall warnings). The session of a turn is taken from the X-Session-Id
request header. Headers, Authorization among them, are never logged or
recorded.

A stream that ends in tool calls (finish_reason "tool_calls") keeps its turn
open for --tool-wait (2 minutes), for the request that carries their results (its
last message a "tool" message naming one of the calls): that request's
stream goes on with the same turn, so the silence between is the tool
call's, never an underrun, and the recording holds one turn with its tool
record, as analyze reads it. The --sse capture keeps each stream's bytes,
its request record naming the turn it resumes, and reads back as the same
joined turns.

-o FILE records the native trace of every stream as it passes; --sse FILE
the raw SSE bytes with their arrival times. These recordings and an --events
FILE are written as they go; an existing non-empty file is refused, and left
alone, unless --force replaces it. On Ctrl-C the proxy stops and
prints the report over every stream it saw (--report json for JSON).

Exit codes: 0 pass; 1 the report's verdict failed; 2 bad usage.`

const proxyExample = `  underrun proxy --url http://127.0.0.1:8000      # listen on 127.0.0.1:8080
  underrun proxy --listen 127.0.0.1:9000 --url https://api.openai.com -o live.jsonl
  underrun proxy --url http://gpu-box:8000 --chunking sentence --tts-latency 250ms --warn-tolerance 100ms
  # then, in the app: OPENAI_BASE_URL=http://127.0.0.1:8080/v1`

type proxyCommand struct {
	env       *env
	engine    engineFlags
	out       reportFlags
	listen    string
	upstream  string
	traceFile string
	sseFile   string
	warn      time.Duration
	toolWait  time.Duration
	session   string
	// allowHosts are the Host names served besides loopback ones
	allowHosts []string
}

func newProxyCommand(e *env) *cobra.Command {
	c := &proxyCommand{env: e}
	cmd := newCommand("proxy --url URL", "Guard live traffic: a transparent proxy that plays every stream as it passes",
		proxyLong, proxyExample, positional(0, 0, ""),
		func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context()) })
	fs := cmd.Flags()
	fs.StringVar(&c.listen, "listen", "127.0.0.1:8080", "`HOST:PORT` to listen on (loopback by default)")
	fs.StringVar(&c.upstream, "url", "", "the LLM server's `URL` to forward to, e.g. http://127.0.0.1:8000 (required)")
	renamed(e, fs, "upstream", "", "url")
	fs.StringVarP(&c.traceFile, "output", "o", "", "record the native trace of every stream to `FILE`")
	fs.StringVar(&c.sseFile, "sse", "", "record the raw SSE bytes of every stream, with arrival times, to `FILE`")
	fs.DurationVar(&c.warn, "warn-tolerance", 0, "log a stall_warning when the stall tolerance falls below this (0: off)")
	fs.StringVar(&c.session, "session-header", openai.DefaultSessionHeader, "request `HEADER` that names a turn's session")
	fs.DurationVar(&c.toolWait, "tool-wait", openai.DefaultToolWait, "how long a stream that ended in tool calls waits for the request with their results")
	bindAllowHost(fs, &c.allowHosts, "")
	c.engine.bind(fs)
	c.out.bindWithout(fs, wavFlagNames...)
	showFlags(cmd, "url", "listen", "output", "sse", "events", "warn-tolerance", "stack", "chunking", "tts-latency", "report")
	c.out.live = true // its event log is written as it goes
	return cmd
}

// say writes the proxy's own line for a guard event on stderr: one a turn,
// and the stall warnings --warn-tolerance asks for; the events themselves
// go to the --events log.
func (c *proxyCommand) say(e pipeline.Event) {
	text := ""
	switch e.Kind {
	case pipeline.EventTurn:
		text = turnEndedText(e)
	case pipeline.EventStall:
		text, _ = guardEventText(e)
	default:
		return
	}
	who := e.Turn
	if e.Session != "" {
		who += " (session " + e.Session + ")"
	}
	fmt.Fprintf(c.env.stderr, "proxy: %s: %s\n", who, text)
}

func (c *proxyCommand) run(ctx context.Context) error {
	if c.upstream == "" {
		return usagef("proxy needs --url URL (see --help)")
	}
	if c.out.output != "text" && c.out.output != "json" {
		return usagef("--report: want text or json, got %q", c.out.output)
	}
	if c.warn < 0 {
		return usagef("--warn-tolerance must not be negative, got %v", c.warn)
	}
	if c.toolWait <= 0 {
		return usagef("--tool-wait must be positive, got %v", c.toolWait)
	}
	p, err := openai.NewProxy(c.upstream, nil)
	if err != nil {
		return usagef("--url: %w", err)
	}
	c.out.run = runInfo{command: "proxy", live: true, llm: c.upstream}
	s, err := c.out.beginEngine(c.env, &c.engine)
	if err != nil {
		return err
	}
	// the guard logs the live events, and its playout of each turn, which
	// is the one analyze would play of the recorded turn, goes into the
	// report: a turn is played once, not again at its end (a stream's
	// memory is the guard's engine and its record, not two of each)
	events := s.log
	s.log = zerolog.Nop()
	var mu sync.Mutex
	var addErr error
	closed, stopping := false, false
	fromGuard := map[string]bool{} // turns the report has from the guard's playout
	account := func(t *pipeline.Turn, p *pipeline.Playout) {
		var err error
		switch {
		case p == nil || pipeline.NotSpeech(t):
			err = s.add(t) // played again, as analyze plays text no voice reads
		default:
			err = s.played(t, p)
		}
		if err != nil && addErr == nil {
			addErr = fmt.Errorf("turn %s: %w", t.ID, err)
		}
	}
	onEvent := func(e pipeline.Event) {
		c.say(e)
		if e.Kind != pipeline.EventTurn {
			return
		}
		mu.Lock()
		defer mu.Unlock()
		if stopping {
			return // a stream cut at shutdown, after the report
		}
		fromGuard[e.Turn] = true
		account(e.Record, e.Playout)
	}
	g, err := pipeline.NewGuard(s.cfg, pipeline.GuardOptions{Logger: events, WarnTolerance: c.warn, OnEvent: onEvent})
	if err != nil {
		s.abort()
		return usageError{err}
	}
	rec, err := createRecordings(c.env.stderr, c.traceFile, c.sseFile, "proxy", c.out.force)
	if err != nil {
		s.abort()
		return err
	}
	defer rec.close()
	p.Trace, p.Capture = rec.traceWriter(), rec.capture
	p.Guard, p.Logger, p.SessionHeader, p.ToolWait = g, events, c.session, c.toolWait
	p.OnTurn = func(t *pipeline.Turn) {
		mu.Lock()
		defer mu.Unlock()
		if fromGuard[t.ID] {
			delete(fromGuard, t.ID)
			return
		}
		if closed {
			return // a stream cut at shutdown, after the report
		}
		account(t, nil) // a turn the guard did not take
	}
	ln, err := net.Listen("tcp", c.listen)
	if err != nil {
		s.abort()
		return usagef("--listen: %w", err)
	}
	fmt.Fprintf(c.env.stderr, "proxy: http://%s -> %s; point your app at http://%s/v1; Ctrl-C to stop and report\n",
		ln.Addr(), c.upstream, ln.Addr())
	serveErr := serve(ctx, ln, p, c.allowHosts)
	p.Close() // the turns waiting for tool results end now
	mu.Lock()
	stopping = true
	mu.Unlock()
	g.Close()
	mu.Lock()
	defer mu.Unlock()
	closed = true
	if serveErr != nil || addErr != nil {
		s.abort()
		if serveErr != nil {
			return serveErr
		}
		return addErr
	}
	// a recording that failed said so at once; the streams went on, the
	// report is printed, and the run fails after it
	return finishRecorded(s, rec.close())
}
