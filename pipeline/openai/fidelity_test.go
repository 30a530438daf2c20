package openai

import (
	"bufio"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// fidelityTurn streams n chunks exactly every itl.
func fidelityTurn(id string, n int, itl time.Duration) *pipeline.Turn {
	t := &pipeline.Turn{ID: id, Status: pipeline.StatusOK}
	for i := range n {
		t.Chunks = append(t.Chunks, pipeline.Chunk{At: time.Duration(i+1) * itl, Text: " tok", Tokens: 1})
	}
	return t
}

// runqWait returns how long this process's threads have waited for a CPU
// while runnable (Linux schedstat; 0 elsewhere): the time other processes
// held the CPU this process wanted.
func runqWait() time.Duration {
	tasks, _ := filepath.Glob("/proc/self/task/*/schedstat")
	var total time.Duration
	for _, f := range tasks {
		b, err := os.ReadFile(f)
		if err != nil {
			continue
		}
		fields := strings.Fields(string(b))
		if len(fields) < 2 {
			continue
		}
		ns, _ := strconv.ParseInt(fields[1], 10, 64)
		total += time.Duration(ns)
	}
	return total
}

func cpuTime() time.Duration {
	var ru syscall.Rusage
	if syscall.Getrusage(syscall.RUSAGE_SELF, &ru) != nil {
		return 0
	}
	return time.Duration(ru.Utime.Nano() + ru.Stime.Nano())
}

// fidelitySetup is one fidelity run: streams concurrent streams of chunks
// chunks every itl, stream i starting i*stagger after the first (as
// streams do in steady state, rather than all in the same instant).
type fidelitySetup struct {
	streams, chunks int
	itl, stagger    time.Duration
	// readClock is the client's ReadClock; ownProcess puts the mock in a
	// process of its own (this test binary again), as `underrun mock` and
	// `underrun capture` run, rather than sharing this one's runtime.
	readClock, ownProcess bool
}

// fidelityResult is what a fidelity run measured: over every ITL, how far
// the captured ITL is from the nominal one and from the one the mock
// actually sent (its own record of each flush), in ms, sorted; the CPU
// cores the client used (and the mock, in this process or its own), and
// how much CPU time per second this process's threads spent runnable but
// waiting for a core.
type fidelityResult struct {
	vsNominal, vsSent      []float64
	clientCores, mockCores float64
	waiting                float64
}

// fidelityMockEnv makes this test binary a fidelity mock (TestMain): its
// value is "streams,chunks,itl" (itl in ns).
const fidelityMockEnv = "UNDERRUN_FIDELITY_MOCK"

// fidelityMock is the mock side of a fidelity run: it serves the turns
// and keeps when it flushed each chunk.
type fidelityMock struct {
	mock   *Mock
	sent   [][]time.Duration
	mocked sync.WaitGroup // each stream's slice is published once, when it is full
}

func newFidelityMock(streams, chunks int, itl time.Duration) *fidelityMock {
	f := &fidelityMock{sent: make([][]time.Duration, streams)}
	turns := make([]*pipeline.Turn, streams)
	for i := range turns {
		turns[i] = fidelityTurn(strconv.Itoa(i), chunks, itl)
		f.sent[i] = make([]time.Duration, chunks)
	}
	f.mocked.Add(streams)
	f.mock = &Mock{Turns: turns, OnSend: func(turn string, chunk int, at time.Duration) {
		i, _ := strconv.Atoi(turn)
		f.sent[i][chunk] = at // each stream writes only its own slice
		if chunk == chunks-1 {
			f.mocked.Done()
		}
	}}
	return f
}

// mockReport is what a fidelity mock in its own process hands back.
type mockReport struct {
	Sent [][]time.Duration
	CPU  time.Duration
}

// serveFidelityMock runs this process as a fidelity mock: it prints its
// address, serves until standard input closes, then writes its mockReport
// as JSON to standard output.
func serveFidelityMock(spec string) int {
	var streams, chunks int
	var itl time.Duration
	if _, err := fmt.Sscanf(spec, "%d,%d,%d", &streams, &chunks, &itl); err != nil {
		fmt.Fprintln(os.Stderr, "fidelity mock:", err)
		return 2
	}
	f := newFidelityMock(streams, chunks, itl)
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		fmt.Fprintln(os.Stderr, "fidelity mock:", err)
		return 1
	}
	go http.Serve(ln, f.mock)
	fmt.Println(ln.Addr())
	io.Copy(io.Discard, os.Stdin)
	f.mocked.Wait()
	if err := json.NewEncoder(os.Stdout).Encode(mockReport{Sent: f.sent, CPU: cpuTime()}); err != nil {
		return 1
	}
	return 0
}

// startFidelityMock starts a fidelity mock in a process of its own and
// returns its URL and a function that ends it and returns its report.
func startFidelityMock(tb testing.TB, streams, chunks int, itl time.Duration) (string, func() mockReport) {
	tb.Helper()
	cmd := exec.Command(os.Args[0], "-test.run=^$")
	cmd.Env = append(os.Environ(), fmt.Sprintf("%s=%d,%d,%d", fidelityMockEnv, streams, chunks, itl))
	cmd.Stderr = os.Stderr
	stdin, err := cmd.StdinPipe()
	if err != nil {
		tb.Fatal(err)
	}
	stdout, err := cmd.StdoutPipe()
	if err != nil {
		tb.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		tb.Fatal(err)
	}
	out := bufio.NewReader(stdout)
	addr, err := out.ReadString('\n')
	if err != nil {
		cmd.Process.Kill()
		cmd.Wait()
		tb.Fatalf("fidelity mock: %v", err)
	}
	return "http://" + strings.TrimSpace(addr), func() mockReport {
		stdin.Close()
		var rep mockReport
		err := json.NewDecoder(out).Decode(&rep)
		if werr := cmd.Wait(); err == nil {
			err = werr
		}
		if err != nil {
			tb.Fatalf("fidelity mock: %v", err)
		}
		return rep
	}
}

// fidelity runs the mock and the client of one setup and compares what
// each recorded.
func fidelity(tb testing.TB, fs fidelitySetup) fidelityResult {
	tb.Helper()
	var (
		url    string
		finish func() mockReport
	)
	if fs.ownProcess {
		url, finish = startFidelityMock(tb, fs.streams, fs.chunks, fs.itl)
	} else {
		f := newFidelityMock(fs.streams, fs.chunks, fs.itl)
		srv := httptest.NewServer(f.mock)
		defer srv.Close()
		url = srv.URL
		finish = func() mockReport { f.mocked.Wait(); return mockReport{Sent: f.sent} }
	}
	c := &Client{BaseURL: url, ReadClock: fs.readClock}
	got := make([]*trace.Stream, fs.streams)
	var wg sync.WaitGroup
	cpu0, wait0, wall0 := cpuTime(), runqWait(), time.Now()
	for i := range fs.streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * fs.stagger)
			req := Request{Model: "m", Prompt: Prompt{Text: "x"}, Header: map[string][]string{MockTurnHeader: {strconv.Itoa(i)}}}
			s, err := c.Stream(context.Background(), strconv.Itoa(i), "", req)
			if err != nil {
				tb.Error(err)
			}
			got[i] = s
		}()
	}
	wg.Wait()
	wall := time.Since(wall0)
	var res fidelityResult
	res.clientCores = float64(cpuTime()-cpu0) / float64(wall)
	res.waiting = float64(runqWait()-wait0) / float64(wall)
	rep := finish()
	if fs.ownProcess {
		res.mockCores = float64(rep.CPU) / float64(wall)
	}
	for i, s := range got {
		if s == nil || s.Turn.Status != pipeline.StatusOK || len(s.Turn.Chunks) != fs.chunks {
			tb.Fatalf("stream %d: %+v", i, s)
		}
		ch, sent := s.Turn.Chunks, rep.Sent[i]
		for k := 1; k < fs.chunks; k++ {
			captured := ch[k].At - ch[k-1].At
			res.vsNominal = append(res.vsNominal, pipeline.Millis((captured - fs.itl).Abs()))
			res.vsSent = append(res.vsSent, pipeline.Millis((captured - (sent[k] - sent[k-1])).Abs()))
		}
	}
	slices.Sort(res.vsNominal)
	slices.Sort(res.vsSent)
	return res
}

// TestMain lets this test binary be a fidelity mock in a process of its
// own (fidelityMockEnv).
func TestMain(m *testing.M) {
	if spec := os.Getenv(fidelityMockEnv); spec != "" {
		os.Exit(serveFidelityMock(spec))
	}
	os.Exit(m.Run())
}

// TestCaptureFidelity is a small, fast version of the fidelity benchmark:
// 20 streams every 20 ms, the mock in this process and in its own; the
// captured ITLs must match what the mock sent to within a few milliseconds
// at the median (a loose bound: test machines are shared).
func TestCaptureFidelity(t *testing.T) {
	t.Parallel()
	for _, own := range []bool{false, true} {
		res := fidelity(t, fidelitySetup{streams: 20, chunks: 15, itl: 20 * time.Millisecond, ownProcess: own})
		if p50 := pipeline.Percentile(res.vsSent, 50); p50 > 3 {
			t.Errorf("mock in its own process %v: median |captured ITL - sent ITL| = %.3f ms, want under 3 ms", own, p50)
		}
	}
}

// BenchmarkCaptureFidelity streams to many concurrent clients from the
// mock, every 20 ms, and reports how far the captured ITLs are from the
// ones the mock sent (err-sent-*) and from the nominal 20 ms (err-nom-*),
// in ms; the CPU cores the client used (client-cores) and the mock
// (mock-cores, when in its own process; in process it is counted in
// client-cores); and runq-wait-cores: how much CPU time per second the
// client process's threads spent runnable but waiting for a core, the
// measure of how busy the machine was. mock=own runs the mock in a process
// of its own, as the commands run; mock=shared in the client's process.
// clock=kernel is the client as it is (kernel receive stamps); clock=read,
// the baseline, times each read when it returns. Run with -benchtime=1x.
func BenchmarkCaptureFidelity(b *testing.B) {
	for _, fs := range []fidelitySetup{
		{streams: 100, ownProcess: true},
		{streams: 1000, ownProcess: true},
		{streams: 1000, ownProcess: true, readClock: true},
		{streams: 1000},
		{streams: 1000, readClock: true},
	} {
		fs.chunks, fs.itl, fs.stagger = 100, 20*time.Millisecond, time.Second/time.Duration(fs.streams)
		clock, mock := "kernel", "shared"
		if fs.readClock {
			clock = "read"
		}
		if fs.ownProcess {
			mock = "own"
		}
		b.Run(fmt.Sprintf("streams=%d/mock=%s/clock=%s", fs.streams, mock, clock), func(b *testing.B) {
			var all fidelityResult
			for b.Loop() {
				res := fidelity(b, fs)
				all.vsNominal = append(all.vsNominal, res.vsNominal...)
				all.vsSent = append(all.vsSent, res.vsSent...)
				all.clientCores, all.mockCores, all.waiting = res.clientCores, res.mockCores, res.waiting
			}
			slices.Sort(all.vsNominal)
			slices.Sort(all.vsSent)
			for _, p := range []float64{50, 99, 99.9} {
				q := strings.TrimSuffix(strconv.FormatFloat(p, 'f', -1, 64), ".0")
				b.ReportMetric(pipeline.Percentile(all.vsSent, p), "err-sent-p"+q+"-ms")
				b.ReportMetric(pipeline.Percentile(all.vsNominal, p), "err-nom-p"+q+"-ms")
			}
			b.ReportMetric(all.clientCores, "client-cores")
			b.ReportMetric(all.mockCores, "mock-cores")
			b.ReportMetric(all.waiting, "runq-wait-cores")
			b.ReportMetric(float64(len(all.vsSent)), "itls")
		})
	}
}
