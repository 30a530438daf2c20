package main

import (
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"runtime/debug"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/cmd/underrun/internal/outfile"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/monitor/loadgen"
)

func init() { commands = append(commands, newMonitorCommand) }

const defaultMonitorListen = "127.0.0.1:8765"

// defaultMonitorWarn is the monitor's stall-warning threshold: the live
// page shows a session as "low" this long before it would go silent.
const defaultMonitorWarn = 100 * time.Millisecond

const monitorLong = `Watch live voice sessions: a voice app streams each session's tokens to
/ingest, and the monitor plays them through the speech model in wall-clock
time, raising an event the moment a listener's audio would run dry. The live
page is on /, Prometheus metrics on /metrics, the events on /events.

A voice app opens one websocket per session on /ingest and sends JSON
messages as its LLM streams (turn_start, chunk,
turn_end, barge_in, tool_call and tool_result, and optional tts facts with
real audio durations; the protocol is in cmd/underrun/docs/monitor.md).
Every session is guarded in wall-clock time by the speech model: the moment a
listener's audio would run dry an "underrun_started" event is raised, then
the underrun itself, stall warnings (--warn-tolerance before the buffer would
drain) and a summary per turn. A barge-in ends the turn without counting the
cut as an underrun; the silence while a stream stopped for a tool call is a
"tool_silence", counted apart and never an underrun.

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
over --max-message close the connection; messages over --max-rate are refused
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
  underrun monitor feed live.jsonl --monitor http://127.0.0.1:8765   # replay a recording into it
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
	cmd := newCommand("monitor", "Watch live voice sessions: websocket ingest, live page, Prometheus metrics",
		monitorLong, monitorExample, positional(0, 0, ""),
		func(cmd *cobra.Command, _ []string) error {
			if c.loadModel && !cmd.Flags().Changed("events") {
				// a load test's events are the load: thousands a second
				c.events = ""
				fmt.Fprintf(e.stderr, "underrun monitor: --load-model: no event log (--events FILE or - writes one); the load's own report counts the drains\n")
			}
			return c.run(cmd.Context())
		})
	fs := cmd.Flags()
	c.engine.bind(fs)
	fs.StringArrayVar(&c.listen, "listen", []string{defaultMonitorListen}, "`HOST:PORT` or unix:PATH to listen on (repeatable); beyond loopback it needs --token")
	fs.StringVar(&c.token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "the monitor's bearer `TOKEN`: every request must carry it (default $UNDERRUN_MONITOR_TOKEN)")
	fs.StringSliceVar(&c.origins, "origin", nil, "browser `ORIGIN` allowed besides the monitor's own (repeatable; * for any)")
	fs.StringVar(&c.record, "record", "", "write everything received to `FILE` as a native trace")
	fs.StringVar(&c.events, "events", "-", "write the zerolog JSON event log to `FILE` (- for stderr, \"\" for none; with --load-model: none)")
	bindForce(fs, &c.force)
	fs.DurationVar(&c.warn, "warn-tolerance", defaultMonitorWarn, "raise a stall_warning when a stream is this close to starving the player (0: none)")
	fs.Int64Var(&c.maxMessage, "max-message", monitor.DefaultMaxMessage, "largest ingest message in `BYTES`")
	fs.Float64Var(&c.rate, "max-rate", monitor.DefaultRate, "messages per second each ingest connection may send")
	renamed(e, fs, "rate", "", "max-rate")
	fs.IntVar(&c.burst, "burst", monitor.DefaultBurst, "messages an ingest connection may send at once above --max-rate")
	fs.IntVar(&c.queue, "queue", monitor.DefaultQueue, "messages a subscriber or page may fall behind before it is dropped")
	fs.IntVar(&c.maxSessions, "max-sessions", monitor.DefaultMaxSessions, "ingest connections open at once")
	fs.IntVar(&c.maxSubs, "max-subscribers", monitor.DefaultMaxSubscribers, "/events subscribers open at once")
	fs.IntVar(&c.maxPages, "max-pages", monitor.DefaultMaxPages, "live pages (/live) open at once")
	bindAllowHost(fs, &c.allowHosts, "; with --token every host is answered")
	fs.DurationVar(&c.grace, "grace", 5*time.Second, "time sessions get to close on shutdown")
	fs.IntVar(&c.gcMemory, "gc-memory", defaultGCMemory, "collect garbage only when the heap nears this many `MiB` (0: Go's default pacing)")
	fs.BoolVar(&c.loadModel, "load-model", false, "speak as monitor load expects (50 ms tokens, token chunking, no TTS latency), with no event log unless --events")
	c.otlp.bind(fs)
	showFlags(cmd, "listen", "token", "record", "events", "warn-tolerance", "stack", "chunking", "load-model")
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

func (c *monitorCommand) run(ctx context.Context) (err error) {
	cfg, err := c.engine.config()
	if err != nil {
		return err
	}
	if c.loadModel {
		cfg = loadgen.Config()
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
		return usagef("--max-message, --max-rate, --burst, --queue, --max-sessions, --max-subscribers and --max-pages must be positive")
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
			// a failed write of the event log fails the run
			if cerr := f.Close(); err == nil && cerr != nil {
				err = cerr
			}
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
		f, err := openRecording(c.env.stderr, "--events", c.events, c.force)
		if err != nil {
			return err
		}
		closers = append(closers, f)
		logOut = f
	}
	var events *monitor.AsyncWriter
	if logOut != nil {
		events = monitor.NewAsyncWriter(logOut, 1<<14)
		opts.Logger = zerolog.New(events).With().Timestamp().Logger()
		defer func() {
			if n := events.Close(); n > 0 {
				fmt.Fprintf(c.env.stderr, "underrun monitor: the event log fell behind: %d events dropped\n", n)
			}
		}()
	}
	var rec *recording
	if c.record != "" {
		if rec, err = openRecording(c.env.stderr, "--record", c.record, c.force); err != nil {
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
			err = cerr
		}
	}
	if err != nil {
		return err
	}
	st := srv.Stats()
	fmt.Fprintf(c.env.stderr, "underrun monitor: stopped; %d messages accepted, %d refused\n", st.Received, st.Refused)
	return nil
}

// checkListen is monitor.CheckListen, its refusal a usage error.
func checkListen(addr, token string) error {
	err := monitor.CheckListen(addr, token)
	switch {
	case err == nil:
		return nil
	case errors.Is(err, monitor.ErrExposed):
		return usagef("--listen %q is not a loopback address: give --token (or $UNDERRUN_MONITOR_TOKEN) so that only your clients can feed and watch it", addr)
	default:
		return usagef("--listen %q: %w", addr, err)
	}
}
