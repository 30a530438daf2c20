//go:build unix

package main

import (
	"bytes"
	"errors"
	"os"
	"os/exec"
	"strings"
	"syscall"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// TestSIGINTStopsALongComputation: a Monte Carlo run of 100 million turns
// (an hour and more of work) gets SIGINT, as a user's Ctrl-C, and the
// process ends within seconds: the run yields to the signal between turns
// (issue 45: a computation that never looked at its context ignored
// SIGINT and SIGTERM).
func TestSIGINTStopsALongComputation(t *testing.T) {
	t.Parallel()
	for _, sig := range []syscall.Signal{syscall.SIGINT, syscall.SIGTERM} {
		cmd := exec.Command(os.Args[0], "sim", "tpot-50ms", "--monte-carlo", "100000000", "--turns", "1")
		cmd.Env = append(os.Environ(), "UNDERRUN_TEST_EXEC=1")
		var stderr bytes.Buffer
		cmd.Stderr = &stderr
		if err := cmd.Start(); err != nil {
			t.Fatal(err)
		}
		done := make(chan error, 1)
		go func() { done <- cmd.Wait() }()
		select {
		case err := <-done:
			t.Fatalf("%v: the run ended before the signal: %v, %s", sig, err, stderr.String())
		case <-time.After(time.Second):
		}
		if err := cmd.Process.Signal(sig); err != nil {
			t.Fatal(err)
		}
		select {
		case err := <-done:
			var exit *exec.ExitError
			if err != nil && !errors.As(err, &exit) {
				t.Errorf("%v: %v", sig, err)
			}
			if exit != nil && !exit.Exited() {
				t.Errorf("%v: the process was killed by the signal (%v), not stopped by it", sig, err)
			}
		case <-time.After(30 * time.Second):
			cmd.Process.Kill()
			<-done
			t.Fatalf("%v: still running 30 s after the signal; stderr: %s", sig, stderr.String())
		}
	}
}

// TestSecondSignalStopsAtOnce: the monitor, told to give its sessions ten
// minutes to close, waits for an open session after SIGINT; a second
// SIGINT ends it at once, with exit status 130, as a shell's Ctrl-C.
func TestSecondSignalStopsAtOnce(t *testing.T) {
	t.Parallel()
	mon := startMonitorProcess(t, "--events", "", "--grace", "10m")
	ws, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(mon.url, "http")+"/ingest?session=s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer ws.Close()
	if err := ws.WriteMessage(websocket.TextMessage, []byte(`{"type":"turn_start","turn":"t1"}`)); err != nil {
		t.Fatal(err)
	}
	waitAccepted(t, mon.url, 1)
	if err := mon.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mon.done:
		t.Fatalf("the monitor did not wait for its open session: %s", mon.rest.String())
	case <-time.After(time.Second):
	}
	if err := mon.cmd.Process.Signal(syscall.SIGINT); err != nil {
		t.Fatal(err)
	}
	select {
	case <-mon.done:
	case <-time.After(30 * time.Second):
		t.Fatal("still running 30 s after the second SIGINT")
	}
	err = mon.cmd.Wait()
	var exit *exec.ExitError
	if !errors.As(err, &exit) || exit.ExitCode() != exitInterrupted {
		t.Errorf("exit %v, want status %d", err, exitInterrupted)
	}
	if !strings.Contains(mon.rest.String(), "again: stopped at once") {
		t.Errorf("stderr does not say why it stopped: %s", mon.rest.String())
	}
}
