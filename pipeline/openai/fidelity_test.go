package openai

import (
	"context"
	"fmt"
	"net/http/httptest"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
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

// fidelity runs streams concurrent streams of chunks chunks every itl from
// the mock, captured by the client, and returns, over every ITL, how far
// the captured ITL is from the nominal one and from the one the mock
// actually sent (its own record of each flush), and the CPU cores used.
// Stream i starts i*stagger after the first, as streams do in steady
// state, rather than all in the same instant.
func fidelity(tb testing.TB, streams, chunks int, itl, stagger time.Duration) (vsNominal, vsSent []float64, cores, waiting float64) {
	tb.Helper()
	turns := make([]*pipeline.Turn, streams)
	sent := make([][]time.Duration, streams)
	for i := range turns {
		turns[i] = fidelityTurn(strconv.Itoa(i), chunks, itl)
		sent[i] = make([]time.Duration, chunks)
	}
	var mocked sync.WaitGroup // each stream's slice is published once, when it is full
	mocked.Add(streams)
	m := &Mock{Turns: turns, OnSend: func(turn string, chunk int, at time.Duration) {
		i, _ := strconv.Atoi(turn)
		sent[i][chunk] = at // each stream writes only its own slice
		if chunk == chunks-1 {
			mocked.Done()
		}
	}}
	srv := httptest.NewServer(m)
	defer srv.Close()
	c := &Client{BaseURL: srv.URL}
	got := make([]*Stream, streams)
	var wg sync.WaitGroup
	cpu0, wait0, wall0 := cpuTime(), runqWait(), time.Now()
	for i := range streams {
		wg.Add(1)
		go func() {
			defer wg.Done()
			time.Sleep(time.Duration(i) * stagger)
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
	cores = float64(cpuTime()-cpu0) / float64(wall)
	waiting = float64(runqWait()-wait0) / float64(wall)
	mocked.Wait()
	for i, s := range got {
		if s == nil || s.Turn.Status != pipeline.StatusOK || len(s.Turn.Chunks) != chunks {
			tb.Fatalf("stream %d: %+v", i, s)
		}
		ch := s.Turn.Chunks
		for k := 1; k < chunks; k++ {
			captured := ch[k].At - ch[k-1].At
			vsNominal = append(vsNominal, pipeline.Millis((captured - itl).Abs()))
			vsSent = append(vsSent, pipeline.Millis((captured - (sent[i][k] - sent[i][k-1])).Abs()))
		}
	}
	slices.Sort(vsNominal)
	slices.Sort(vsSent)
	return vsNominal, vsSent, cores, waiting
}

// TestCaptureFidelity is a small, fast version of the fidelity benchmark:
// 20 streams every 20 ms; the captured ITLs must match what the mock sent
// to within a few milliseconds at the median (a loose bound: test machines
// are shared).
func TestCaptureFidelity(t *testing.T) {
	t.Parallel()
	_, vsSent, _, _ := fidelity(t, 20, 15, 20*time.Millisecond, 0)
	if p50 := pipeline.Percentile(vsSent, 50); p50 > 3 {
		t.Errorf("median |captured ITL - sent ITL| = %.3f ms, want under 3 ms", p50)
	}
}

// BenchmarkCaptureFidelity streams to many concurrent clients from the
// mock, every 20 ms, and reports how far the captured ITLs are from the
// ones the mock sent (err-sent-*) and from the nominal 20 ms (err-nom-*),
// in ms, the CPU cores the mock and the capture used together, and
// runq-wait-cores: how much CPU time per second the process's threads
// spent runnable but waiting for a core (other processes held it), the
// measure of how busy the machine was. Run with -benchtime=1x.
func BenchmarkCaptureFidelity(b *testing.B) {
	for _, streams := range []int{100, 1000} {
		b.Run(fmt.Sprintf("streams=%d", streams), func(b *testing.B) {
			var nom, snt []float64
			var cores, waiting float64
			for b.Loop() {
				n, s, c, w := fidelity(b, streams, 100, 20*time.Millisecond, time.Second/time.Duration(streams))
				nom, snt, cores, waiting = append(nom, n...), append(snt, s...), c, w
			}
			slices.Sort(nom)
			slices.Sort(snt)
			for _, p := range []float64{50, 99, 99.9} {
				q := strings.TrimSuffix(strconv.FormatFloat(p, 'f', -1, 64), ".0")
				b.ReportMetric(pipeline.Percentile(snt, p), "err-sent-p"+q+"-ms")
				b.ReportMetric(pipeline.Percentile(nom, p), "err-nom-p"+q+"-ms")
			}
			b.ReportMetric(cores, "cpu-cores")
			b.ReportMetric(waiting, "runq-wait-cores")
			b.ReportMetric(float64(len(snt)), "itls")
		})
	}
}
