package monitor

import (
	"bufio"
	"bytes"
	"container/heap"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"net"
	"net/http"
	"runtime"
	"sort"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"
	"github.com/prometheus/procfs"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
	"github.com/speech-pipeline/underrun/tts"
)

// Defaults of Load: the target of issue 7, 2,000 sessions at 25 chunks/s.
const (
	DefaultLoadSessions = 2000
	DefaultLoadRate     = 25
	DefaultLoadDuration = 10 * time.Second
	DefaultTurnChunks   = 50
	DefaultStallAfter   = 10
	DefaultStall        = 400 * time.Millisecond
)

// LoadTokenAudio is the per-token audio a monitor under Load should speak
// (with token chunking, no synthesizer latency, RTF 0): at 25 chunks/s the
// buffer grows 10 ms a chunk, so each turn's stall drains it once.
const LoadTokenAudio = 50 * time.Millisecond

// LoadConfig returns the engine configuration Load's pattern is made for.
func LoadConfig() pipeline.Config {
	cfg := pipeline.DefaultConfig()
	cfg.TokenAudio = LoadTokenAudio
	cfg.Voice.TokenAudio = LoadTokenAudio
	cfg.Synth.TTFA = 0
	cfg.Synth.RTF = 0
	cfg.Policy, _ = tts.ParsePolicy("token")
	return cfg
}

// LoadOptions configure Load.
type LoadOptions struct {
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
	// turn on a monitor configured with LoadConfig.
	TurnChunks, StallAfter int
	Stall                  time.Duration
	// Received, when set, reports how many messages the target accepted
	// (a monitor's Stats().Received), for the lost-message count.
	Received func() int64
	// TargetCPU, when set, reports the CPU time the target process has
	// used so far (a monitor in another process), for LoadResult.TargetCPU.
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

// PriorityNormal is LoadResult.Priority for senders left at the
// priority of any thread.
const PriorityNormal = "normal"

// RealtimePriority is the SCHED_FIFO priority of a Realtime sender's
// thread (Linux): the lowest, above every ordinary thread and below the
// kernel's interrupt and migration threads.
const RealtimePriority = 1

// LoadResult is what a Load run measured.
type LoadResult struct {
	Sessions int
	// Sent is the messages the sessions sent; Received those the target
	// took (as the echo server said, or LoadOptions.Received; -1 unknown);
	// Lost the difference.
	Sent, Received, Lost int64
	// Turns is how many turns were started.
	Turns int64
	// Senders is how many goroutines sent the load; Priority what their
	// threads ran at (PriorityNormal, or what LoadOptions.Realtime got);
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
	// events subscriber (LoadOptions.Watch): the kernel's receive stamp of
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
	// (LoadOptions.TargetCPU); TargetCores is TargetCPU / Elapsed.
	TargetCPU   time.Duration
	TargetCores float64
	// Steal is the share of the machine's CPU time that its hypervisor
	// gave to other guests during the run (Linux's steal time; -1 where
	// the system does not tell): on a busy host every latency here grows
	// with it, whatever the target does.
	Steal float64
}

// Latency summarizes a sample of delays.
type Latency struct {
	P50, P99, Max time.Duration
}

func summarizeLatency(xs []float64) Latency {
	if len(xs) == 0 {
		return Latency{}
	}
	sort.Float64s(xs)
	d := func(p float64) time.Duration {
		return time.Duration(pipeline.Percentile(xs, p) * float64(time.Millisecond))
	}
	return Latency{P50: d(50), P99: d(99), Max: time.Duration(xs[len(xs)-1] * float64(time.Millisecond))}
}

// loadDefaults fills in what opts leaves at zero.
func loadDefaults(opts *LoadOptions) {
	orDefault(&opts.Sessions, DefaultLoadSessions)
	orDefault(&opts.Rate, DefaultLoadRate)
	orDefault(&opts.Duration, DefaultLoadDuration)
	orDefault(&opts.TurnChunks, DefaultTurnChunks)
	orDefault(&opts.DialParallel, 32)
}

// Load drives the target with opts.Sessions concurrent sessions, each
// streaming turns of chunks at opts.Rate, and measures what arrives.
// Everything stays on the address given; use loopback.
func Load(ctx context.Context, opts LoadOptions) (LoadResult, error) {
	var res LoadResult
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
			addr, err := IngestURL(opts.URL, "load"+strconv.Itoa(i))
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
	cpu0 := processCPU()
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
	res.CPU = processCPU() - cpu0
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
func senderCount(opts LoadOptions, procs int) int {
	if opts.Senders > 0 {
		return opts.Senders
	}
	return max(1, procs)
}

// planSenders says how many senders stream runs with procs Ps, and
// whether each has a thread and a P of its own (opts.Realtime, and a P
// left for the rest of the process: at most procs-1 senders then).
func planSenders(opts LoadOptions, procs int) (senders int, dedicated bool) {
	senders = senderCount(opts, procs)
	if opts.Realtime && procs > 1 {
		return min(senders, procs-1), true
	}
	return senders, false
}

// streamed is what stream did: the messages sent, the turns started,
// the send lags, and how the senders ran.
type streamed struct {
	sent, turns int64
	lags        lagHistogram
	senders     int
	priority    string
	paced       time.Duration
}

// stream sends opts' schedule over conns from start until opts.Duration
// has passed: opts.Senders senders (one per CPU the process may use by
// default), each with a schedule of many sessions (a goroutine per
// session, or per message, would make the load generator's own
// scheduling the bottleneck). The first sender's error cancels the
// others.
func stream(ctx context.Context, start time.Time, opts LoadOptions, conns []*loadConn) (streamed, error) {
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	interval := time.Duration(float64(time.Second) / opts.Rate)
	senders, dedicated := planSenders(opts, runtime.GOMAXPROCS(0))
	st := streamed{priority: PriorityNormal, paced: time.Millisecond}
	switch {
	case opts.Realtime && !dedicated:
		st.priority += " (real-time wants a P to spare besides the senders: GOMAXPROCS is 1)"
	case dedicated && precisePacing:
		st.paced = paceQuantum
	}
	workers := min(len(conns), senders)
	st.senders = workers
	plans := make([]sendPlan, workers)
	for i, c := range conns {
		// spread the sessions over one interval
		ls := &loadSession{c: c, i: i, k: -1, first: opts.TurnChunks,
			next: int64(time.Duration(i) * interval / time.Duration(len(conns)))}
		if !opts.Aligned {
			ls.first = 1 + i*opts.TurnChunks/len(conns)
		}
		plans[i%workers] = append(plans[i%workers], ls)
	}
	sched := loadSchedule{opts: opts, interval: int64(interval), stop: int64(opts.Duration)}
	lagAll := make([]lagHistogram, workers)
	priorities := make([]string, workers)
	var nsent, nturns atomic.Int64
	var sendErr atomic.Pointer[error]
	var wg sync.WaitGroup
	for w := range plans {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if dedicated {
				var release func()
				priorities[w], release = lockSender()
				defer release()
			}
			if err := sendLoad(ctx, start, plans[w], sched, dedicated, &lagAll[w], &nsent, &nturns); err != nil {
				sendErr.CompareAndSwap(nil, &err)
				cancel()
			}
		}(w)
	}
	wg.Wait()
	for i := range lagAll {
		st.lags.merge(&lagAll[i])
	}
	if dedicated {
		st.priority = priorities[0]
	}
	st.sent, st.turns = nsent.Load(), nturns.Load()
	var err error
	if p := sendErr.Load(); p != nil {
		err = *p
	}
	return st, err
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

// WakeLatency samples, for d, how late a 1 ms sleep wakes on this
// machine: the floor under every latency Load measures. A quiet machine
// wakes within a fraction of a millisecond; a virtual machine whose host
// is busy can wake milliseconds late with nothing running in it.
func WakeLatency(ctx context.Context, d time.Duration) Latency {
	var late []float64
	for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; {
		t := time.Now()
		time.Sleep(time.Millisecond)
		late = append(late, float64(time.Since(t)-time.Millisecond)/1e6)
	}
	return summarizeLatency(late)
}

// DrainReport is what an /events subscriber saw of the underrun_started
// events: per event, in milliseconds from the moment the buffer drained,
// when it arrived (the kernel's receive stamp where the system gives one),
// when it was read, how late the monitor's timer fired (late_ms) and when
// the monitor queued it (sent_unix_ns); Dropped says the monitor dropped
// the subscriber as too slow.
type DrainReport struct {
	Arrived []float64 `json:"arrived_ms"`
	Read    []float64 `json:"read_ms"`
	Fired   []float64 `json:"fired_ms"`
	Sent    []float64 `json:"sent_ms"`
	Dropped bool      `json:"dropped"`
}

// DrainWatch is an /events subscriber that times underrun_started events.
type DrainWatch struct {
	conn   *websocket.Conn
	done   chan struct{}
	mu     sync.Mutex
	report DrainReport
}

// WatchDrains subscribes to the events of the monitor at url (its base
// address) until Stop.
func WatchDrains(ctx context.Context, url, token string) (*DrainWatch, error) {
	addr, err := EventsURL(url)
	if err != nil {
		return nil, err
	}
	conn, err := dialStamped(ctx, url, addr, token)
	if err != nil {
		return nil, err
	}
	w := &DrainWatch{conn: conn, done: make(chan struct{})}
	go w.read()
	return w, nil
}

// WatchDrainsHere is LoadOptions.Watch in this process.
func WatchDrainsHere(ctx context.Context, url, token string) (func() (DrainReport, error), error) {
	w, err := WatchDrains(ctx, url, token)
	if err != nil {
		return nil, err
	}
	return func() (DrainReport, error) { return w.Stop(), nil }, nil
}

func (w *DrainWatch) read() {
	defer close(w.done)
	var e struct {
		Type   string  `json:"type"`
		UnixNs int64   `json:"unix_ns"`
		SentNs int64   `json:"sent_unix_ns"`
		LateMs float64 `json:"late_ms"`
	}
	// one buffer for every message, and only those that can be drains
	// decoded: a busy monitor sends thousands of events a second, and the
	// subscriber shares the load's CPUs
	var msg bytes.Buffer
	drain := []byte(`"` + pipeline.EventDrain + `"`)
	for {
		_, r, err := w.conn.NextReader()
		if err == nil {
			msg.Reset()
			_, err = msg.ReadFrom(r)
		}
		if err != nil {
			var ce *websocket.CloseError
			if errors.As(err, &ce) && ce.Code == websocket.CloseTryAgainLater {
				w.mu.Lock()
				w.report.Dropped = true
				w.mu.Unlock()
			}
			return
		}
		read := time.Now().UnixNano()
		arrived := read
		if t, ok := rxstamp.Stamp(w.conn.NetConn()); ok {
			arrived = min(t.UnixNano(), read)
		}
		data := msg.Bytes()
		if !bytes.Contains(data, drain) {
			continue
		}
		e.Type, e.SentNs, e.LateMs = "", 0, 0
		if json.Unmarshal(data, &e) != nil || e.Type != string(pipeline.EventDrain) {
			continue
		}
		ms := func(ns int64) float64 { return float64(ns-e.UnixNs) / 1e6 }
		w.mu.Lock()
		w.report.Arrived = append(w.report.Arrived, ms(arrived))
		w.report.Read = append(w.report.Read, ms(read))
		w.report.Fired = append(w.report.Fired, e.LateMs)
		w.report.Sent = append(w.report.Sent, ms(e.SentNs))
		w.mu.Unlock()
	}
}

// Stop ends the subscription and returns what it saw.
func (w *DrainWatch) Stop() DrainReport {
	w.conn.Close()
	<-w.done
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.report
}

// loadConn is one load session's connection.
type loadConn struct {
	conn   *websocket.Conn
	raw    net.Conn     // WriteFloor's: to a Sink, no websocket
	echoed atomic.Int64 // as the echo server said
	errors atomic.Int64
	done   chan struct{}
	// deadline is when its write deadline is next moved, in nanoseconds
	// from the start (its sender's)
	deadline int64
}

// loadReadEvery is how often a load session reads what came back: what a
// target sends in half a second (a monitor refusing every message sends an
// error for each) comes in one read(2), not one each, so that reading it
// does not take the load generator's CPU from sending.
const loadReadEvery = 500 * time.Millisecond

// dialPaced is dial for a load session: once its handshake is done, its
// connection's reads wait until loadReadEvery has passed since the one
// before.
func dialPaced(ctx context.Context, base, addr, token string) (*websocket.Conn, error) {
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second, NetDialContext: loadDialer(base)}
	c, err := dialWith(ctx, d, addr, token)
	if err != nil {
		return nil, err
	}
	if p, ok := c.NetConn().(interface{ startPacing() }); ok {
		p.startPacing()
	}
	return c, nil
}

// pacedDialer dials base through the network poller, as a pacedConn.
func pacedDialer(base string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	nd := netDial(base)
	return func(ctx context.Context, network, a string) (net.Conn, error) {
		c, err := nd(ctx, network, a)
		if err != nil {
			return nil, err
		}
		return &pacedConn{Conn: c, every: loadReadEvery}, nil
	}
}

// pacedConn is a connection whose reads, once paced, come at most once
// per every.
type pacedConn struct {
	net.Conn
	every         time.Duration
	paced         bool
	last          time.Time
	writeDeadline time.Time
}

func (c *pacedConn) startPacing() { c.paced = true }

// SetWriteDeadline passes a deadline on only when it changed: websocket
// sets it before every write, and a load session moves it once a second.
func (c *pacedConn) SetWriteDeadline(t time.Time) error {
	if t.Equal(c.writeDeadline) {
		return nil
	}
	c.writeDeadline = t
	return c.Conn.SetWriteDeadline(t)
}

func (c *pacedConn) SetDeadline(t time.Time) error {
	c.writeDeadline = t
	return c.Conn.SetDeadline(t)
}

func (c *pacedConn) Read(p []byte) (int, error) {
	if d := c.every - time.Since(c.last); d > 0 && c.paced && !c.last.IsZero() {
		time.Sleep(d)
	}
	n, err := c.Conn.Read(p)
	c.last = time.Now()
	return n, err
}

// read takes what comes back: an echo server's count, or a monitor's
// hello and errors. Nothing is allocated per message: its first bytes tell
// what it is, the rest is dropped.
func (c *loadConn) read() {
	defer close(c.done)
	var head [64]byte
	for {
		_, r, err := c.conn.NextReader()
		if err != nil {
			return
		}
		n, _ := io.ReadFull(r, head[:])
		if _, err := io.Copy(io.Discard, r); err != nil {
			return
		}
		msg := head[:n]
		switch {
		case bytes.HasPrefix(msg, []byte(echoPrefix)):
			if k, err := strconv.ParseInt(string(bytes.TrimSuffix(msg[len(echoPrefix):], []byte("}"))), 10, 64); err == nil {
				c.echoed.Store(k)
			}
		case bytes.HasPrefix(msg, []byte(`{"type":"error",`)):
			c.errors.Add(1)
		}
	}
}

// echoPrefix begins an echo server's count: {"type":"echo","messages":N}.
const echoPrefix = `{"type":"echo","messages":`

// EchoHandler is a bare gorilla websocket server, the ceiling a monitor's
// ingestion is measured against: it reads every message through the
// websocket layer, as the monitor does, drops it, and when the client
// closes the session echoes how many it read ({"type":"echo","messages":N})
// before closing in turn. It does not echo each message: the monitor sends
// nothing back per message, and reading 125,000 echoes a second (5,000
// sessions) would make the load generator measure itself.
func EchoHandler() http.Handler {
	up := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		var read int64
		c.SetCloseHandler(func(code int, text string) error {
			c.WriteMessage(websocket.TextMessage, append(strconv.AppendInt([]byte(echoPrefix), read, 10), '}'))
			c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
			return nil
		})
		for {
			_, m, err := c.NextReader()
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, m); err != nil {
				return
			}
			read++
		}
	})
}

// ScrapeReceived returns how many ingest messages the monitor at base has
// accepted: the sum of its underrun_messages_total counters on /metrics.
func ScrapeReceived(ctx context.Context, base, token string) (int64, error) {
	u, err := endpoint(base, "/metrics", "", "")
	if err != nil {
		return 0, err
	}
	u = "http" + strings.TrimPrefix(u, "ws")
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, u, nil)
	if err != nil {
		return 0, err
	}
	if token != "" {
		req.Header.Set("Authorization", "Bearer "+token)
	}
	resp, err := httpClient(base).Do(req)
	if err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return 0, fmt.Errorf("metrics: %s: HTTP %s", u, resp.Status)
	}
	var n float64
	sc := bufio.NewScanner(resp.Body)
	for sc.Scan() {
		line := sc.Text()
		if !strings.HasPrefix(line, "underrun_messages_total{") {
			continue
		}
		i := strings.LastIndexByte(line, ' ')
		x, err := strconv.ParseFloat(line[i+1:], 64)
		if err != nil {
			return 0, fmt.Errorf("metrics: %s: line %q: %w", u, line, err)
		}
		n += x
	}
	if err := sc.Err(); err != nil {
		return 0, fmt.Errorf("metrics: %w", err)
	}
	return int64(n), nil
}

// loadSession is one session of a Load run and where its stream stands.
type loadSession struct {
	c    *loadConn
	i    int
	next int64 // when its next message is due, in nanoseconds from the start
	turn int
	k    int // -1: turn_start is next; 0..TurnChunks-1: that chunk; TurnChunks: turn_end
	// first is the length of the first turn, in chunks
	first int
}

// loadSchedule is the pattern every session of a Load run streams.
type loadSchedule struct {
	opts           LoadOptions
	interval, stop int64 // nanoseconds
}

// advance schedules the message after the one just sent; false when the
// session is done.
func (s *loadSession) advance(sc loadSchedule) bool {
	n := sc.opts.TurnChunks
	if s.turn == 0 {
		n = s.first
	}
	chunk := func(j int) {
		if j < n && s.next < sc.stop {
			s.next += sc.interval
			if j == sc.opts.StallAfter && sc.opts.Stall > 0 {
				s.next += int64(sc.opts.Stall)
			}
			s.k = j
			return
		}
		s.k = sc.opts.TurnChunks // the turn ends one interval later
		s.next += sc.interval
	}
	switch {
	case s.k < 0:
		chunk(0)
	case s.k < sc.opts.TurnChunks:
		chunk(s.k + 1)
	default:
		// the next turn starts at once, while there is time
		s.turn++
		s.k = -1
		return s.next < sc.stop
	}
	return true
}

// loadChunk is every chunk a Load session sends.
var loadChunk = pipeline.Chunk{Text: " tok", Tokens: 1}

// sendLoad sends the messages of plan's sessions, each when it is due
// (start + next), until every session is done or ctx ends, and counts how
// late each went out. It sleeps only when nothing is due (pace; precise
// when the sender has a thread and a P of its own); the write deadline of
// a connection is moved at most once a second. Every session sends the
// same messages (turn ids t0, t1, ... and the same chunk), so each is
// framed once, as a websocket.PreparedMessage, and written as it is to
// every connection: no copy into the connection's buffer, no masking per
// write, nothing allocated per message.
func sendLoad(ctx context.Context, start time.Time, plan sendPlan, sc loadSchedule, precise bool, lags *lagHistogram, sent, turns *atomic.Int64) error {
	heap.Init(&plan)
	var msgs preparedMessages
	var n int64
	defer func() { sent.Add(n) }()
	for plan.Len() > 0 {
		ls := plan[0]
		now := int64(time.Since(start))
		if d := ls.next - now; d > 0 {
			sent.Add(n) // the counts are read as the run goes
			n = 0
			if ctx.Err() != nil {
				return nil
			}
			pace(time.Duration(d), precise)
			continue
		}
		lags.add(now - ls.next)
		part := 1 // 0 turn_start, 1 chunk, 2 turn_end
		switch {
		case ls.k < 0:
			part = 0
			turns.Add(1)
		case ls.k >= sc.opts.TurnChunks:
			part = 2
		}
		if err := ls.c.send(&msgs, start, now, ls.turn, part); err != nil {
			return fmt.Errorf("load: session %d: %w", ls.i, err)
		}
		n++
		if ls.advance(sc) {
			heap.Fix(&plan, 0)
		} else {
			heap.Pop(&plan)
		}
	}
	return nil
}

// paceQuantum is the shortest wait of a precisely paced sender: a
// message due sooner waits for those due within the quantum, so that the
// sender sleeps at most 1/paceQuantum times a second (each sleep is a
// system call and a context switch; one per message would cost more than
// the message).
const paceQuantum = 200 * time.Microsecond

// paceCoarse is the longest wait a precisely paced sender sleeps through
// on its thread; a longer one parks the goroutine (so that the garbage
// collector need not wait for it) until paceCoarse is left.
const paceCoarse = 2 * time.Millisecond

// pace waits for d: through the runtime's timers (time.Sleep, which
// wakes at the millisecond at best) or, precise, on the sender's own
// thread within paceQuantum (waitPrecise).
func pace(d time.Duration, precise bool) {
	switch {
	case !precise:
		time.Sleep(d)
	case d > paceCoarse:
		time.Sleep(d - paceCoarse)
	default:
		waitPrecise(max(d, paceQuantum))
	}
}

// send writes the message of turn and part (preparedMessages.get) at now
// (nanoseconds from start): the prepared frame through the websocket, or
// WriteFloor's bare message. The write deadline is moved at most once a
// second.
func (c *loadConn) send(msgs *preparedMessages, start time.Time, now int64, turn, part int) error {
	if c.raw != nil {
		_, err := c.raw.Write(floorMessage)
		return err
	}
	pm, err := msgs.get(turn, part)
	if err != nil {
		return err
	}
	if now >= c.deadline {
		c.deadline = now + int64(time.Second)
		c.conn.SetWriteDeadline(start.Add(time.Duration(c.deadline) + DefaultWriteTimeout))
	}
	return c.conn.WritePreparedMessage(pm)
}

// preparedMessages holds a sender's framed messages: per turn number, its
// turn_start, its chunk and its turn_end.
type preparedMessages [][3]*websocket.PreparedMessage

// get returns the message of turn (ids t0, t1, ...) and part (0
// turn_start, 1 chunk, 2 turn_end), framing it the first time.
func (m *preparedMessages) get(turn, part int) (*websocket.PreparedMessage, error) {
	for len(*m) <= turn {
		*m = append(*m, [3]*websocket.PreparedMessage{})
	}
	if pm := (*m)[turn][part]; pm != nil {
		return pm, nil
	}
	id := "t" + strconv.Itoa(turn)
	var b []byte
	switch part {
	case 0:
		b = appendMessage(nil, TypeTurnStart, id, nil, -1, "")
	case 1:
		b = appendMessage(nil, TypeChunk, id, &loadChunk, -1, "")
	default:
		b = appendMessage(nil, TypeTurnEnd, id, nil, -1, pipeline.StatusOK)
	}
	pm, err := websocket.NewPreparedMessage(websocket.TextMessage, b)
	if err != nil {
		return nil, fmt.Errorf("load: %w", err)
	}
	(*m)[turn][part] = pm
	return pm, nil
}

// lagHistogram counts send lags: in 10 µs bins below 10 ms, 1 ms bins
// below 10 s, and one bin above (a million messages a run would otherwise
// be a million samples), and keeps the largest.
type lagHistogram struct {
	bins     [lagFine + lagCoarse + 1]int64
	count    int64
	maxNanos int64
}

const (
	lagFine   = 1000  // 10 µs bins: 0-10 ms
	lagCoarse = 10000 // 1 ms bins: 0-10 s, the first 10 of them within the fine ones
)

func (h *lagHistogram) add(ns int64) {
	h.maxNanos = max(h.maxNanos, ns)
	us := max(ns, 0) / 1000
	switch {
	case us < 10*lagFine:
		h.bins[us/10]++
	case us < 1000*lagCoarse:
		h.bins[lagFine+us/1000]++
	default:
		h.bins[len(h.bins)-1]++
	}
	h.count++
}

func (h *lagHistogram) merge(o *lagHistogram) {
	for i, c := range o.bins {
		h.bins[i] += c
	}
	h.count += o.count
	h.maxNanos = max(h.maxNanos, o.maxNanos)
}

// quantile returns the lag at quantile q: the upper edge of its bin (the
// largest lag for the last).
func (h *lagHistogram) quantile(q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	rank := max(1, int64(math.Ceil(q*float64(h.count))))
	var seen int64
	for i, c := range h.bins {
		if seen += c; seen >= rank {
			switch {
			case i < lagFine:
				return time.Duration(i+1) * 10 * time.Microsecond
			case i < len(h.bins)-1:
				return time.Duration(i-lagFine+1) * time.Millisecond
			default:
				return time.Duration(h.maxNanos)
			}
		}
	}
	return time.Duration(h.maxNanos)
}

// sendPlan is a sender's sessions, the one due first on top (a heap).
type sendPlan []*loadSession

func (p sendPlan) Len() int           { return len(p) }
func (p sendPlan) Less(i, j int) bool { return p[i].next < p[j].next }
func (p sendPlan) Swap(i, j int)      { p[i], p[j] = p[j], p[i] }
func (p *sendPlan) Push(x any)        { *p = append(*p, x.(*loadSession)) }
func (p *sendPlan) Pop() any {
	old := *p
	x := old[len(old)-1]
	*p = old[:len(old)-1]
	return x
}

// Sink accepts connections on ln and reads and drops every byte they
// send, until ctx ends: the receiving end of WriteFloor.
func Sink(ctx context.Context, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			defer c.Close()
			io.Copy(io.Discard, c)
		}()
	}
}

// floorMessage is what WriteFloor writes: about a load chunk's frame.
var floorMessage = make([]byte, 60)

// Floor is what a bare loop does on this machine, the floor under a load
// run's figures (WriteFloor).
type Floor struct {
	// Rate is the most messages per second the loop writes.
	Rate float64
	// LagP99 and LagMax are how late the loop's messages went out when it
	// kept the load's schedule: the send lag no load generator goes below
	// here, however little it does per message.
	LagP99, LagMax time.Duration
}

// WriteFloor measures the floor under a load run here: a bare loop (one
// per CPU it may use) writing a 60-byte message to each of opts.Sessions
// connections to the Sink at addr (host:port over TCP, or unix:PATH; Unix
// sockets are written outside the network poller, as a load session's
// are) in turn, one write(2) each, first as fast as it can for d, then on
// the schedule of opts (as Load keeps it, for at most 3 s). On loopback
// the kernel's work for the receiving socket is done by the writer too, so
// the rate is the floor under the cost of any load generator's message:
// none sends faster on these CPUs; and the schedule's lag is the floor
// under the load's send lag.
func WriteFloor(ctx context.Context, addr string, opts LoadOptions, d time.Duration) (Floor, error) {
	var f Floor
	loadDefaults(&opts)
	cs := make([]*loadConn, 0, opts.Sessions)
	defer func() {
		for _, c := range cs {
			c.raw.Close()
		}
	}()
	for range opts.Sessions {
		c, err := dialFloor(ctx, addr)
		if err != nil {
			return f, fmt.Errorf("write floor: %w", err)
		}
		cs = append(cs, &loadConn{raw: c})
	}
	workers := min(len(cs), senderCount(opts, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	var total atomic.Int64
	var werr atomic.Pointer[error]
	start := time.Now()
	end := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			defer func() { total.Add(n) }()
			mine := cs[w*len(cs)/workers : (w+1)*len(cs)/workers]
			for time.Now().Before(end) && ctx.Err() == nil {
				for _, c := range mine {
					if _, err := c.raw.Write(floorMessage); err != nil {
						err = fmt.Errorf("write floor: %w", err)
						werr.CompareAndSwap(nil, &err)
						return
					}
				}
				n += int64(len(mine))
			}
		}()
	}
	wg.Wait()
	if p := werr.Load(); p != nil {
		return f, *p
	}
	f.Rate = float64(total.Load()) / time.Since(start).Seconds()
	opts.Duration = min(opts.Duration, 3*time.Second)
	st, err := stream(ctx, time.Now().Add(10*time.Millisecond), opts, cs)
	if err != nil {
		return f, fmt.Errorf("write floor: %w", err)
	}
	f.LagP99, f.LagMax = st.lags.quantile(0.99), time.Duration(st.lags.maxNanos)
	return f, ctx.Err()
}
