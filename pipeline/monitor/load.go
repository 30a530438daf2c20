package monitor

import (
	"bufio"
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
	// Echo says the target is an echo server (EchoHandler): every message
	// comes back and is counted there, and no events are watched.
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
}

// LoadResult is what a Load run measured.
type LoadResult struct {
	Sessions int
	// Sent is the messages the sessions sent; Received those the target
	// took (echoes counted back, or LoadOptions.Received; -1 unknown);
	// Lost the difference.
	Sent, Received, Lost int64
	// Turns is how many turns were started.
	Turns int64
	// Elapsed is the streaming time; Rate is Sent / Elapsed.
	Elapsed time.Duration
	Rate    float64
	// SendLagP99 is how late the senders were against their schedule, at
	// the 99th percentile: the load generator's own overload.
	SendLagP99 time.Duration
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

// Load drives the target with opts.Sessions concurrent sessions, each
// streaming turns of chunks at opts.Rate, and measures what arrives.
// Everything stays on the address given; use loopback.
func Load(ctx context.Context, opts LoadOptions) (LoadResult, error) {
	var res LoadResult
	orDefault(&opts.Sessions, DefaultLoadSessions)
	orDefault(&opts.Rate, DefaultLoadRate)
	orDefault(&opts.Duration, DefaultLoadDuration)
	orDefault(&opts.TurnChunks, DefaultTurnChunks)
	orDefault(&opts.DialParallel, 32)
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
		for _, c := range conns {
			if c != nil {
				select {
				case <-c.done:
				case <-time.After(2 * time.Second):
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
	interval := time.Duration(float64(time.Second) / opts.Rate)
	cpu0 := processCPU()
	all0, steal0, stealOK := machineCPU()
	var tcpu0 time.Duration
	if opts.TargetCPU != nil {
		tcpu0 = opts.TargetCPU()
	}
	start := time.Now().Add(50 * time.Millisecond)
	var sent, turns atomic.Int64
	var sendErr atomic.Pointer[error]
	// one sender per CPU the process may use, each with a schedule of many
	// sessions: a goroutine per session (or per message) would make the
	// load generator's own scheduling the bottleneck
	workers := min(opts.Sessions, max(1, runtime.GOMAXPROCS(0)))
	plans := make([]sendPlan, workers)
	for i, c := range conns {
		// spread the sessions over one interval
		ls := &loadSession{c: c, i: i, k: -1, first: opts.TurnChunks,
			next: int64(time.Duration(i) * interval / time.Duration(opts.Sessions))}
		if !opts.Aligned {
			ls.first = 1 + i*opts.TurnChunks/opts.Sessions
		}
		plans[i%workers] = append(plans[i%workers], ls)
	}
	sched := loadSchedule{opts: opts, interval: int64(interval), stop: int64(opts.Duration)}
	lagAll := make([]lagHistogram, workers)
	var wg sync.WaitGroup
	for w := range plans {
		wg.Add(1)
		go func(w int) {
			defer wg.Done()
			if err := sendLoad(ctx, start, plans[w], sched, &lagAll[w], &sent, &turns); err != nil {
				sendErr.CompareAndSwap(nil, &err)
				cancel()
			}
		}(w)
	}
	wg.Wait()
	res.Elapsed = time.Since(start)
	res.Sent, res.Turns = sent.Load(), turns.Load()

	// wait for the target to take in what was sent
	res.Received = -1
	deadline := time.Now().Add(5 * time.Second)
	for time.Now().Before(deadline) {
		got := int64(-1)
		switch {
		case opts.Echo:
			got = 0
			for _, c := range conns {
				got += c.echoes.Load()
			}
		case opts.Received != nil:
			got = opts.Received()
		}
		res.Received = got
		if got < 0 || got >= res.Sent {
			break
		}
		time.Sleep(20 * time.Millisecond)
	}
	if !opts.Echo {
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
	if res.Received >= 0 {
		res.Lost = res.Sent - res.Received
	}
	res.Rate = float64(res.Sent) / res.Elapsed.Seconds()
	res.Cores = res.CPU.Seconds() / res.Elapsed.Seconds()
	res.TargetCores = res.TargetCPU.Seconds() / res.Elapsed.Seconds()
	var lags lagHistogram
	for i := range lagAll {
		lags.merge(&lagAll[i])
	}
	res.SendLagP99 = lags.quantile(0.99)
	for _, c := range conns {
		res.Refused += c.errors.Load()
	}
	res.EventsDropped = report.Dropped
	res.Drains = len(report.Arrived)
	res.DrainLatency = summarizeLatency(report.Arrived)
	res.ReadLatency = summarizeLatency(report.Read)
	res.FireLatency = summarizeLatency(report.Fired)
	res.SentLatency = summarizeLatency(report.Sent)
	if p := sendErr.Load(); p != nil {
		return res, *p
	}
	if watchErr != nil {
		return res, fmt.Errorf("load: events subscriber: %w", watchErr)
	}
	if err := ctx.Err(); err != nil {
		return res, err
	}
	return res, nil
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
	for {
		_, data, err := w.conn.ReadMessage()
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
	echoes atomic.Int64
	errors atomic.Int64
	done   chan struct{}
	// deadline is when its write deadline is next moved, in nanoseconds
	// from the start (its sender's)
	deadline int64
}

// loadReadEvery is how often a load session reads what came back: an echo
// server's echoes of the last half second come in one read(2), not one
// each, so that reading them does not take the load generator's CPU from
// sending (125,000 echoes a second at 5,000 sessions).
const loadReadEvery = 500 * time.Millisecond

// dialPaced is dial for a load session: its connection's reads wait until
// loadReadEvery has passed since the one before.
func dialPaced(ctx context.Context, base, addr, token string) (*websocket.Conn, error) {
	nd := netDial(base)
	d := websocket.Dialer{HandshakeTimeout: 10 * time.Second,
		NetDialContext: func(ctx context.Context, network, a string) (net.Conn, error) {
			c, err := nd(ctx, network, a)
			if err != nil {
				return nil, err
			}
			return &pacedConn{Conn: c, every: loadReadEvery}, nil
		}}
	return dialWith(ctx, d, addr, token)
}

// pacedConn is a connection whose reads come at most once per every.
type pacedConn struct {
	net.Conn
	every time.Duration
	last  time.Time
}

func (c *pacedConn) Read(p []byte) (int, error) {
	if d := c.every - time.Since(c.last); d > 0 && !c.last.IsZero() {
		time.Sleep(d)
	}
	n, err := c.Conn.Read(p)
	c.last = time.Now()
	return n, err
}

// read counts what comes back: echoes, or a monitor's hello and errors.
func (c *loadConn) read() {
	defer close(c.done)
	for {
		_, data, err := c.conn.ReadMessage()
		if err != nil {
			return
		}
		c.echoes.Add(1)
		if len(data) > 16 && string(data[:16]) == `{"type":"error",` {
			c.errors.Add(1)
		}
	}
}

// EchoHandler is a bare gorilla websocket server that sends every message
// back: the ceiling a monitor's ingestion is measured against.
func EchoHandler() http.Handler {
	up := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		for {
			typ, data, err := c.ReadMessage()
			if err != nil {
				return
			}
			if err := c.WriteMessage(typ, data); err != nil {
				return
			}
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
	id   string // its turn's id
	k    int    // -1: turn_start is next; 0..TurnChunks-1: that chunk; TurnChunks: turn_end
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
// late each went out. It sleeps only when nothing is due; the write
// deadline of a connection is moved at most once a second.
func sendLoad(ctx context.Context, start time.Time, plan sendPlan, sc loadSchedule, lags *lagHistogram, sent, turns *atomic.Int64) error {
	heap.Init(&plan)
	var b []byte
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
			time.Sleep(time.Duration(d))
			continue
		}
		lags.add(now - ls.next)
		switch {
		case ls.k < 0:
			ls.id = "t" + strconv.Itoa(ls.turn)
			b = appendMessage(b[:0], TypeTurnStart, ls.id, nil, -1, "")
			turns.Add(1)
		case ls.k < sc.opts.TurnChunks:
			b = appendMessage(b[:0], TypeChunk, ls.id, &loadChunk, -1, "")
		default:
			b = appendMessage(b[:0], TypeTurnEnd, ls.id, nil, -1, pipeline.StatusOK)
		}
		if now >= ls.c.deadline {
			ls.c.deadline = now + int64(time.Second)
			ls.c.conn.SetWriteDeadline(start.Add(time.Duration(ls.c.deadline) + DefaultWriteTimeout))
		}
		if err := ls.c.conn.WriteMessage(websocket.TextMessage, b); err != nil {
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

// WriteFloor measures the most messages this process can send here: a
// bare loop (one per CPU it may use) writing a 60-byte message to each of
// conns connections to the Sink at addr (host:port over TCP, or
// unix:PATH) in turn, one write(2) each, for d. It returns the messages
// per second. On loopback the kernel's work for the receiving socket is
// done by the writer too, so this is the floor under the cost of any load
// generator's message: none sends faster on these CPUs.
func WriteFloor(ctx context.Context, addr string, conns int, d time.Duration) (float64, error) {
	var dialer net.Dialer
	network := "tcp"
	if p, ok := socketPath(addr); ok {
		network, addr = "unix", p
	}
	cs := make([]net.Conn, 0, conns)
	defer func() {
		for _, c := range cs {
			c.Close()
		}
	}()
	for range conns {
		c, err := dialer.DialContext(ctx, network, addr)
		if err != nil {
			return 0, fmt.Errorf("write floor: %w", err)
		}
		cs = append(cs, c)
	}
	workers := min(conns, max(1, runtime.GOMAXPROCS(0)))
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
					if _, err := c.Write(floorMessage); err != nil {
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
		return 0, *p
	}
	return float64(total.Load()) / time.Since(start).Seconds(), ctx.Err()
}
