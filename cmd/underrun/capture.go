package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"strconv"
	"sync"
	"time"

	"github.com/schollz/progressbar/v3"
	"github.com/spf13/cobra"
	"golang.org/x/term"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
)

func init() { commands = append(commands, newCaptureCommand) }

const captureLong = `Drive an OpenAI-compatible server (vLLM, SGLang, TGI, llama.cpp, Ollama, a
hosted API) with streaming requests, record every chunk the moment its bytes
arrived (monotonic clock), and report what a voice assistant on that server
would sound like: the same report as analyze, over the captured turns.

On Linux, a chunk's arrival is the kernel's receive stamp of its bytes
(SO_TIMESTAMPNS), so a busy measuring machine, slow to get round to a read,
does not add its own delay to the ITLs it records; --clock read times each
read when it returns instead (the only clock elsewhere, and for HTTP/2).

Requests go to /v1/chat/completions (or /v1/completions with --api
completions) with "stream": true and "stream_options": {"include_usage":
true}. Prompts are a built-in set of voice-assistant questions, or
--prompts FILE: one per line, plain text or JSON ({"prompt": ...} or
{"messages": [...]}), asked in turn. --concurrency N keeps N requests in
flight (closed loop); --rate R starts R requests per second at Poisson
arrivals (open loop, at most --concurrency in flight when that is given too).
The run ends after --requests N (default: each prompt once) or --duration D.

-o FILE writes the native trace, each record as it arrives, so an
interrupted run keeps everything up to the moment it stopped; --sse FILE also
keeps the raw SSE bytes with their arrival times (analyze reads both). An
existing non-empty file is refused, and left alone, unless --force replaces
it. The
API key is read from the environment variable --api-key-env names
(OPENAI_API_KEY), never from the command line, and is never recorded.
Ctrl-C stops at once: requests in flight end as cancelled, the trace is
complete up to that moment, and the report covers what was captured.

Exit codes: 0 pass; 1 the report's verdict failed (an interruption, a
request that failed with no reply, TPOT or TTFT over an SLO given); 2 bad usage, or none of the first 5
requests got a response (the server is not there: the run stops at once
rather than fire at it for the whole --duration).`

const captureExample = `  underrun capture --url http://127.0.0.1:8000 --model meta-llama/Llama-3.1-8B-Instruct -o trace.jsonl
  underrun capture --url http://127.0.0.1:8000/v1 --model m --concurrency 32 --duration 2m -o load.jsonl
  underrun capture --url https://api.openai.com --model gpt-4o-mini --rate 2 --requests 50 --prompts prompts.jsonl
  underrun capture --url http://127.0.0.1:8000 --model m --sse raw.jsonl --report json > report.json
  # try it against the mock:
  underrun mock --listen 127.0.0.1:8000 &
  underrun capture --url http://127.0.0.1:8000 --model mock -o trace.jsonl`

type captureCommand struct {
	env    *env
	cmd    *cobra.Command
	engine engineFlags
	out    reportFlags
	llmFlags
	concurrency int
	rate        float64
	requests    int
	duration    time.Duration
	traceFile   string
	sseFile     string
	seed        uint64
	progress    string
}

func newCaptureCommand(e *env) *cobra.Command {
	c := &captureCommand{env: e}
	c.cmd = newCommand("capture --url URL --model MODEL", "Measure a live OpenAI-compatible server: stream requests, record every chunk, report",
		captureLong, captureExample, positional(0, 0, ""),
		func(cmd *cobra.Command, _ []string) error { return c.run(cmd) })
	fs := c.cmd.Flags()
	c.llmFlags.bind(fs, "the LLM server's `URL`: its root, its /v1, or the endpoint itself (required)")
	fs.IntVar(&c.concurrency, "concurrency", 0, "requests in flight (default 1; with --rate: no cap)")
	fs.Float64Var(&c.rate, "rate", 0, "start requests at Poisson arrivals of this many per second (0: back to back)")
	fs.IntVar(&c.requests, "requests", 0, "stop after this many requests (default: each prompt once, unless --duration)")
	fs.DurationVar(&c.duration, "duration", 0, "stop starting requests after this long")
	fs.StringVarP(&c.traceFile, "output", "o", "", "write the native trace to `FILE`, each record as it arrives")
	fs.StringVar(&c.sseFile, "sse", "", "also write the raw SSE capture (every read, with its arrival time) to `FILE`")
	fs.Uint64Var(&c.seed, "seed", 1, "seed of the Poisson arrivals")
	fs.StringVar(&c.progress, "progress", "auto", "progress bar on stderr: auto (when a terminal), always or never")
	c.engine.bind(fs)
	// what the listener hears is analyze's, from the trace -o records
	c.out.bindWithout(fs, wavFlagNames...)
	showFlags(c.cmd, "url", "model", "output", "concurrency", "rate", "requests", "duration", "prompts", "stack", "chunking", "tts-latency", "report")
	return c.cmd
}

// deadHost is how many requests in a row, before any got a response,
// that get none (refused, unreachable, timed out) stop a capture.
const deadHost = 5

// maxHeldTurns is how many finished turns capture holds back from the
// speech model until the load is over.
const maxHeldTurns = 4096

func (c *captureCommand) run(cmd *cobra.Command) error {
	if c.url == "" || c.model == "" {
		return usagef("capture needs --url and --model (see --help)")
	}
	api := openai.API(c.api)
	if api != openai.APIChat && api != openai.APICompletions {
		return usagef("--api: want chat or completions, got %q", c.api)
	}
	if _, err := openai.Endpoint(c.url, api); err != nil {
		return usagef("--url: %w", err)
	}
	if c.out.output != "text" && c.out.output != "json" {
		return usagef("--report: want text or json, got %q", c.out.output)
	}
	if c.progress != "auto" && c.progress != "always" && c.progress != "never" {
		return usagef("--progress: want auto, always or never, got %q", c.progress)
	}
	if c.clock != "kernel" && c.clock != "read" {
		return usagef("--clock: want kernel or read, got %q", c.clock)
	}
	if c.maxTokens < 0 {
		return usagef("--max-tokens must not be negative, got %d", c.maxTokens)
	}
	prompts, err := loadPrompts(c.prompts)
	if err != nil {
		return err
	}
	load := openai.Load{Concurrency: c.concurrency, Rate: c.rate, Requests: c.requests, Duration: c.duration, Seed: c.seed}
	if load.Requests == 0 && load.Duration == 0 {
		load.Requests = len(prompts)
	}
	if err := load.Validate(); err != nil {
		return usageError{err}
	}
	c.out.run = runInfo{command: "capture", llm: c.url}
	s, err := c.out.beginEngine(c.env, &c.engine)
	if err != nil {
		return err
	}
	key := os.Getenv(c.keyEnv)
	if key == "" && cmd.Flags().Changed("api-key-env") {
		s.abort()
		return usagef("--api-key-env: the environment variable %s is not set", c.keyEnv)
	}
	// the header says which clock timed the chunks
	source := "capture; clock: kernel receive stamps where the system gives them, else read time"
	if c.clock == "read" {
		source = "capture; clock: read time"
	}
	rec, err := createRecordings(c.env.stderr, c.traceFile, c.sseFile, source, c.out.force)
	if err != nil {
		s.abort()
		return err
	}
	if rec.trace != nil {
		// an interrupted run leaves a trace even before its first turn
		if err := rec.trace.WriteHeader(); err != nil {
			s.abort()
			rec.close()
			return err
		}
	}
	client := &openai.Client{BaseURL: c.url, APIKey: key, IdleTimeout: c.idle, Trace: rec.traceWriter(), Capture: rec.capture,
		ReadClock: c.clock == "read"}
	if !client.ReadClock {
		// the kernel stamps bytes a moment after the first socket asks:
		// ask before the first request, so that its chunks come stamped
		// (where none come, reads are timed as they return)
		_ = rxstamp.Warm(cmd.Context())
	}

	bar, barOut := c.progressBar(load)
	var (
		mu       sync.Mutex
		tally    = map[pipeline.Status]int{}
		firstErr string
		failure  error
		held     []*pipeline.Turn
		// a server that answers none of the first requests is not there:
		// the run stops rather than fire at it for the whole --duration
		answered   bool
		unanswered int
		dead       error
	)
	loadCtx, stopLoad := context.WithCancel(cmd.Context())
	defer stopLoad()
	analyze := func(t *pipeline.Turn) {
		if err := s.add(t); err != nil && failure == nil {
			failure = fmt.Errorf("turn %s: %w", t.ID, err)
		}
	}
	started := time.Now()
	runErr := load.Run(loadCtx, func(ctx context.Context, i int) {
		req := openai.Request{API: api, Model: c.model, Prompt: prompts[i%len(prompts)], MaxTokens: c.maxTokens, NoUsage: c.noUsage}
		st, err := client.Stream(ctx, "r"+strconv.Itoa(i+1), c.session, req)
		mu.Lock()
		defer mu.Unlock()
		// a recording that fails says so at once, and closing it fails
		// the run after the report; what was captured is still reported
		if err != nil && failure == nil && errors.Is(err, openai.ErrRequest) {
			failure = err
		}
		if st == nil {
			return
		}
		t := &st.Turn
		tally[t.Status]++
		if t.Status == pipeline.StatusError && firstErr == "" {
			firstErr = t.ID + ": " + t.Error
		}
		switch {
		case st.Stats.HTTPStatus != 0:
			answered = true
		case t.Status == pipeline.StatusError && !answered && dead == nil:
			if unanswered++; unanswered == deadHost {
				dead = usagef("capture: none of the first %d requests got a response (%s): is the server at %s up? Stopped.", deadHost, firstErr, c.url)
				stopLoad()
			}
		}
		if bar != nil && t.Status == pipeline.StatusError {
			bar.Describe(fmt.Sprintf("capture (%d failed)", tally[pipeline.StatusError]))
		}
		// The speech model runs after the load, not while other streams
		// are being timed (it would take the CPU they need); beyond
		// maxHeldTurns, the oldest turn is played at once.
		held = append(held, t)
		if len(held) > maxHeldTurns {
			analyze(held[0])
			held = held[1:]
		}
		if bar != nil {
			bar.Add(1)
		}
	})
	if bar != nil {
		if runErr != nil {
			bar.Exit() // interrupted: the bar stays where it was
		} else {
			bar.Finish()
		}
		// the spinner's goroutine redraws on its own ticker, after Exit
		// too: nothing of it reaches stderr from here on
		barOut.Close()
		fmt.Fprintln(c.env.stderr)
	}
	for _, t := range held {
		analyze(t)
	}
	recErr := rec.close()
	if failure == nil {
		failure = dead
	}
	if failure != nil {
		s.abort()
		return failure
	}
	n := tally[pipeline.StatusOK] + tally[pipeline.StatusError] + tally[pipeline.StatusCancelled] + tally[pipeline.StatusIncomplete]
	fmt.Fprintf(c.env.stderr, "capture: %d requests in %v: %d ok, %d failed, %d cancelled",
		n, time.Since(started).Round(time.Millisecond), tally[pipeline.StatusOK], tally[pipeline.StatusError], tally[pipeline.StatusCancelled])
	if runErr != nil {
		fmt.Fprintf(c.env.stderr, " (interrupted)")
	}
	fmt.Fprintln(c.env.stderr)
	if firstErr != "" {
		fmt.Fprintf(c.env.stderr, "capture: first failure: %s\n", firstErr)
	}
	if c.traceFile != "" && recErr == nil {
		fmt.Fprintf(c.env.stderr, "capture: trace written to %s\n", c.traceFile)
	}
	err = finishRecorded(s, recErr)
	if err == nil && tally[pipeline.StatusError] > 0 {
		return errFail
	}
	return err
}

// progressBar returns a progress bar on stderr and the writer it draws
// through, or nil when none is wanted. Close the writer before writing to
// stderr again.
func (c *captureCommand) progressBar(load openai.Load) (*progressbar.ProgressBar, *barWriter) {
	show := false
	switch c.progress {
	case "always":
		show = true
	case "auto":
		if f, ok := c.env.stderr.(*os.File); ok && term.IsTerminal(int(f.Fd())) {
			show = true
		}
	}
	if !show {
		return nil, nil
	}
	max := load.Requests
	if max == 0 {
		max = -1 // a spinner: the run ends by time
	}
	out := &barWriter{w: c.env.stderr}
	return progressbar.NewOptions(max,
		progressbar.OptionSetWriter(out),
		progressbar.OptionSetDescription("capture"),
		progressbar.OptionShowCount(),
		progressbar.OptionShowIts(),
		progressbar.OptionSetItsString("req"),
		progressbar.OptionThrottle(100*time.Millisecond),
		progressbar.OptionSetElapsedTime(true),
	), out
}

// barWriter is a progress bar's way to stderr. A spinner (a bar of
// unknown length) is redrawn by a goroutine of the bar's own, on a ticker
// that neither Finish nor Exit stops, so every write goes through a lock
// and, once Close has returned, none goes through at all: the command's
// own lines are never raced or erased by a late redraw.
type barWriter struct {
	mu     sync.Mutex
	w      io.Writer
	closed bool
}

// Write writes p to the underlying writer, or drops it once closed.
func (b *barWriter) Write(p []byte) (int, error) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.closed {
		return len(p), nil
	}
	return b.w.Write(p)
}

// Close waits for a write in progress and stops every later one.
func (b *barWriter) Close() error {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.closed = true
	return nil
}
