package main

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/prometheus/procfs"
	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/cmd/underrun/internal/outfile"
	"github.com/speech-pipeline/underrun/pipeline/httpserver"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/monitor/prometheus"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

func init() { commands = append(commands, newMonitorCommand) }

const defaultMonitorListen = "127.0.0.1:8765"

// defaultMonitorWarn is the monitor's stall-warning threshold: the live
// page shows a session as "low" this long before it would go silent.
const defaultMonitorWarn = 100 * time.Millisecond

const monitorLong = `Watch live voice sessions. A voice app opens one websocket per session on
/ingest and sends JSON messages as its LLM streams (turn_start, chunk,
turn_end, barge_in, and optional tts facts with real audio durations; the
protocol is in the README, section "Live monitor"). Every session is guarded
in wall-clock time by the speech model: the moment a listener's audio would
run dry an "underrun_started" event is raised, then the underrun itself, stall
warnings (--warn-tolerance before the buffer would drain) and a summary per
turn. A barge-in ends the turn
without counting the cut as an underrun.

Events go to the event log (zerolog JSON lines, --events, stderr by default)
and to every websocket subscribed on /events. The live page on / lists the
sessions, those about to go silent first, with a chart of the selected
session's buffered audio, token arrivals and gaps. /metrics serves Prometheus
histograms (ITL, TPOT, TTFT, time to first audio, underrun length), counters
(turns, glitches, interruptions, barge-ins) and the live-session gauge; a
Grafana dashboard is in pipeline/monitor/grafana/underrun.json.

The monitor listens on loopback unless --token is given; with a token every
request needs "Authorization: Bearer TOKEN" (or ?token=TOKEN, as the page
uses). Browser origins other than the monitor's own need --origin. Messages
over --max-message close the connection; messages over --rate are refused
with an error message; a subscriber or page that reads too slowly is dropped.
--record FILE writes everything accepted as a native trace, each record
within 2 ms (a monitor killed outright loses at most the last 2 ms); turns
are named SESSION/TURN, and a turn id a session uses again after its turn
ended is recorded as SESSION/TURN#2, #3, ...; SIGTERM or Ctrl-C closes the
sessions, ends their open turns as incomplete and writes the rest of the
recording. The recording and the --events file are written in place as they
go: an existing non-empty file is refused, and left alone, unless --force
replaces it.

A garbage collection can hold up the drain timers for milliseconds on a busy
machine, so the monitor collects only when its heap nears --gc-memory MiB
(Go's GOGC=off with a memory limit) rather than whenever the heap has doubled:
at 2,000 busy sessions that is about every 30 s instead of every 3 s.
--gc-memory 0 keeps Go's default pacing; GOGC or GOMEMLIMIT in the
environment take precedence over the flag.

Exit codes: 0 clean shutdown; 2 bad usage, or the monitor could not run.`

const monitorExample = `  underrun monitor                                   # http://127.0.0.1:8765/
  underrun monitor --record live.jsonl --warn-tolerance 150ms --chunking sentence
  underrun monitor --listen 0.0.0.0:8765 --token "$TOKEN" --origin https://ops.example.com
  underrun monitor feed live.jsonl --to http://127.0.0.1:8765   # replay a recording into it
  underrun monitor rules > underrun.rules.yml                  # Prometheus rules for a fleet
  underrun monitor load --sessions 500 --duration 5s           # measure ingestion`

type monitorCommand struct {
	env         *env
	engine      engineFlags
	listen      []string
	token       string
	origins     []string
	record      string
	events      string
	force       bool
	warn        time.Duration
	maxMessage  int64
	rate        float64
	burst       int
	queue       int
	maxSessions int
	maxSubs     int
	maxPages    int
	allowHosts  []string
	grace       time.Duration
	gcMemory    int
	loadModel   bool
	otlp        otlpFlag
}

// defaultGCMemory is the heap, in MiB, the monitor lets grow between
// garbage collections.
const defaultGCMemory = 512

func newMonitorCommand(e *env) *cobra.Command {
	c := &monitorCommand{env: e}
	cmd := &cobra.Command{
		Use:     "monitor",
		Short:   "Watch live voice sessions: websocket ingest, live page, Prometheus metrics",
		Long:    monitorLong,
		Example: monitorExample,
		Args:    cobra.NoArgs,
		RunE:    func(cmd *cobra.Command, _ []string) error { return c.run(cmd.Context()) },
	}
	fs := cmd.Flags()
	c.engine.bind(fs)
	fs.StringArrayVar(&c.listen, "listen", []string{defaultMonitorListen}, "`HOST:PORT` to listen on, or unix:PATH for a Unix socket (repeatable: one monitor on each); anything but loopback or a socket needs --token")
	fs.StringVar(&c.token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "bearer token every request must carry (default $UNDERRUN_MONITOR_TOKEN)")
	fs.StringSliceVar(&c.origins, "origin", nil, "browser `ORIGIN` allowed besides the monitor's own (repeatable; * for any)")
	fs.StringVar(&c.record, "record", "", "write everything received to `FILE` as a native trace")
	fs.StringVar(&c.events, "events", "-", "write the zerolog JSON event log to `FILE` (- for stderr, \"\" for none)")
	bindForce(fs, &c.force)
	fs.DurationVar(&c.warn, "warn-tolerance", defaultMonitorWarn, "raise a stall_warning when a stream is this close to starving the player (0: none)")
	fs.Int64Var(&c.maxMessage, "max-message", monitor.DefaultMaxMessage, "largest ingest message in `BYTES`")
	fs.Float64Var(&c.rate, "rate", monitor.DefaultRate, "messages per second each ingest connection may send")
	fs.IntVar(&c.burst, "burst", monitor.DefaultBurst, "messages an ingest connection may send at once above --rate")
	fs.IntVar(&c.queue, "queue", monitor.DefaultQueue, "messages a subscriber or page may fall behind before it is dropped")
	fs.IntVar(&c.maxSessions, "max-sessions", monitor.DefaultMaxSessions, "ingest connections open at once")
	fs.IntVar(&c.maxSubs, "max-subscribers", monitor.DefaultMaxSubscribers, "/events subscribers open at once")
	fs.IntVar(&c.maxPages, "max-pages", monitor.DefaultMaxPages, "live pages (/live) open at once")
	bindAllowHost(fs, &c.allowHosts, "; with --token every host is answered")
	fs.DurationVar(&c.grace, "grace", 5*time.Second, "time sessions get to close on shutdown")
	fs.IntVar(&c.gcMemory, "gc-memory", defaultGCMemory, "collect garbage only when the heap nears this many `MiB` (0: Go's default pacing)")
	fs.BoolVar(&c.loadModel, "load-model", false, "speak as monitor load expects (each token 50 ms, token chunking, no synthesizer latency), in place of the speech flags")
	c.otlp.bind(fs)
	cmd.AddCommand(newMonitorFeedCommand(e), newMonitorLoadCommand(e), newMonitorRulesCommand(e), newMonitorEchoCommand(e), newMonitorSinkCommand(e), newMonitorWatchCommand(e))
	return cmd
}

// paceGC makes the runtime collect garbage only when the heap nears mib
// MiB, unless mib is 0 or the environment (getenv) sets GOGC or
// GOMEMLIMIT, which the runtime has read already.
func paceGC(mib int, getenv func(string) string) {
	if mib == 0 || getenv("GOGC") != "" || getenv("GOMEMLIMIT") != "" {
		return
	}
	debug.SetMemoryLimit(int64(mib) << 20)
	debug.SetGCPercent(-1)
}

// asyncWriter hands writes to a goroutine through a bounded queue; when
// the queue is full a write is dropped (and counted) rather than waited
// for.
type asyncWriter struct {
	mu      sync.Mutex
	ch      chan []byte
	closed  bool
	dropped int
	done    chan struct{}
}

func newAsyncWriter(w io.Writer, queue int) *asyncWriter {
	a := &asyncWriter{ch: make(chan []byte, queue), done: make(chan struct{})}
	go func() {
		defer close(a.done)
		for b := range a.ch {
			w.Write(b)
		}
	}()
	return a
}

// Write queues a copy of p.
func (a *asyncWriter) Write(p []byte) (int, error) {
	b := append([]byte(nil), p...)
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.closed {
		return 0, os.ErrClosed
	}
	select {
	case a.ch <- b:
	default:
		a.dropped++
	}
	return len(p), nil
}

// Close writes out what is queued and returns how many writes were dropped.
func (a *asyncWriter) Close() int {
	a.mu.Lock()
	if !a.closed {
		a.closed = true
		close(a.ch)
	}
	n := a.dropped
	a.mu.Unlock()
	<-a.done
	return n
}

// listenMonitor is monitor.Listen, first clearing a stale socket at a
// unix:PATH (one left by a monitor that died; anything else there is
// refused).
func listenMonitor(addr string) (net.Listener, error) {
	if p := monitor.SocketPath(addr); p != "" {
		if err := outfile.ClearStaleSocket(p); err != nil {
			return nil, err
		}
	}
	return monitor.Listen(addr)
}

// checkListen refuses an address other than loopback without a token. A
// Unix socket (unix:PATH) is local: its file's permissions say who may
// connect.
func checkListen(addr, token string) error {
	if monitor.IsUnix(addr) {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return usagef("--listen %q: %w", addr, err)
	}
	if token != "" {
		return nil
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return usagef("--listen %q is not a loopback address: give --token (or $UNDERRUN_MONITOR_TOKEN) so that only your clients can feed and watch it", addr)
}

func (c *monitorCommand) run(ctx context.Context) error {
	cfg, err := c.engine.config()
	if err != nil {
		return err
	}
	if c.loadModel {
		cfg = monitor.LoadConfig()
	}
	for _, addr := range c.listen {
		if err := checkListen(addr, c.token); err != nil {
			return err
		}
	}
	opts := monitor.Options{
		Config: cfg, WarnTolerance: c.warn, Token: c.token, Origins: c.origins,
		MaxMessage: c.maxMessage, Rate: c.rate, Burst: c.burst, Queue: c.queue, MaxSessions: c.maxSessions,
		MaxSubscribers: c.maxSubs, MaxPages: c.maxPages, AllowHosts: c.allowHosts,
		Logger: zerolog.Nop(),
	}
	switch {
	case c.maxMessage <= 0, c.rate <= 0, c.burst <= 0, c.queue <= 0, c.maxSessions <= 0, c.maxSubs <= 0, c.maxPages <= 0:
		return usagef("--max-message, --rate, --burst, --queue, --max-sessions, --max-subscribers and --max-pages must be positive")
	case c.warn < 0:
		return usagef("--warn-tolerance must not be negative, got %v", c.warn)
	case c.gcMemory < 0:
		return usagef("--gc-memory must not be negative, got %d", c.gcMemory)
	}
	paceGC(c.gcMemory, os.Getenv)
	stopOTLP, err := c.otlp.attach(c.env, &opts)
	if err != nil {
		return err
	}
	defer stopOTLP()
	var closers []io.Closer
	defer func() {
		for _, f := range closers {
			f.Close()
		}
	}()
	// the event log is written by its own goroutine: a slow terminal or
	// disk must not hold up the guards
	var logOut io.Writer
	switch c.events {
	case "":
	case "-":
		logOut = c.env.stderr
	default:
		f, err := openRecording("--events", c.events, c.force)
		if err != nil {
			return err
		}
		closers = append(closers, f)
		logOut = f
	}
	var events *asyncWriter
	if logOut != nil {
		events = newAsyncWriter(logOut, 1<<14)
		opts.Logger = zerolog.New(events).With().Timestamp().Logger()
		defer func() {
			if n := events.Close(); n > 0 {
				fmt.Fprintf(c.env.stderr, "underrun monitor: the event log fell behind: %d events dropped\n", n)
			}
		}()
	}
	var rec *os.File
	if c.record != "" {
		if rec, err = openRecording("--record", c.record, c.force); err != nil {
			return err
		}
		opts.Record = rec
	}
	srv, err := monitor.New(opts)
	if err != nil {
		if rec != nil {
			rec.Close()
		}
		return usageError{err}
	}
	var lns []net.Listener
	for _, addr := range c.listen {
		ln, err := listenMonitor(addr)
		if err != nil {
			for _, ln := range lns {
				ln.Close()
			}
			srv.Shutdown(context.Background())
			if rec != nil {
				rec.Close()
			}
			return usagef("--listen: %w", err)
		}
		lns = append(lns, ln)
	}
	for _, ln := range lns {
		if base := monitor.BaseURL(ln); monitor.IsUnix(base) {
			fmt.Fprintf(c.env.stderr, "underrun monitor on %s  (over the socket: ingest ws://localhost/ingest, events ws://localhost/events, metrics http://localhost/metrics)\n", base)
		} else {
			addr := ln.Addr().String()
			fmt.Fprintf(c.env.stderr, "underrun monitor on http://%s/  (ingest ws://%s/ingest, events ws://%s/events, metrics http://%s/metrics)\n", addr, addr, addr, addr)
		}
	}
	err = srv.Serve(ctx, monitor.Merge(lns...), c.grace)
	if rec != nil {
		if cerr := rec.Close(); err == nil && cerr != nil {
			err = fmt.Errorf("--record: %w", cerr)
		}
	}
	if err != nil {
		return err
	}
	st := srv.Stats()
	fmt.Fprintf(c.env.stderr, "underrun monitor: stopped; %d messages accepted, %d refused\n", st.Received, st.Refused)
	return nil
}

const monitorFeedLong = `Play a recorded trace into a running monitor at its real pace: one ingest
connection per session of the trace, each turn started at its recorded offset
from the first (turns without a start time follow each other), each chunk sent
at its recorded time with t_ms, so the monitor raises the same underruns that
analyze reports. A turn named SESSION/TURN (as monitor --record names them)
is sent as TURN on SESSION. Any trace format analyze reads is accepted.

--to takes several monitors, separated by commas: each session goes to one
of them, picked by a stable hash of the session name (jump consistent hash
of its FNV-1a 64-bit hash, as monitor.Shard computes it), so the same name
always reaches the same monitor and a fleet grown by one monitor moves only
the sessions that go to the new one. Keep the list in the same order.

Exit codes: 0 every message sent; 2 bad usage, or a monitor could not be
reached.`

const monitorFeedExample = `  underrun monitor feed live.jsonl --to http://127.0.0.1:8765
  underrun monitor feed --format vllm bench.json --to ws://127.0.0.1:8765 --token "$TOKEN"
  underrun monitor feed live.jsonl --to http://10.0.0.1:8765,http://10.0.0.2:8765,http://10.0.0.3:8765`

func newMonitorFeedCommand(e *env) *cobra.Command {
	var to, token, format, session string
	cmd := &cobra.Command{
		Use:     "feed FILE --to URL[,URL...]",
		Short:   "Feed a recorded trace into a running monitor at its real pace",
		Long:    monitorFeedLong,
		Example: monitorFeedExample,
		Args:    cobra.ExactArgs(1),
		RunE: func(cmd *cobra.Command, args []string) error {
			if to == "" {
				return usagef("--to: the monitor's address is required (e.g. http://%s)", defaultMonitorListen)
			}
			in, err := openInput(e, args[0])
			if err != nil {
				return err
			}
			defer in.Close()
			dec, err := in.decoder(format)
			if err != nil {
				return err
			}
			return feedMonitor(cmd.Context(), e, dec, to, token, session)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&to, "to", "", "the monitor's `URL` (http://host:port or ws://host:port), or several separated by commas: sessions are spread over them by a stable hash of their name")
	fs.StringVar(&token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "the monitor's bearer token (default $UNDERRUN_MONITOR_TOKEN)")
	fs.StringVar(&format, "format", "auto", "input format: auto or one of "+trace.FormatNames())
	fs.StringVar(&session, "session", "feed", "session `NAME` for turns that carry none")
	return cmd
}

// feedMonitor plays the turns of dec into the monitors at to (one URL, or
// several separated by commas) at their real pace and says what it sent.
func feedMonitor(ctx context.Context, e *env, dec trace.Decoder, to, token, session string) error {
	urls := strings.Split(to, ",")
	for i, u := range urls {
		if urls[i] = strings.TrimSpace(u); urls[i] == "" {
			return usagef("--to %q: monitor %d of the list is empty; want URL or URL1,URL2,...", to, i+1)
		}
	}
	st, err := monitor.Feed(ctx, dec, monitor.FeedOptions{
		URLs: urls, Token: token, Session: session,
		OnRefused: func(s, msg string) {
			fmt.Fprintf(e.stderr, "underrun: monitor refused a message of session %s: %s\n", s, msg)
		},
	})
	fmt.Fprintf(e.stdout, "fed %d turns of %d sessions: %d messages, %d refused\n", st.Turns, st.Sessions, st.Messages, st.Refused)
	if len(urls) > 1 && len(st.PerMonitor) == len(urls) {
		per := make([]string, len(urls))
		for i, u := range urls {
			per[i] = fmt.Sprintf("%s %d", u, st.PerMonitor[i])
		}
		fmt.Fprintf(e.stdout, "sessions per monitor: %s\n", strings.Join(per, ", "))
	}
	if err != nil && errors.Is(err, trace.ErrFormat) {
		return usageError{err}
	}
	return err
}

// newMonitorRulesCommand prints the Prometheus rules for a fleet of
// monitors.
func newMonitorRulesCommand(e *env) *cobra.Command {
	return &cobra.Command{
		Use:   "rules",
		Short: "Print the Prometheus recording and alerting rules for a fleet of monitors",
		Long: `Print the Prometheus rules for the monitors' /metrics (a YAML rule file, the
repository's pipeline/monitor/prometheus/rules.yml): recording rules for the
fleet's interruptions per minute of speech, speech goodput, ITL and
time-to-first-audio percentiles and live sessions per monitor, and alerts for
an interruption rate above 0.5 per minute of speech for 5 minutes, a monitor
dropping subscribers or refusing more than 1% of its messages, a monitor above
90% of its --max-sessions, and a monitor Prometheus cannot scrape. They expect
the monitors in a scrape job named "underrun". The README, section "A fleet of
monitors", shows a Prometheus configuration that loads them.`,
		Example: `  underrun monitor rules > /etc/prometheus/underrun.rules.yml
  promtool check rules /etc/prometheus/underrun.rules.yml`,
		Args: cobra.NoArgs,
		RunE: func(*cobra.Command, []string) error {
			_, err := e.stdout.Write(prometheus.Rules)
			return err
		},
	}
}

const monitorLoadLong = `Measure how much live traffic a monitor takes on this machine. --sessions
websocket sessions stream turns at --rate chunks per second each; every turn
stalls once (--stall after --stall-after chunks), which drains the buffer of a
monitor running the load's speech model (each token 50 ms of audio, token
chunking, no synthesizer latency), so every turn raises at least one
underrun_started event. The sessions' turns are spread over the turn cycle,
as in a fleet of independent conversations; --aligned keeps them in step, so
that every buffer drains in the same few milliseconds, as when the model
server hiccups for the whole fleet (the burst case). The run reports messages
sent and lost, the delay from the moment each buffer drained to the arrival
of its event at an /events subscriber (p50, p99, max), and the CPU used by
the load and by the target.

Without --to the command starts a bare gorilla websocket server, "echo" (the
ceiling: it reads every message through the websocket layer, as the monitor
does, and echoes only how many it read when a session closes), and then a
monitor, each in a process of its own (this executable), and drives each with
the same load; the /events subscriber runs in a process of its own too, so
that it reads each event as it arrives. On Linux with two CPUs or more, each
target runs on the first half of them and the load with its subscriber on
the rest, as on machines of their own (--share-cpus lets them mix: the target
then waits for the load generator's threads too). --in-process runs them all
inside this process instead, sharing its CPUs with the load. Before the runs
the command samples this machine's floor (how late a 1 ms sleep wakes) and
its write floor: how many messages a bare loop on the load's CPUs writes to
as many sockets, one write(2) each, against a sink in a process of its own
(on loopback the writer also pays the kernel's work for the receiving
socket, so no load generator sends faster there), and how late that loop's
writes go out when it keeps the load's schedule (no load generator's
send-lag is lower there). It reports, per run, the CPU time the hypervisor
gave to other guests (steal): latencies measured on a busy host grow with
all of these. The targets it starts are reached over Unix sockets (--network
unix, the default): over loopback TCP the kernel does the receiving socket's
work on the sender's CPU too, and one CPU cannot then write a message to
each of 5,000 sockets 25 times a second, so the load generator, not the
target, would be measured (--network tcp measures that path all the same).
Linux stamps no bytes received on a Unix socket, so the monitor started then
listens on loopback TCP too, for the events subscriber alone, whose events
are timed by the kernel's receive stamps. The load is sent by one goroutine per
CPU it may use, each keeping the schedule of its share of the sessions, each
message framed once for all of them. When the load has CPUs of its own
(--priority auto, the default; realtime asks for it anyway), each sender
runs on a thread of its own at real-time priority (SCHED_FIFO 1 on Linux,
for root or CAP_SYS_NICE; else nice -20 where allowed, else as any thread;
the run says which) and waits for its next message on that thread, within
0.2 ms: at ordinary priority any thread that wakes on those CPUs (another
program, a kernel thread) takes its scheduler slice, 4-13 ms on the
development machine, while every message due meanwhile waits, and Go's
timers wake a sleeper at the millisecond at best. --priority normal sends
as any goroutine. --record FILE has the monitor record
what it accepts (monitor --record), to see what recording costs. With --to
it drives that running monitor (start it with --load-model for the drains);
lost messages are then counted from its /metrics.

Exit codes: 0 no message lost; 1 messages were lost; 2 bad usage, or a target
could not be started.`

const monitorLoadExample = `  underrun monitor load                                   # 2,000 sessions x 25 chunks/s for 10 s
  underrun monitor load --sessions 500 --duration 5s
  underrun monitor load --aligned --no-echo                # every session stalls at once
  underrun monitor load --sessions 5000 --priority normal  # senders at ordinary priority, to compare
  underrun monitor load --to http://127.0.0.1:8765 --sessions 100`

func newMonitorLoadCommand(e *env) *cobra.Command {
	opts := monitor.LoadOptions{}
	var lf loadFlags
	cmd := &cobra.Command{
		Use:     "load",
		Short:   "Drive a monitor (and an echo server, the ceiling) with many live sessions",
		Long:    monitorLoadLong,
		Example: monitorLoadExample,
		Args:    cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if opts.Sessions <= 0 || opts.Rate <= 0 || opts.Duration <= 0 || opts.TurnChunks <= 0 || opts.StallAfter < 0 || opts.Stall < 0 {
				return usagef("--sessions, --rate, --duration and --turn-chunks must be positive, --stall-after and --stall not negative")
			}
			if lf.network != "unix" && lf.network != "tcp" {
				return usagef("--network %q: want unix or tcp", lf.network)
			}
			if lf.priority != "auto" && lf.priority != "realtime" && lf.priority != "normal" {
				return usagef("--priority %q: want auto, realtime or normal", lf.priority)
			}
			if lf.record != "" && (lf.inProcess || opts.URL != "") {
				return usagef("--record is for the monitor monitor load starts in a process of its own (not with --in-process or --to)")
			}
			return runLoad(cmd.Context(), e, opts, lf)
		},
	}
	fs := cmd.Flags()
	fs.StringVar(&opts.URL, "to", "", "drive this running monitor (`URL`) instead of starting one")
	fs.StringVar(&opts.Token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "the monitor's bearer token (with --to)")
	fs.IntVar(&opts.Sessions, "sessions", monitor.DefaultLoadSessions, "concurrent sessions")
	fs.Float64Var(&opts.Rate, "rate", monitor.DefaultLoadRate, "chunks per second per session")
	fs.DurationVar(&opts.Duration, "duration", monitor.DefaultLoadDuration, "how long the sessions stream")
	fs.IntVar(&opts.TurnChunks, "turn-chunks", monitor.DefaultTurnChunks, "chunks per turn")
	fs.IntVar(&opts.StallAfter, "stall-after", monitor.DefaultStallAfter, "chunks before each turn's stall")
	fs.DurationVar(&opts.Stall, "stall", monitor.DefaultStall, "length of each turn's stall (0: none)")
	fs.BoolVar(&opts.Aligned, "aligned", false, "keep every session's turns in step: all buffers drain at once")
	fs.BoolVar(&lf.noEcho, "no-echo", false, "skip the echo-server ceiling")
	fs.BoolVar(&lf.inProcess, "in-process", false, "run the echo server, the monitor and the events subscriber inside this process")
	fs.StringVar(&lf.record, "record", "", "the monitor records what it accepts to `FILE` (monitor --record), to measure what recording costs")
	fs.BoolVar(&lf.shareCPUs, "share-cpus", false, "let the targets and the load share every CPU (by default each target runs on half of them, the load on the rest)")
	fs.StringVar(&lf.network, "network", defaultLoadNetwork, "how the load reaches the targets it starts: `unix` (Unix sockets) or tcp (loopback TCP)")
	fs.StringVar(&lf.priority, "priority", "auto", "the senders' threads: `realtime` (real-time priority, paced within 0.2 ms), normal, or auto (realtime when the load has CPUs of its own)")
	return cmd
}

// newMonitorWatchCommand is the /events subscriber monitor load starts in
// a process of its own (hidden: a tool of the load command). It times the
// underrun_started events until its standard input closes, then writes a
// monitor.DrainReport as JSON to standard output.
func newMonitorWatchCommand(e *env) *cobra.Command {
	var to, token string
	var nice int
	cmd := &cobra.Command{
		Use:    "watch --to URL",
		Short:  "Time a monitor's underrun_started events until standard input closes (a tool of monitor load)",
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if to == "" {
				return usagef("--to: want the monitor's address")
			}
			if nice != 0 {
				if err := niceSelf(nice); err != nil {
					fmt.Fprintf(e.stderr, "underrun watch: at nice 0 (nice %d refused: %v)\n", nice, err)
				}
			}
			w, err := monitor.WatchDrains(cmd.Context(), to, token)
			if err != nil {
				return err
			}
			fmt.Fprintln(e.stderr, watchingLine)
			io.Copy(io.Discard, e.stdin)
			return json.NewEncoder(e.stdout).Encode(w.Stop())
		},
	}
	cmd.Flags().StringVar(&to, "to", "", "the monitor's `URL`")
	cmd.Flags().StringVar(&token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "the monitor's bearer token")
	cmd.Flags().IntVar(&nice, "nice", 0, "run at this nice value (monitor load's real-time senders share the subscriber's CPUs)")
	return cmd
}

// watchingLine is what monitor watch says once it is subscribed.
const watchingLine = "underrun watch: subscribed"

// spawnWatch is monitor.LoadOptions.Watch with the subscriber in a
// process of its own (this executable's monitor watch), so that it reads
// its events promptly instead of sharing the load's threads. Beside the
// load's real-time senders (realtime) it runs at nice -20 where allowed:
// at nice 0 it read its events late behind every ordinary thread on
// those CPUs (read-p99 20-90 ms at 5,000 sessions), and the events
// reached its socket late with it (drain-p99 7-9 ms at 4,000 sessions,
// 3-4 ms at nice -20 or with senders at ordinary priority).
func spawnWatch(ctx context.Context, url, token string, realtime bool) (func() (monitor.DrainReport, error), error) {
	args := []string{"monitor", "watch", "--to", url}
	if realtime {
		args = append(args, "--nice=-20")
	}
	cmd, err := selfCommand(args...)
	if err != nil {
		return nil, err
	}
	cmd.Env = append(os.Environ(), "UNDERRUN_MONITOR_TOKEN="+token) // not on the command line
	stdin, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := startChild(ctx, cmd, nil, "subscribe", func(line string) bool { return line == watchingLine }); err != nil {
		return nil, err
	}
	return func() (monitor.DrainReport, error) {
		stdin.Close()
		var r monitor.DrainReport
		err := json.NewDecoder(stdout).Decode(&r)
		if werr := cmd.Wait(); err == nil {
			err = werr
		}
		return r, err
	}, nil
}

// newMonitorEchoCommand is the bare echo server monitor load starts as the
// ceiling (hidden: a tool of the load command).
func newMonitorEchoCommand(e *env) *cobra.Command {
	return newLoadTargetCommand(e, "echo", "Serve a bare gorilla websocket echo server (the ceiling of monitor load)",
		func(ctx context.Context, ln net.Listener) error {
			hs := httpserver.New(monitor.EchoHandler())
			go func() {
				<-ctx.Done()
				hs.Close()
			}()
			if err := hs.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
				return err
			}
			return nil
		})
}

// newMonitorSinkCommand is the sink monitor load measures the write floor
// against (hidden: a tool of the load command).
func newMonitorSinkCommand(e *env) *cobra.Command {
	return newLoadTargetCommand(e, "sink", "Read and drop whatever connections send (the write floor of monitor load)", monitor.Sink)
}

// newLoadTargetCommand is a hidden server of monitor load's: it listens on
// --listen, says where on standard error (spawn reads it), and serves.
func newLoadTargetCommand(e *env, name, short string, serve func(context.Context, net.Listener) error) *cobra.Command {
	var listen string
	cmd := &cobra.Command{
		Use:    name,
		Short:  short,
		Hidden: true,
		Args:   cobra.NoArgs,
		RunE: func(cmd *cobra.Command, _ []string) error {
			if err := checkListen(listen, ""); err != nil {
				return err
			}
			ln, err := listenMonitor(listen)
			if err != nil {
				return usagef("--listen: %w", err)
			}
			fmt.Fprintf(e.stderr, "underrun %s on %s \n", name, monitor.BaseURL(ln))
			return serve(cmd.Context(), ln)
		},
	}
	cmd.Flags().StringVar(&listen, "listen", "127.0.0.1:0", "loopback address (or unix:PATH) to listen on")
	return cmd
}

// writeFloor measures monitor.WriteFloor for opts against a sink in a
// process of its own on cpus (none: anywhere): a second as fast as it
// goes, then opts' schedule.
func writeFloor(ctx context.Context, cpus []int, opts monitor.LoadOptions, net loadNet) (monitor.Floor, error) {
	t, err := spawn(ctx, cpus, "monitor", "sink", "--listen", net.listen("sink"))
	if err != nil {
		return monitor.Floor{}, err
	}
	defer t.stop()
	return monitor.WriteFloor(ctx, strings.TrimPrefix(t.url, "http://"), opts, time.Second)
}

// loadNet is how monitor load reaches its targets: loopback TCP, or Unix
// sockets in dir.
type loadNet struct {
	unix bool
	dir  string
}

// listen is the --listen address of the target called name.
func (n loadNet) listen(name string) string {
	if n.unix {
		return monitor.UnixPrefix + filepath.Join(n.dir, name+".sock")
	}
	return "127.0.0.1:0"
}

func (n loadNet) String() string {
	if n.unix {
		return "Unix sockets"
	}
	return "loopback TCP"
}

// target is a server monitor load drives: its address, how to count what
// it took in and its CPU, and how to stop it.
type target struct {
	url      string
	watch    string // where its events subscriber connects, if not to url
	received func() int64
	cpu      func() time.Duration
	peak     func() string // peak memory of a target process
	stop     func() error
}

var listenLine = regexp.MustCompile(`on (http://127\.0\.0\.1:\d+|unix:\S+)[/ ]`)

// spawn starts this executable with args, waits for it to say where it
// listens, and returns it as a target.
func spawn(ctx context.Context, cpus []int, args ...string) (*target, error) {
	cmd, err := selfCommand(args...)
	if err != nil {
		return nil, err
	}
	t := &target{}
	listens := 0 // the lines to wait for: one per --listen
	for _, a := range args {
		if a == "--listen" {
			listens++
		}
	}
	listens = max(listens, 1)
	var urls []string
	if err := startChild(ctx, cmd, cpus, "say where it listens", func(line string) bool {
		if m := listenLine.FindStringSubmatch(line); m != nil {
			urls = append(urls, m[1])
		}
		return len(urls) == listens
	}); err != nil {
		return nil, err
	}
	t.url = urls[0]
	if len(urls) > 1 {
		t.watch = urls[1]
	}
	t.cpu = func() time.Duration { return processCPUOf(cmd.Process.Pid) }
	t.peak = func() string { return peakMemoryOf(cmd.Process.Pid) }
	t.stop = func() error {
		cmd.Process.Signal(os.Interrupt)
		return cmd.Wait()
	}
	return t, nil
}

// selfCommand is this executable run with args.
func selfCommand(args ...string) (*exec.Cmd, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	return exec.Command(exe, args...), nil
}

// startChild starts cmd on cpus (none: anywhere) and waits, at most 10 s,
// for a line on its standard error for which ready is true (what names
// that moment, for the error); the rest of its standard error is read and
// dropped. On failure the child is killed.
func startChild(ctx context.Context, cmd *exec.Cmd, cpus []int, what string, ready func(line string) bool) error {
	name := strings.Join(cmd.Args, " ")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		return err
	}
	if err := startOn(cmd, cpus); err != nil {
		return fmt.Errorf("start %s: %w", name, err)
	}
	done := make(chan error, 1)
	go func() {
		sc := bufio.NewScanner(stderr)
		last := ""
		for sc.Scan() {
			if ready(sc.Text()) {
				done <- nil
				io.Copy(io.Discard, stderr)
				return
			}
			last = sc.Text()
		}
		done <- fmt.Errorf("%s exited before it would %s: %s", name, what, last)
	}()
	select {
	case err = <-done:
	case <-time.After(10 * time.Second):
		err = fmt.Errorf("%s did not %s within 10s", name, what)
	case <-ctx.Done():
		err = ctx.Err()
	}
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
	}
	return err
}

// processCPUOf returns the CPU time (user and system) of a process, read
// from /proc (0 where there is none).
func processCPUOf(pid int) time.Duration {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return 0
	}
	st, err := p.Stat()
	if err != nil {
		return 0
	}
	return time.Duration(st.CPUTime() * float64(time.Second))
}

// peakMemoryOf returns a process's peak resident memory, from /proc
// ("" where there is none).
func peakMemoryOf(pid int) string {
	p, err := procfs.NewProc(pid)
	if err != nil {
		return ""
	}
	st, err := p.NewStatus()
	if err != nil || st.VmHWM == 0 {
		return ""
	}
	return fmt.Sprintf("%d kB", st.VmHWM/1024)
}

// inProcess starts an echo server or a monitor inside this process.
func inProcess(echo bool, opts monitor.LoadOptions, ln net.Listener) (*target, error) {
	t := &target{url: monitor.BaseURL(ln)}
	if echo {
		hs := httpserver.New(monitor.EchoHandler())
		go hs.Serve(ln)
		t.stop = hs.Close
		return t, nil
	}
	// a deep events queue: the subscriber measuring drains must not be
	// dropped when every session opens at once
	srv, err := monitor.New(monitor.Options{Config: monitor.LoadConfig(), MaxSessions: opts.Sessions + 10,
		Queue: 4 * opts.Sessions, Logger: zerolog.Nop()})
	if err != nil {
		ln.Close()
		return nil, err
	}
	sctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(sctx, ln, 5*time.Second) }()
	t.received = func() int64 { return srv.Stats().Received }
	t.stop = func() error { cancel(); return <-done }
	return t, nil
}

// loadFlags are monitor load's choices of how to run.
type loadFlags struct {
	noEcho, inProcess, shareCPUs bool
	record                       string // the monitor's --record
	network                      string // unix or tcp
	priority                     string // the senders': auto, realtime or normal
}

// runLoad drives an echo server and a monitor (or the monitor at opts.URL)
// with the load and prints what each took.
func runLoad(ctx context.Context, e *env, opts monitor.LoadOptions, lf loadFlags) error {
	here, noEcho, shareCPUs := lf.inProcess, lf.noEcho, lf.shareCPUs
	w := e.stdout
	ln := loadNet{unix: lf.network == "unix"}
	if ln.unix && opts.URL == "" {
		dir, remove, err := outfile.TempDir("underrun-load-")
		if err != nil {
			return fmt.Errorf("load: a directory for the sockets: %w", err)
		}
		defer remove()
		ln.dir = dir
	}
	mode := "each target in its own process"
	switch {
	case opts.URL != "":
		mode = "against " + opts.URL
	case here:
		mode = "targets inside this process"
	}
	via := ln.String()
	if opts.URL != "" {
		via = "loopback TCP"
		if monitor.IsUnix(opts.URL) {
			via = "a Unix socket"
		}
	}
	fmt.Fprintf(w, "load: %d sessions x %g chunks/s for %v (%.0f messages/s while streaming), over %s, %d CPUs, %s\n",
		opts.Sessions, opts.Rate, opts.Duration, float64(opts.Sessions)*opts.Rate, via, numCPU(), mode)
	// the target on CPUs of its own, as it would be on a server of its
	// own: sharing them with the load, it waits for the load generator's
	// threads and its latency measures the benchmark rather than itself
	var targetCPUs []int
	if opts.URL == "" && !here && !shareCPUs {
		if tc, lc, ok := cpuSplit(); ok {
			restore, err := pinSelf(lc)
			if err != nil {
				return fmt.Errorf("load: keeping the load on CPUs %v: %w", lc, err)
			}
			defer restore()
			targetCPUs = tc
			fmt.Fprintf(w, "CPUs: each target on %v; the load and its events subscriber on %v (--share-cpus mixes them)\n", tc, lc)
			if lf.priority != "normal" {
				// a sender per CPU, each on a thread and a P of its own,
				// and a P besides for the rest (pinSelf's restore puts
				// GOMAXPROCS back)
				runtime.GOMAXPROCS(len(lc) + 1)
				opts.Senders, opts.Realtime = len(lc), true
			}
		}
	}
	if lf.priority == "realtime" {
		opts.Realtime = true
	}
	ms := func(d time.Duration) string { return fmt.Sprintf("%.2fms", float64(d)/1e6) }
	wake := monitor.WakeLatency(ctx, time.Second)
	fmt.Fprintf(w, "this machine, idle: a 1 ms sleep wakes late by p50 %s, p99 %s, max %s (the floor under the latencies below)\n",
		ms(wake.P50), ms(wake.P99), ms(wake.Max))
	if opts.URL == "" && !here {
		floor, err := writeFloor(ctx, targetCPUs, opts, ln)
		if err != nil {
			return err
		}
		fmt.Fprintf(w, "write floor: a bare loop on the load's CPUs writes %.0f messages/s, one write(2) each, to %d connections over %s in turn\n"+
			"  (%.2fx what this load sends while streaming; no load generator sends faster here);\n"+
			"  keeping this load's schedule, its writes are late by p99 %s, max %s (no load generator's send-lag is lower here)\n",
			floor.Rate, opts.Sessions, ln, floor.Rate/(float64(opts.Sessions)*opts.Rate), ms(floor.LagP99), ms(floor.LagMax))
	}
	fmt.Fprintf(w, "%-8s %9s %9s %6s %9s %9s %7s %10s %10s %10s %10s %10s %10s %9s %9s %6s\n",
		"target", "sent", "received", "lost", "msgs/s", "send-lag", "drains", "drain-p50", "drain-p99", "drain-max", "fire-p99", "sent-p99", "read-p99", "load-CPU", "target-CPU", "steal")
	lost := false
	row := func(name string, r monitor.LoadResult) {
		recv, lostS := fmt.Sprint(r.Received), fmt.Sprint(r.Lost)
		if r.Received < 0 {
			recv, lostS = "?", "?"
		}
		p50, p99, pmax, fire, raise, read := "-", "-", "-", "-", "-", "-"
		if r.Drains > 0 {
			p50, p99, pmax = ms(r.DrainLatency.P50), ms(r.DrainLatency.P99), ms(r.DrainLatency.Max)
			fire, raise, read = ms(r.FireLatency.P99), ms(r.SentLatency.P99), ms(r.ReadLatency.P99)
		}
		tcpu := "-"
		if r.TargetCPU > 0 {
			tcpu = fmt.Sprintf("%.0f%%", r.TargetCores*100)
		}
		steal := "-"
		if r.Steal >= 0 {
			steal = fmt.Sprintf("%.1f%%", r.Steal*100)
		}
		fmt.Fprintf(w, "%-8s %9d %9s %6s %9.0f %9s %7d %10s %10s %10s %10s %10s %10s %8.0f%% %9s %6s\n",
			name, r.Sent, recv, lostS, r.Rate, ms(r.SendLagP99), r.Drains, p50, p99, pmax, fire, raise, read, r.Cores*100, tcpu, steal)
		if r.Lost > 0 {
			lost = true
		}
		if r.Refused > 0 {
			fmt.Fprintf(w, "  the monitor refused %d messages\n", r.Refused)
		}
		if r.EventsDropped {
			fmt.Fprintln(w, "  the monitor dropped the events subscriber as too slow: drains are undercounted")
		}
	}
	drive := func(name string, t *target, echo bool) error {
		o := opts
		o.URL, o.Echo, o.TargetCPU = t.url, echo, t.cpu
		o.Received = t.received
		if !here {
			o.Watch = func(ctx context.Context, url, token string) (func() (monitor.DrainReport, error), error) {
				if t.watch != "" {
					url = t.watch
				}
				return spawnWatch(ctx, url, token, o.Realtime)
			}
		}
		if !echo && o.Received == nil {
			o.Received = func() int64 {
				n, err := monitor.ScrapeReceived(ctx, t.url, o.Token)
				if err != nil {
					return -1
				}
				return n
			}
		}
		r, err := monitor.Load(ctx, o)
		peak := ""
		if t.peak != nil {
			peak = t.peak()
		}
		if t.stop != nil {
			t.stop()
		}
		if err != nil {
			return err
		}
		row(name, r)
		fmt.Fprintf(w, "  load: %s at %s priority, paced within %s; send lag p50 %s, p99 %s, max %s\n",
			plural(r.Senders, "sender"), r.Priority, ms(r.Paced), ms(r.SendLag.P50), ms(r.SendLag.P99), ms(r.SendLag.Max))
		if t.watch != "" {
			fmt.Fprintf(w, "  its events subscriber connected to %s, over loopback TCP (the kernel stamps the events' bytes)\n", t.watch)
		}
		if peak != "" {
			fmt.Fprintf(w, "  %s process peak memory: %s\n", name, peak)
		}
		return nil
	}
	if opts.URL != "" {
		if err := drive("monitor", &target{url: opts.URL}, false); err != nil {
			return err
		}
	} else {
		queue := strconv.Itoa(4 * opts.Sessions)
		for _, name := range []string{"echo", "monitor"} {
			if name == "echo" && noEcho {
				continue
			}
			var t *target
			var err error
			switch {
			case here:
				var l net.Listener
				if l, err = listenMonitor(ln.listen(name)); err == nil {
					t, err = inProcess(name == "echo", opts, l)
				}
			case name == "echo":
				t, err = spawn(ctx, targetCPUs, "monitor", "echo", "--listen", ln.listen(name))
			default:
				args := []string{"monitor", "--listen", ln.listen(name), "--events", "", "--warn-tolerance", "0", "--load-model",
					"--queue", queue, "--max-sessions", strconv.Itoa(opts.Sessions + 10)}
				if ln.unix {
					// the events subscriber over loopback TCP, whose
					// bytes the kernel stamps as they arrive
					args = append(args, "--listen", "127.0.0.1:0")
				}
				if lf.record != "" {
					args = append(args, "--record", lf.record)
				}
				t, err = spawn(ctx, targetCPUs, args...)
			}
			if err != nil {
				return err
			}
			if err := drive(name, t, name == "echo"); err != nil {
				return err
			}
		}
	}
	fmt.Fprintln(w, "msgs/s: sent over the streaming time (stalls and turn ends included); send-lag: p99 lateness of the senders;\n"+
		"drain-*: from the moment a buffer drained to the arrival of its underrun_started event at an /events subscriber\n"+
		"here (the kernel's receive stamp of its bytes over TCP on Linux, so a monitor the load reaches over Unix\n"+
		"sockets listens on loopback TCP for the subscriber too; else the subscriber's read); fire-p99: how late the monitor's\n"+
		"drain timer fired; sent-p99: the part inside the monitor, from the drain to the event raised (about to be\n"+
		"written to the subscribers' sockets); read-p99: from the drain to when the subscriber read the event\n"+
		"(adds this process's own scheduling); load-CPU: this process (the clients, and in-process\n"+
		"targets); target-CPU: the target's own process; 100% = one core; steal: the machine's CPU time its\n"+
		"hypervisor gave to other guests during the run (every latency grows with it)")
	if lost {
		return errFail
	}
	return nil
}

func numCPU() int { return runtime.NumCPU() }

// defaultLoadNetwork is how monitor load reaches the targets it starts:
// Unix sockets where the system has them. Over loopback TCP the kernel's
// work for the receiving socket is charged to the sender's CPU, which
// then cannot write a message to each of 5,000 sockets 25 times a second.
var defaultLoadNetwork = func() string {
	if runtime.GOOS == "windows" || runtime.GOOS == "plan9" {
		return "tcp"
	}
	return "unix"
}()
