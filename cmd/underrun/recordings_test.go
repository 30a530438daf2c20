//go:build unix

package main

import (
	"bytes"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// sseUpstream is an OpenAI-compatible server streaming the same answer of
// n words to every request.
func sseUpstream(t *testing.T, n int) (*httptest.Server, []byte) {
	t.Helper()
	var body bytes.Buffer
	for k := range n {
		body.WriteString(testkit.ChatChunk(`{"content":" word` + strings.Repeat("s", k%7) + `"}`))
	}
	body.WriteString(testkit.Done)
	sse := body.Bytes()
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "text/event-stream")
		for rest := sse; len(rest) > 0; {
			k := min(len(rest), 512)
			w.Write(rest[:k])
			w.(http.Flusher).Flush()
			rest = rest[k:]
		}
	}))
	t.Cleanup(srv.Close)
	return srv, sse
}

// waitStderr waits until the command's stderr holds want.
func waitStderr(t *testing.T, s *server, want string) {
	t.Helper()
	for !strings.Contains(s.stderr.String(), want) {
		select {
		case code := <-s.code:
			t.Fatalf("exited %d before saying %q: %s", code, want, s.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// TestProxyRecordingToDevFull: the proxy records its trace, its SSE
// capture and its event log to /dev/full (issue 45: it served and never
// said). Each recording's failure is said on stderr once, while the proxy
// runs; every byte still reaches the client; Ctrl-C prints the report and
// exits 2.
func TestProxyRecordingToDevFull(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	upstream, sse := sseUpstream(t, 60)
	proxy := startServer(t, "proxy", "--listen", "127.0.0.1:0", "--url", upstream.URL,
		"-o", "/dev/full", "--sse", "/dev/full", "--events", "/dev/full")
	for range 3 {
		resp, err := http.Post(proxy.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, sse) {
			t.Fatalf("the client got %d bytes (%v), not the %d the server sent", len(got), err, len(sse))
		}
	}
	for _, flag := range []string{"-o /dev/full", "--sse /dev/full", "--events /dev/full"} {
		waitStderr(t, proxy, "underrun: "+flag+": ")
	}
	code := proxy.stop(t)
	stderr := proxy.stderr.String()
	if code != exitUsage {
		t.Errorf("exit %d, want %d: %s", code, exitUsage, stderr)
	}
	for _, flag := range []string{"-o /dev/full", "--sse /dev/full", "--events /dev/full"} {
		if n := strings.Count(stderr, flag+": write /dev/full: no space left on device (the file holds the first 0 bytes); nothing more"); n != 1 {
			t.Errorf("%s: said %d times as it failed, want once: %s", flag, n, stderr)
		}
	}
	if !strings.Contains(stderr, "no space left on device") || !strings.Contains(stderr, "the run goes on") {
		t.Errorf("stderr does not say what failed and what goes on: %s", stderr)
	}
	if !strings.Contains(proxy.stdout.String(), "verdict:") {
		t.Errorf("no report after the failed recording:\n%s", proxy.stdout.String())
	}
}

// fifoFailingAfter makes a named pipe whose reader takes n bytes and
// closes: the writer's next write fails (EPIPE), as a disk that fills
// after n bytes does. It returns the pipe's path and what the reader got.
func fifoFailingAfter(t *testing.T, n int) (string, <-chan []byte) {
	t.Helper()
	path := filepath.Join(t.TempDir(), "fifo")
	if err := syscall.Mkfifo(path, 0o600); err != nil {
		t.Skipf("no named pipes here: %v", err)
	}
	got := make(chan []byte, 1)
	go func() {
		f, err := os.Open(path) // waits for the writer
		if err != nil {
			got <- nil
			return
		}
		b, _ := io.ReadAll(io.LimitReader(f, int64(n)))
		f.Close()
		got <- b
	}()
	return path, got
}

// TestCaptureRecordingFailsAfterN: capture's trace goes to a file that
// takes 2000 bytes (and the pipe's buffer) and then fails, in the middle
// of the run. The failure
// is said once, on stderr, at once; the run goes on (every request is
// made and reported) and exits 2.
func TestCaptureRecordingFailsAfterN(t *testing.T) {
	t.Parallel()
	// 6 answers of 400 chunks: a trace larger than the pipe's own buffer,
	// which takes what the reader leaves until it is full
	upstream, _ := sseUpstream(t, 400)
	fifo, got := fifoFailingAfter(t, 2000)
	code, out, stderr := runCLI(t, "", "capture", "--url", upstream.URL, "--model", "m", "--requests", "6", "-o", fifo)
	if code != exitUsage {
		t.Errorf("exit %d, want %d: %s", code, exitUsage, stderr)
	}
	if n := strings.Count(stderr, "; nothing more is written to it"); n != 1 {
		t.Errorf("the failure was said %d times, want once: %s", n, stderr)
	}
	if !strings.Contains(stderr, "6 requests") || !strings.Contains(out, "verdict:") {
		t.Errorf("the run did not go on to its report:\nstderr %s\nstdout %s", stderr, out)
	}
	if strings.Contains(stderr, "trace written") {
		t.Errorf("capture says the trace was written: %s", stderr)
	}
	if b := <-got; len(b) != 2000 {
		t.Errorf("the reader got %d bytes, want 2000", len(b))
	}
}

// TestMonitorRecordingToDevFull: the monitor records to /dev/full with no
// event log; the failure is said on stderr while it runs, and it exits 2
// when stopped (issue 45: it said so only at shutdown).
func TestMonitorRecordingToDevFull(t *testing.T) {
	t.Parallel()
	if _, err := os.Stat("/dev/full"); err != nil {
		t.Skip("no /dev/full on this system")
	}
	mon := startServer(t, "monitor", "--listen", "127.0.0.1:0", "--events", "", "--record", "/dev/full")
	waitStderr(t, mon, "underrun: --record /dev/full: ")
	if code := mon.stop(t); code != exitUsage {
		t.Errorf("exit %d, want %d: %s", code, exitUsage, mon.stderr.String())
	}
	if n := strings.Count(mon.stderr.String(), "--record /dev/full: "); n != 2 {
		t.Errorf("said %d times; want once at once and once as the exit's reason: %s", n, mon.stderr.String())
	}
}
