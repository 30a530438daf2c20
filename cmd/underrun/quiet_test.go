package main

import (
	"fmt"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/sim"
)

// TestProxyQuietByDefault: without --events the proxy says one line a
// turn on stderr, not the events (before: every speech chunk, about 33
// lines a turn); with --events - they are all there.
func TestProxyQuietByDefault(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "orig.jsonl")
	writeTrace(t, trace, sim.ConstantTurn("orig", "Well, let me think. The answer is simple: you go left at the lights.",
		20*time.Millisecond, 10*time.Millisecond, []sim.Stall{{Token: 3, Delay: 400 * time.Millisecond}}))
	mock := startServer(t, "mock", "--listen", "127.0.0.1:0", "--trace", trace)
	defer mock.stop(t)
	stderrOf := func(args ...string) string {
		proxy := startServer(t, append([]string{"proxy", "--listen", "127.0.0.1:0", "--url", mock.url}, args...)...)
		code, _, errOut := runCLI(t, "", "capture", "--url", proxy.url, "--model", "m", "--requests", "2", "--progress", "never")
		if code != exitOK && code != exitFail {
			t.Fatalf("capture: exit %d: %s", code, errOut)
		}
		if code := proxy.stop(t); code != exitOK && code != exitFail {
			t.Fatalf("proxy: exit %d: %s", code, proxy.stderr.String())
		}
		return proxy.stderr.String()
	}
	quiet := stderrOf()
	lines := strings.Split(strings.TrimSpace(quiet), "\n")
	turns := strings.Count(quiet, ": turn ended (ok): ")
	if turns != 2 || len(lines) != 3 || strings.Contains(quiet, "{") {
		t.Errorf("proxy without --events: %d turn lines in %d lines, want 2 in 3 (the start line and one a turn):\n%s", turns, len(lines), quiet)
	}
	loud := stderrOf("--events", "-")
	if n := strings.Count(loud, `"event":"chunk"`); n < 10 || strings.Count(loud, `"event":"turn"`) != 2 {
		t.Errorf("proxy --events -: %d chunk events and %d turn events, want the events:\n%s", n, strings.Count(loud, `"event":"turn"`), loud)
	}
}

// TestMonitorLoadModelQuiet: monitor --load-model, the target of a load
// test, keeps no event log unless asked: its stderr does not grow with the
// load (before: 2,515 lines for a one-second test).
func TestMonitorLoadModelQuiet(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join(dir, "load.jsonl")
	ms := time.Millisecond
	var turns []*pipeline.Turn
	for i := range 12 {
		turn := sim.ConstantTurn("t", "one two three four five six", 10*ms, 10*ms, []sim.Stall{{Token: 2, Delay: 150 * ms}})
		turn.ID, turn.Session = fmt.Sprint("t", i), fmt.Sprint("s", i)
		turns = append(turns, turn)
	}
	writeTrace(t, trace, turns...)
	stderrOf := func(args ...string) string {
		mon := startServer(t, append([]string{"monitor", "--listen", "127.0.0.1:0", "--load-model"}, args...)...)
		if code, out, errOut := runCLI(t, "", "monitor", "feed", trace, "--monitor", mon.url); code != exitOK {
			t.Fatalf("feed: exit %d: %s%s", code, out, errOut)
		}
		if code := mon.stop(t); code != exitOK {
			t.Fatalf("monitor: exit %d: %s", code, mon.stderr.String())
		}
		return mon.stderr.String()
	}
	quiet := stderrOf()
	if n := strings.Count(quiet, "\n"); n > 3 || !strings.Contains(quiet, "messages accepted") || strings.Contains(quiet, "{") {
		t.Errorf("monitor --load-model: %d lines, want the start, the note and the stop line:\n%s", n, quiet)
	}
	loud := stderrOf("--events", "-")
	if n := strings.Count(loud, `"event":"underrun"`); n < len(turns) {
		t.Errorf("monitor --load-model --events -: %d underrun events for %d stalling turns:\n%s", n, len(turns), loud)
	}
}
