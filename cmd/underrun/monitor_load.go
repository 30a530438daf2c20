package main

import (
	"context"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"runtime"
	"strconv"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/cmd/underrun/internal/outfile"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/monitor/loadgen"
)

const monitorLoadLong = `Measure how much live traffic a monitor takes on this machine: many sessions
stream stalling turns into it, and the run reports messages lost and how late
each buffer's drain event reached a subscriber.

--sessions websocket sessions stream turns at --chunk-rate chunks per second
each; every turn stalls once (--stall after --stall-after chunks), which drains the buffer of a
monitor running the load's speech model (each token 50 ms of audio, token
chunking, no synthesizer latency), so every turn raises at least one
underrun_started event. The sessions' turns are spread over the turn cycle,
as in a fleet of independent conversations; --aligned keeps them in step, so
that every buffer drains in the same few milliseconds, as when the model
server hiccups for the whole fleet (the burst case). The run reports messages
sent and lost, the delay from the moment each buffer drained to the arrival
of its event at an /events subscriber (p50, p99, max), and the CPU used by
the load and by the target.

Without --monitor the command starts a bare gorilla websocket server, "echo" (the
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
what it accepts (monitor --record), to see what recording costs. With --monitor
it drives that running monitor (start it with --load-model for the drains);
lost messages are then counted from its /metrics.

Exit codes: 0 no message lost; 1 messages were lost; 2 bad usage, or a target
could not be started.`

const monitorLoadExample = `  underrun monitor load                                   # 2,000 sessions x 25 chunks/s for 10 s
  underrun monitor load --sessions 500 --duration 5s
  underrun monitor load --aligned --no-echo                # every session stalls at once
  underrun monitor load --sessions 5000 --priority normal  # senders at ordinary priority, to compare
  underrun monitor load --monitor http://127.0.0.1:8765 --sessions 100`

func newMonitorLoadCommand(e *env) *cobra.Command {
	opts := loadgen.Options{}
	var lf loadFlags
	cmd := newCommand("load", "Drive a monitor (and an echo server, the ceiling) with many live sessions",
		monitorLoadLong, monitorLoadExample, positional(0, 0, ""),
		func(cmd *cobra.Command, _ []string) error {
			if opts.Sessions <= 0 || opts.Rate <= 0 || opts.Duration <= 0 || opts.TurnChunks <= 0 || opts.StallAfter < 0 || opts.Stall < 0 {
				return usagef("--sessions, --chunk-rate, --duration and --turn-chunks must be positive, --stall-after and --stall not negative")
			}
			if lf.network != "unix" && lf.network != "tcp" {
				return usagef("--network %q: want unix or tcp", lf.network)
			}
			if lf.priority != "auto" && lf.priority != "realtime" && lf.priority != "normal" {
				return usagef("--priority %q: want auto, realtime or normal", lf.priority)
			}
			if lf.record != "" && (lf.inProcess || opts.URL != "") {
				return usagef("--record is for the monitor monitor load starts in a process of its own (not with --in-process or --monitor)")
			}
			return runLoad(cmd.Context(), e, opts, lf)
		})
	fs := cmd.Flags()
	fs.StringVar(&opts.URL, "monitor", "", "drive this running monitor (`URL`) instead of starting one")
	fs.StringVar(&opts.Token, "token", os.Getenv("UNDERRUN_MONITOR_TOKEN"), "the monitor's bearer `TOKEN` (with --monitor)")
	renamed(e, fs, "to", "", "monitor")
	fs.IntVar(&opts.Sessions, "sessions", loadgen.DefaultSessions, "concurrent sessions")
	fs.Float64Var(&opts.Rate, "chunk-rate", loadgen.DefaultRate, "chunks per second per session")
	renamed(e, fs, "rate", "", "chunk-rate")
	fs.DurationVar(&opts.Duration, "duration", loadgen.DefaultDuration, "how long the sessions stream")
	fs.IntVar(&opts.TurnChunks, "turn-chunks", loadgen.DefaultTurnChunks, "chunks per turn")
	fs.IntVar(&opts.StallAfter, "stall-after", loadgen.DefaultStallAfter, "chunks before each turn's stall")
	fs.DurationVar(&opts.Stall, "stall", loadgen.DefaultStall, "length of each turn's stall (0: none)")
	fs.BoolVar(&opts.Aligned, "aligned", false, "keep every session's turns in step: all buffers drain at once")
	fs.BoolVar(&lf.noEcho, "no-echo", false, "skip the echo-server ceiling")
	fs.BoolVar(&lf.inProcess, "in-process", false, "run the echo server, the monitor and the events subscriber inside this process")
	fs.StringVar(&lf.record, "record", "", "the monitor records what it accepts to `FILE` (monitor --record), to measure what recording costs")
	fs.BoolVar(&lf.shareCPUs, "share-cpus", false, "let the targets and the load share every CPU (by default each target runs on half of them, the load on the rest)")
	fs.StringVar(&lf.network, "network", defaultLoadNetwork, "`NETWORK` the load reaches the targets it starts by: unix (Unix sockets) or tcp (loopback TCP)")
	fs.StringVar(&lf.priority, "priority", "auto", "`PRIORITY` of the senders' threads: realtime (paced within 0.2 ms), normal, or auto (realtime when the load has CPUs of its own)")
	showFlags(cmd, "monitor", "sessions", "chunk-rate", "duration", "stall", "aligned", "no-echo", "in-process")
	return cmd
}

// writeFloor measures loadgen.WriteFloor for opts against a sink in a
// process of its own on cpus (none: anywhere): a second as fast as it
// goes, then opts' schedule.
func writeFloor(ctx context.Context, cpus []int, opts loadgen.Options, net loadNet) (loadgen.Floor, error) {
	t, err := spawn(ctx, cpus, "monitor", "sink", "--listen", net.listen("sink"))
	if err != nil {
		return loadgen.Floor{}, err
	}
	defer t.Stop()
	return loadgen.WriteFloor(ctx, strings.TrimPrefix(t.URL, "http://"), opts, time.Second)
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

// loadFlags are monitor load's choices of how to run.
type loadFlags struct {
	noEcho, inProcess, shareCPUs bool
	record                       string // the monitor's --record
	network                      string // unix or tcp
	priority                     string // the senders': auto, realtime or normal
}

// runLoad drives an echo server and a monitor (or the monitor at opts.URL)
// with the load and prints what each took.
func runLoad(ctx context.Context, e *env, opts loadgen.Options, lf loadFlags) error {
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
		if tc, lc, ok := loadgen.CPUSplit(); ok {
			restore, err := loadgen.PinSelf(lc)
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
	wake := loadgen.WakeLatency(ctx, time.Second)
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
	row := func(name string, r loadgen.Result) {
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
	drive := func(name string, t *loadgen.Target, echo bool) error {
		o := opts
		if !here {
			o.Watch = func(ctx context.Context, url, token string) (func() (loadgen.DrainReport, error), error) {
				return spawnWatch(ctx, url, token, opts.Realtime)
			}
		}
		r, peak, err := loadgen.Drive(ctx, o, t, echo)
		if err != nil {
			return err
		}
		row(name, r)
		fmt.Fprintf(w, "  load: %s at %s priority, paced within %s; send lag p50 %s, p99 %s, max %s\n",
			plural(r.Senders, "sender"), r.Priority, ms(r.Paced), ms(r.SendLag.P50), ms(r.SendLag.P99), ms(r.SendLag.Max))
		if t.Watch != "" {
			fmt.Fprintf(w, "  its events subscriber connected to %s, over loopback TCP (the kernel stamps the events' bytes)\n", t.Watch)
		}
		if peak != "" {
			fmt.Fprintf(w, "  %s process peak memory: %s\n", name, peak)
		}
		return nil
	}
	if opts.URL != "" {
		if err := drive("monitor", &loadgen.Target{URL: opts.URL}, false); err != nil {
			return err
		}
	} else {
		queue := strconv.Itoa(4 * opts.Sessions)
		for _, name := range []string{"echo", "monitor"} {
			if name == "echo" && noEcho {
				continue
			}
			var t *loadgen.Target
			var err error
			switch {
			case here:
				var l net.Listener
				if l, err = listenMonitor(ln.listen(name)); err == nil {
					t, err = loadgen.InProcess(name == "echo", opts.Sessions, l)
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
