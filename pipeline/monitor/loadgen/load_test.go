package loadgen

import (
	"context"
	"net"
	"net/http"
	"net/http/httptest"
	"path/filepath"
	"regexp"
	"runtime"
	"strconv"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

func TestLagHistogram(t *testing.T) {
	t.Parallel()
	var h lagHistogram
	if got := h.quantile(0.99); got != 0 {
		t.Errorf("empty: p99 %v, want 0", got)
	}
	// 98 lags of 5 µs, one of 3 ms, one of 2.5 s
	for range 98 {
		h.add(5_000)
	}
	h.add(3_000_000)
	h.add(2_500_000_000)
	tests := []struct {
		q    float64
		want time.Duration
	}{
		{0.5, 10 * time.Microsecond},
		{0.98, 10 * time.Microsecond},
		{0.99, 3010 * time.Microsecond},
		{1, 2500 * time.Millisecond}, // the bin's edge is above the max: the max
		{0.999, 2500 * time.Millisecond},
	}
	for _, tc := range tests {
		if got := h.quantile(tc.q); got != tc.want {
			t.Errorf("quantile(%v) = %v, want %v", tc.q, got, tc.want)
		}
	}
	// One lag just above a millisecond edge: every quantile is that lag, not
	// the edge above it (CI saw p99 21 ms over a max of 20.37 ms).
	var one lagHistogram
	one.add(20_365_335)
	if p99, p50 := one.quantile(0.99), one.quantile(0.5); p99 != 20365335 || p50 != p99 {
		t.Errorf("one lag of 20.365335ms: p99 %v, p50 %v, want the lag", p99, p50)
	}
	var m lagHistogram
	m.add(-1)   // a clock read twice: 0
	m.add(20e9) // beyond the last bin
	m.merge(&h)
	if m.count != 102 || m.quantile(1) != 20*time.Second || m.bins[0] != 99 {
		t.Errorf("merged: count %d, max %v, first bin %d", m.count, m.quantile(1), m.bins[0])
	}
}

// TestWriteFloor: the bare loop writes to a sink over TCP and over a Unix
// socket (outside the poller, as load sessions do), and keeps a schedule,
// reporting how late it went out.
func TestWriteFloor(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"tcp", "unix"} {
		addr := "127.0.0.1:0"
		if network == "unix" {
			addr = monitor.UnixPrefix + filepath.Join(t.TempDir(), "sink.sock")
		}
		ln, err := monitor.Listen(addr)
		if err != nil {
			t.Fatal(err)
		}
		ctx, cancel := context.WithCancel(context.Background())
		done := make(chan error, 1)
		go func() { done <- Sink(ctx, ln) }()
		target := ln.Addr().String()
		if network == "unix" {
			target = monitor.BaseURL(ln)
		}
		f, err := WriteFloor(context.Background(), target, Options{Sessions: 10, Rate: 50, Duration: 200 * time.Millisecond}, 20*time.Millisecond)
		if err != nil || f.Rate <= 0 || f.LagP99 <= 0 || f.LagMax < f.LagP99-10*time.Microsecond {
			t.Errorf("%s: WriteFloor = %+v, %v; want a rate and lags", network, f, err)
		}
		cancel()
		if err := <-done; err != nil {
			t.Errorf("%s: Sink: %v", network, err)
		}
	}
}

// BenchmarkLoadSend is the load generator's cost per message against the
// bare write(2) of one message to a socket (the write floor), on as many
// connections, over loopback TCP and over Unix sockets, in the same run:
// what the websocket framing, the schedule and the lag count add. The
// receivers run in this process too (a sink, a websocket server that reads
// and drops), on the same CPUs. At 5,000 connections every write finds its
// sockets out of the CPU's caches.
func BenchmarkLoadSend(b *testing.B) {
	dir := b.TempDir()
	for _, network := range []string{"tcp", "unix"} {
		listen := func(name string) net.Listener {
			addr := "127.0.0.1:0"
			if network == "unix" {
				addr = monitor.UnixPrefix + filepath.Join(dir, name+".sock")
			}
			ln, err := monitor.Listen(addr)
			if err != nil {
				b.Fatal(err)
			}
			return ln
		}
		wsLn := listen("ws")
		ws := &http.Server{Handler: EchoHandler()} // reads every message and drops it
		go ws.Serve(wsLn)
		defer ws.Close()
		wsBase := monitor.BaseURL(wsLn)
		sinkLn := listen("sink")
		ctx, cancel := context.WithCancel(context.Background())
		defer cancel()
		go Sink(ctx, sinkLn)
		sinkAddr := sinkLn.Addr().String()
		if network == "unix" {
			sinkAddr = monitor.BaseURL(sinkLn)
		}
		for _, sessions := range []int{100, 5000} {
			b.Run(network+"/floor/sessions="+strconv.Itoa(sessions), func(b *testing.B) {
				conns := make([]net.Conn, sessions)
				for i := range conns {
					c, err := dialFloor(context.Background(), sinkAddr)
					if err != nil {
						b.Fatal(err)
					}
					conns[i] = c
					defer c.Close()
				}
				for i := 0; b.Loop(); i++ {
					if _, err := conns[i%sessions].Write(floorMessage); err != nil {
						b.Fatal(err)
					}
				}
			})
			b.Run(network+"/sender/sessions="+strconv.Itoa(sessions), func(b *testing.B) {
				plan := make(sendPlan, sessions)
				addr, err := monitor.IngestURL(wsBase, "")
				if err != nil {
					b.Fatal(err)
				}
				for i := range plan {
					c, err := dialPaced(context.Background(), wsBase, addr, "")
					if err != nil {
						b.Fatal(err)
					}
					defer c.Close()
					plan[i] = &loadSession{c: &loadConn{conn: c}, i: i, k: -1, first: DefaultTurnChunks}
				}
				// every message due at once, each session's 1 ns after its
				// last: about b.N messages in all, never a sleep
				sc := loadSchedule{opts: Options{TurnChunks: DefaultTurnChunks}, interval: 1, stop: int64(max(b.N/sessions, 1))}
				var lags lagHistogram
				var sent, turns atomic.Int64
				b.ResetTimer()
				if err := sendLoad(context.Background(), time.Now().Add(-time.Hour), plan, sc, false, &lags, &sent, &turns); err != nil {
					b.Fatal(err)
				}
				b.StopTimer()
				b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(max(sent.Load(), 1)), "ns/msg")
			})
		}
	}
}

// countingConn counts the reads of the connection it wraps.
type countingConn struct {
	net.Conn
	reads int
}

func (c *countingConn) Read(p []byte) (int, error) {
	c.reads++
	return c.Conn.Read(p)
}

// TestPacedReads: a load session's reads come at most once per interval,
// each taking whatever came meanwhile, so a stream of replies costs a read
// per interval rather than one per echo.
func TestPacedReads(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	const msgs, every = 40, 30 * time.Millisecond
	go func() {
		c, err := ln.Accept()
		if err != nil {
			return
		}
		defer c.Close()
		for range msgs {
			if _, err := c.Write([]byte("0123456789")); err != nil {
				return
			}
			time.Sleep(2 * time.Millisecond)
		}
	}()
	c, err := net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cc := &countingConn{Conn: c}
	pc := &pacedConn{Conn: cc, every: every, paced: true}
	start := time.Now()
	buf := make([]byte, 4096)
	got := 0
	for {
		n, err := pc.Read(buf)
		got += n
		if err != nil {
			break
		}
	}
	elapsed := time.Since(start)
	if got != msgs*10 {
		t.Errorf("read %d bytes, want %d", got, msgs*10)
	}
	if limit := int(elapsed/every) + 2; cc.reads > limit || cc.reads >= msgs {
		t.Errorf("%d reads of %d messages in %v, want at most %d and fewer than the messages", cc.reads, msgs, elapsed, limit)
	}
}

// TestEchoCountsAtClose: the echo server reads every message, sends none
// back, and answers the client's close with how many it read.
func TestEchoCountsAtClose(t *testing.T) {
	t.Parallel()
	ts := httptest.NewServer(EchoHandler())
	defer ts.Close()
	c, err := dialPaced(context.Background(), ts.URL, "ws"+strings.TrimPrefix(ts.URL, "http"), "")
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	lc := &loadConn{conn: c, done: make(chan struct{})}
	go lc.read()
	const n = 37
	for i := range n {
		if err := c.WriteMessage(websocket.TextMessage, []byte(`{"type":"chunk","turn":"t`+strconv.Itoa(i)+`"}`)); err != nil {
			t.Fatal(err)
		}
	}
	if got := lc.echoed.Load(); got != 0 {
		t.Errorf("echoed %d before the close", got)
	}
	c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(websocket.CloseNormalClosure, ""), time.Now().Add(time.Second))
	<-lc.done // the server's close ends the reader (the test's deadline, if it never comes)
	if got := lc.echoed.Load(); got != n {
		t.Errorf("the echo server said it read %d messages, want %d", got, n)
	}
}

func TestPlanSenders(t *testing.T) {
	t.Parallel()
	tests := []struct {
		senders, procs int
		realtime       bool
		want           int
		dedicated      bool
	}{
		{0, 4, false, 4, false},
		{0, 4, true, 3, true}, // a P left for the rest of the process
		{1, 2, true, 1, true},
		{2, 2, true, 1, true},
		{3, 8, true, 3, true},
		{0, 1, true, 1, false}, // no P to spare: paced as any goroutine
		{2, 1, false, 2, false},
	}
	for _, tc := range tests {
		got, dedicated := planSenders(Options{Senders: tc.senders, Realtime: tc.realtime}, tc.procs)
		if got != tc.want || dedicated != tc.dedicated {
			t.Errorf("Senders %d, GOMAXPROCS %d, Realtime %v: %d senders, dedicated %v; want %d, %v",
				tc.senders, tc.procs, tc.realtime, got, dedicated, tc.want, tc.dedicated)
		}
	}
}

// TestLoadRealtimeSenders drives an echo server with real-time senders
// and checks what the run says of them against what the threads were:
// a SCHED_FIFO thread is seen during the run exactly when the result
// says real-time, and none is left once Run returns. Nothing is lost.
func TestLoadRealtimeSenders(t *testing.T) {
	t.Parallel()
	ln, err := monitor.Listen(monitor.UnixPrefix + filepath.Join(t.TempDir(), "echo.sock"))
	if err != nil {
		t.Fatal(err)
	}
	srv := &http.Server{Handler: EchoHandler()}
	go srv.Serve(ln)
	defer srv.Close()
	watch, stop := context.WithCancel(context.Background())
	seen := make(chan bool, 1)
	go func() {
		saw := false
		for watch.Err() == nil {
			saw = saw || len(fifoThreads(t)) > 0
			time.Sleep(5 * time.Millisecond)
		}
		seen <- saw
	}()
	res, err := Run(context.Background(), Options{URL: monitor.BaseURL(ln), Echo: true, Sessions: 20, Rate: 50,
		Duration: 300 * time.Millisecond, TurnChunks: 6, StallAfter: 2, Stall: 20 * time.Millisecond, Realtime: true})
	stop()
	sawFIFO := <-seen
	if err != nil || res.Sent == 0 || res.Lost != 0 {
		t.Fatalf("Run = sent %d, lost %d, %v; want messages and none lost", res.Sent, res.Lost, err)
	}
	realtime := strings.HasPrefix(res.Priority, "real-time (SCHED_FIFO")
	if !regexp.MustCompile(`^(real-time \(SCHED_FIFO 1\)|nice -20 \(real-time refused: .+\)|normal \(.+\))$`).MatchString(res.Priority) {
		t.Errorf("Priority %q", res.Priority)
	}
	if runtime.GOOS == "linux" && sawFIFO != realtime {
		t.Errorf("Priority %q, yet a SCHED_FIFO thread was seen during the run: %v", res.Priority, sawFIFO)
	}
	// each sender put its thread back as it ended (and Go ends that
	// thread, or keeps it idle if it was the process's first)
	if left := fifoThreads(t); len(left) > 0 {
		t.Errorf("threads %v still run at real-time priority after the load", left)
	}
	if procs := runtime.GOMAXPROCS(0); procs > 1 {
		want := time.Millisecond
		if precisePacing {
			want = paceQuantum
		}
		if res.Senders != 1 || res.Paced != want {
			t.Errorf("GOMAXPROCS %d: %d senders paced within %v, want 1 (a P left for the rest) within %v", procs, res.Senders, res.Paced, want)
		}
	}
}
