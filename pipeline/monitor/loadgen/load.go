package loadgen

import (
	"context"
	"fmt"
	"strconv"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/procfs"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/tts"
)

// Defaults of Run: the target of issue 7, 2,000 sessions at 25 chunks/s.
const (
	DefaultSessions   = 2000
	DefaultRate       = 25
	DefaultDuration   = 10 * time.Second
	DefaultTurnChunks = 50
	DefaultStallAfter = 10
	DefaultStall      = 400 * time.Millisecond
)

// TokenAudio is the per-token audio a monitor under Run should speak
// (with token chunking, no synthesizer latency, RTF 0): at 25 chunks/s the
// buffer grows 10 ms a chunk, so each turn's stall drains it once.
const TokenAudio = 50 * time.Millisecond

// Config returns the engine configuration Run's pattern is made for.
func Config() pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.TokenAudio = TokenAudio
	cfg.Voice.TokenAudio = TokenAudio
	cfg.Synth.TTFA = 0
	cfg.Synth.RTF = 0
	cfg.Policy, _ = tts.ParsePolicy("token")
	return cfg
}

// Options configure Run.
type Options struct {
	// URL is the target's address (http://host:port, or unix:PATH for a
	// monitor on a Unix socket).
	URL string
	// Echo says the target is an echo server (EchoHandler): it says, as
	// each session closes, how many messages it read, and no events are
	// watched.
	Echo bool
	// Token is the monitor's bearer token, if any.
	Token string
	// Sessions is how many connections stream at once.
	Sessions int
	// Rate is each session's chunks per second while it streams.
	Rate float64
	// Duration is how long the sessions stream (every turn still open then
	// is ended).
	Duration time.Duration
	// TurnChunks is the chunks of each turn; after StallAfter of them the
	// stream stalls for Stall (0: never), which drains the buffer once per
	// turn on a monitor configured with Config.
	TurnChunks, StallAfter int
	Stall                  time.Duration
	// Received, when set, reports how many messages the target accepted
	// (a monitor's Stats().Received), for the lost-message count.
	Received func() int64
	// TargetCPU, when set, reports the CPU time the target process has
	// used so far (a monitor in another process), for Result.TargetCPU.
	TargetCPU func() time.Duration
	// DialParallel is how many connections are opened at once (default 32).
	DialParallel int
	// Watch subscribes to the target's events before the load starts and
	// returns the function that ends the subscription with what it saw
	// (nil: WatchDrainsHere, in this process; a subscriber in a process of
	// its own reads more promptly than one sharing the load's CPUs).
	Watch func(ctx context.Context, url, token string) (stop func() (DrainReport, error), err error)
	// Aligned starts every session's turns in step, so that every buffer
	// drains in the same few milliseconds, as when the model server
	// hiccups for the whole fleet. Otherwise the sessions' first turns
	// have lengths spread over 1..TurnChunks chunks, after which their
	// turns (and stalls) are spread over the turn cycle, as in a fleet of
	// independent conversations.
	Aligned bool
	// Senders is how many goroutines send the load, each keeping the
	// schedule of its share of the sessions (0: GOMAXPROCS; with Realtime
	// at most GOMAXPROCS-1).
	Senders int
	// Realtime gives each sender an OS thread of its own at real-time
	// priority (SCHED_FIFO, Linux, where the process may ask for it: root
	// or CAP_SYS_NICE; else nice -20, else as it was) and paces it within
	// paceQuantum instead of the runtime timers' millisecond. It is for a
	// load on CPUs of its own: at ordinary priority, any thread that
	// wakes on those CPUs (another process, a kernel thread) takes its
	// scheduler slice while every message due meanwhile waits (slices of
	// 4-13 ms were seen here, held by the machine's own agents). It takes
	// effect when the process has a P to spare besides the senders
	// (GOMAXPROCS above Senders), on which the rest of it runs: a
	// precisely paced sender keeps its P while it waits.
	Realtime bool
}

// PriorityNormal is Result.Priority for senders left at the
// priority of any thread.
const PriorityNormal = "normal"

// RealtimePriority is the SCHED_FIFO priority of a Realtime sender's
// thread (Linux): the lowest, above every ordinary thread and below the
// kernel's interrupt and migration threads.
const RealtimePriority = 1

// Result is what a load run measured.
type Result struct {
	Sessions int
	// Sent is the messages the sessions sent; Received those the target
	// took (as the echo server said, or Options.Received; -1 unknown);
	// Lost the difference.
	Sent, Received, Lost int64
	// Turns is how many turns were started.
	Turns int64
	// Senders is how many goroutines sent the load; Priority what their
	// threads ran at (PriorityNormal, or what Options.Realtime got);
	// Paced how closely they kept the schedule when nothing held them up
	// (the runtime timers' millisecond, or paceQuantum).
	Senders  int
	Priority string
	Paced    time.Duration
	// Elapsed is the streaming time; Rate is Sent / Elapsed.
	Elapsed time.Duration
	Rate    float64
	// SendLagP99 is how late the senders were against their schedule, at
	// the 99th percentile: the load generator's own overload.
	SendLagP99 time.Duration
	// SendLag is the whole of that lag: p50, p99 (SendLagP99) and max.
	SendLag Latency
	// Drains is how many underrun_started events came; DrainLatency their
	// delay from the moment the buffer drained to their arrival at the
	// events subscriber (Options.Watch): the kernel's receive stamp of
	// their bytes where the system gives one (package rxstamp), so that
	// the subscriber's own scheduling is not counted; ReadLatency the same
	// delay to the moment the subscriber read them.
	Drains       int
	DrainLatency Latency
	ReadLatency  Latency
	// FireLatency is how late the monitor's drain timer fired (the event's
	// late_ms): the part of SentLatency spent waiting for the runtime and
	// the CPU rather than working.
	FireLatency Latency
	// SentLatency is the part of DrainLatency spent in the monitor: from
	// the drain to the event's sent_unix_ns (the rest is the websocket
	// and the subscriber's own scheduling).
	SentLatency Latency
	// EventsDropped says the monitor dropped the events subscriber as too
	// slow (its queue filled): Drains then undercounts.
	EventsDropped bool
	// Refused counts the error messages a monitor answered.
	Refused int64
	// CPU is the process's CPU time during the run (clients and, in
	// process, the target); Cores is CPU / Elapsed.
	CPU   time.Duration
	Cores float64
	// TargetCPU is the target's CPU time during the run
	// (Options.TargetCPU); TargetCores is TargetCPU / Elapsed.
	TargetCPU   time.Duration
	TargetCores float64
	// Steal is the share of the machine's CPU time that its hypervisor
	// gave to other guests during the run (Linux's steal time; -1 where
	// the system does not tell): on a busy host every latency here grows
	// with it, whatever the target does.
	Steal float64
}

// loadDefaults fills in what opts leaves at zero.
func loadDefaults(opts *Options) {
	orDefault(&opts.Sessions, DefaultSessions)
	orDefault(&opts.Rate, DefaultRate)
	orDefault(&opts.Duration, DefaultDuration)
	orDefault(&opts.TurnChunks, DefaultTurnChunks)
	orDefault(&opts.DialParallel, 32)
}

// orDefault sets an option that is not positive (or is NaN) to its default.
func orDefault[T int | float64 | time.Duration](v *T, d T) {
	if !(*v > 0) {
		*v = d
	}
}

// Run drives the target with opts.Sessions concurrent sessions, each
// streaming turns of chunks at opts.Rate, and measures what arrives.
// Everything stays on the address given; use loopback.
func Run(ctx context.Context, opts Options) (Result, error) {
	var res Result
	loadDefaults(&opts)
	res.Sessions = opts.Sessions
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()

	// the events subscriber: underrun_started latency
	var stopWatch func() (DrainReport, error)
	if !opts.Echo {
		watch := opts.Watch
		if watch == nil {
			watch = WatchDrainsHere
		}
		var err error
		if stopWatch, err = watch(ctx, opts.URL, opts.Token); err != nil {
			return res, err
		}
	}
	var report DrainReport
	var watchErr error
	stopWatching := func() {
		if stopWatch != nil {
			report, watchErr = stopWatch()
			stopWatch = nil
		}
	}

	// connect every session
	conns := make([]*loadConn, opts.Sessions)
	sem := make(chan struct{}, opts.DialParallel)
	var dialErr error
	var dialMu sync.Mutex
	var dwg sync.WaitGroup
	for i := range conns {
		sem <- struct{}{}
		dwg.Add(1)
		go func(i int) {
			defer func() { <-sem; dwg.Done() }()
			addr, err := monitor.IngestURL(opts.URL, "load"+strconv.Itoa(i))
			if err == nil {
				var c *websocket.Conn
				if c, err = dialPaced(ctx, opts.URL, addr, opts.Token); err == nil {
					conns[i] = &loadConn{conn: c, done: make(chan struct{})}
					go conns[i].read()
					return
				}
			}
			dialMu.Lock()
			if dialErr == nil {
				dialErr = fmt.Errorf("load: session %d: %w", i, err)
			}
			dialMu.Unlock()
		}(i)
	}
	dwg.Wait()
	closeAll := func() {
		for _, c := range conns {
			if c != nil {
				c.conn.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
			}
		}
		wait, cancel := context.WithTimeout(context.Background(), 2*time.Second)
		defer cancel()
		for _, c := range conns {
			if c != nil {
				select {
				case <-c.done:
				case <-wait.Done():
				}
				c.conn.Close()
			}
		}
		stopWatching()
	}
	if dialErr != nil {
		closeAll()
		return res, dialErr
	}

	// stream
	cpu0 := ProcessCPU()
	all0, steal0, stealOK := machineCPU()
	var tcpu0 time.Duration
	if opts.TargetCPU != nil {
		tcpu0 = opts.TargetCPU()
	}
	start := time.Now().Add(50 * time.Millisecond)
	st, sendErr := stream(ctx, start, opts, conns)
	res.Elapsed = time.Since(start)
	res.Sent, res.Turns, res.Senders, res.Priority, res.Paced = st.sent, st.turns, st.senders, st.priority, st.paced

	// wait for the target to take in what was sent (an echo server says
	// how much it read as each session closes)
	res.Received = -1
	if !opts.Echo {
		deadline := time.Now().Add(5 * time.Second)
		for opts.Received != nil && time.Now().Before(deadline) {
			if res.Received = opts.Received(); res.Received >= res.Sent {
				break
			}
			time.Sleep(20 * time.Millisecond)
		}
		time.Sleep(500 * time.Millisecond) // the last drains
	}
	res.CPU = ProcessCPU() - cpu0
	res.Steal = -1
	if all1, steal1, ok := machineCPU(); ok && stealOK && all1 > all0 {
		res.Steal = (steal1 - steal0) / (all1 - all0)
	}
	if opts.TargetCPU != nil {
		res.TargetCPU = opts.TargetCPU() - tcpu0
	}
	closeAll()
	if opts.Echo {
		res.Received = 0
		for _, c := range conns {
			res.Received += c.echoed.Load()
		}
	}
	if res.Received >= 0 {
		res.Lost = res.Sent - res.Received
	}
	res.Rate = float64(res.Sent) / res.Elapsed.Seconds()
	res.Cores = res.CPU.Seconds() / res.Elapsed.Seconds()
	res.TargetCores = res.TargetCPU.Seconds() / res.Elapsed.Seconds()
	res.SendLagP99 = st.lags.quantile(0.99)
	res.SendLag = Latency{P50: st.lags.quantile(0.5), P99: res.SendLagP99, Max: time.Duration(st.lags.maxNanos)}
	for _, c := range conns {
		res.Refused += c.errors.Load()
	}
	res.EventsDropped = report.Dropped
	res.Drains = len(report.Arrived)
	res.DrainLatency = summarizeLatency(report.Arrived)
	res.ReadLatency = summarizeLatency(report.Read)
	res.FireLatency = summarizeLatency(report.Fired)
	res.SentLatency = summarizeLatency(report.Sent)
	if sendErr != nil {
		return res, sendErr
	}
	if watchErr != nil {
		return res, fmt.Errorf("load: events subscriber: %w", watchErr)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
}

// senderCount is how many senders opts asks for with procs Ps: Senders,
// or one per P.
func senderCount(opts Options, procs int) int {
	if opts.Senders > 0 {
		return opts.Senders
	}
	return max(1, procs)
}

// planSenders says how many senders stream runs with procs Ps, and
// whether each has a thread and a P of its own (opts.Realtime, and a P
// left for the rest of the process: at most procs-1 senders then).
func planSenders(opts Options, procs int) (senders int, dedicated bool) {
	senders = senderCount(opts, procs)
	if opts.Realtime && procs > 1 {
		return min(senders, procs-1), true
	}
	return senders, false
}

// machineCPU returns the CPU time, in seconds, that the machine's CPUs
// have spent so far, and the part of it stolen by the hypervisor; ok is
// false where the system does not tell (no /proc/stat).
func machineCPU() (all, steal float64, ok bool) {
	fs, err := procfs.NewDefaultFS()
	if err != nil {
		return 0, 0, false
	}
	st, err := fs.Stat()
	if err != nil {
		return 0, 0, false
	}
	c := st.CPUTotal
	return c.User + c.Nice + c.System + c.Idle + c.Iowait + c.IRQ + c.SoftIRQ + c.Steal, c.Steal, true
}
