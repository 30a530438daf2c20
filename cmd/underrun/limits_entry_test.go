//go:build unix

package main

import (
	"bytes"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// hostileUpstream answers its requests in turn with more chunks than a
// turn may hold and with a single 2 MB delta (issue 45: capture said
// "trace written" and analyze then refused the file).
func hostileUpstream(t *testing.T) (*httptest.Server, [][]byte) {
	t.Helper()
	var many bytes.Buffer
	for range trace.MaxTurnTokens + 8000 {
		many.WriteString(testkit.ChatChunk(`{"content":" w"}`))
	}
	many.WriteString(testkit.Done)
	huge := []byte(testkit.ChatChunk(`{"content":"Hi"}`) + testkit.ChatChunk(`{"content":"`+strings.Repeat("a", 2<<20)+`"}`) + testkit.Done)
	bodies := [][]byte{many.Bytes(), huge}
	var n atomic.Int64
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		io.Copy(io.Discard, r.Body)
		w.Header().Set("Content-Type", "text/event-stream")
		w.Write(bodies[(n.Add(1)-1)%2])
	}))
	t.Cleanup(srv.Close)
	return srv, bodies
}

// runProcess runs underrun (this test binary) as a process of its own:
// the test process stays small, as another test measuring a child's
// memory needs (a child starts as a copy of it).
func runProcess(t *testing.T, args ...string) (code int, stderr string) {
	t.Helper()
	cmd := exec.Command(os.Args[0], args...)
	cmd.Env = append(os.Environ(), "UNDERRUN_TEST_EXEC=1")
	var errOut strings.Builder
	cmd.Stderr = &errOut
	err := cmd.Run()
	var exit *exec.ExitError
	if err != nil && !errors.As(err, &exit) {
		t.Fatal(err)
	}
	return cmd.ProcessState.ExitCode(), errOut.String()
}

// TestRecordingsReadBackPastTheLimits: capture and proxy record streams
// past the limits, and the monitor is sent a chunk of 2147483647 tokens;
// each stream ends as a failed turn that says why, the proxy forwards
// every byte, and analyze reads every file the writers wrote. Each
// command runs as a process of its own.
func TestRecordingsReadBackPastTheLimits(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	upstream, bodies := hostileUpstream(t)

	capTrace, capSSE := filepath.Join(dir, "capture.jsonl"), filepath.Join(dir, "capture.sse.jsonl")
	code, stderr := runProcess(t, "capture", "--url", upstream.URL, "--model", "m", "--requests", "2",
		"-o", capTrace, "--sse", capSSE, "--progress", "never")
	if code != exitFail || !strings.Contains(stderr, "2 failed") || !strings.Contains(stderr, "refused at the limits") {
		t.Errorf("capture: exit %d, stderr %s; want both requests failed at the limits", code, stderr)
	}

	proxyTrace, proxySSE := filepath.Join(dir, "proxy.jsonl"), filepath.Join(dir, "proxy.sse.jsonl")
	proxy := startProcess(t, "proxy", "--listen", "127.0.0.1:0", "--url", upstream.URL, "-o", proxyTrace, "--sse", proxySSE, "--events", "")
	for _, want := range bodies {
		resp, err := http.Post(proxy.url+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
		if err != nil {
			t.Fatal(err)
		}
		got, err := io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil || !bytes.Equal(got, want) {
			t.Errorf("through the proxy: %d bytes (%v), want the %d the server sent", len(got), err, len(want))
		}
	}
	if code := stopProcess(t, proxy); code != exitFail {
		t.Errorf("proxy: exit %d, want %d (two failed turns): %s", code, exitFail, proxy.rest.String())
	}

	rec := filepath.Join(dir, "monitor.jsonl")
	mon := startMonitorProcess(t, "--events", "", "--record", rec)
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(mon.url, "http")+"/ingest?session=s", nil)
	if err != nil {
		t.Fatal(err)
	}
	var refusal string
	for _, m := range []string{`{"type":"turn_start","turn":"t1"}`, `{"type":"chunk","turn":"t1","text":"Hi","tokens":2147483647}`,
		`{"type":"chunk","turn":"t1","text":"Hi"}`, `{"type":"turn_end","turn":"t1"}`} {
		if err := ws.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
			t.Fatal(err)
		}
	}
	for !strings.Contains(refusal, `"error"`) {
		_, b, err := ws.ReadMessage()
		if err != nil {
			t.Fatal(err)
		}
		refusal = string(b)
	}
	if !strings.Contains(refusal, `field \"tokens\": want a count from 0 to 262144 tokens, got 2147483647`) {
		t.Errorf("the monitor answered %s", refusal)
	}
	ws.Close()
	if code := stopProcess(t, mon); code != exitOK {
		t.Errorf("monitor: exit %d: %s", code, mon.rest.String())
	}

	for _, f := range []string{capTrace, capSSE, proxyTrace, proxySSE, rec} {
		// analyze reads it: exit 0 or 1, never 2 for bad input
		if code, stderr := runProcess(t, "analyze", "--max-tpot=false", f); code != exitOK && code != exitFail {
			t.Errorf("analyze %s: exit %d: %s", filepath.Base(f), code, stderr)
		}
	}
	for _, f := range []string{capTrace, capSSE, proxyTrace, proxySSE} {
		turns := readTurns(t, f)
		if len(turns) != 2 {
			t.Errorf("%s: %d turns, want 2", filepath.Base(f), len(turns))
			continue
		}
		for _, tn := range turns {
			if tn.Status != "error" || !strings.Contains(tn.Error, "refused at the limits") {
				t.Errorf("%s: turn %s: %s %.200q", filepath.Base(f), tn.ID, tn.Status, tn.Error)
			}
		}
	}
}

// stopProcess sends a serving process SIGINT, as Ctrl-C, and returns its
// exit status.
func stopProcess(t *testing.T, p *monitorProcess) int {
	t.Helper()
	if err := p.cmd.Process.Signal(os.Interrupt); err != nil {
		t.Fatal(err)
	}
	<-p.done
	p.cmd.Wait()
	return p.cmd.ProcessState.ExitCode()
}
