package main

import (
	"context"
	"errors"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"runtime/debug"
	"slices"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/monitor/loadgen"
)

// TestMain lets a test start this test binary as the underrun command
// (UNDERRUN_TEST_EXEC=1), to send it real signals or measure its memory
// (UNDERRUN_TEST_PEAK=FILE: see execPeak). Commands run inside
// the test process leave its garbage collector as it is: GOGC set, the
// monitor does not pace it (paceGC).
func TestMain(m *testing.M) {
	if os.Getenv("UNDERRUN_TEST_EXEC") == "1" {
		code := runMain()
		if file := os.Getenv("UNDERRUN_TEST_PEAK"); file != "" {
			writePeak(file)
		}
		os.Exit(code)
	}
	if os.Getenv("GOGC") == "" {
		os.Setenv("GOGC", "100") // Go's default: the runtime is unchanged
	}
	os.Exit(m.Run())
}

// TestPaceGC: the monitor's collector pacing applies unless the
// environment has its own, and 0 leaves Go's default.
func TestPaceGC(t *testing.T) {
	// not parallel: it changes the process's collector and puts it back
	percent, limit := debug.SetGCPercent(100), debug.SetMemoryLimit(math.MaxInt64)
	defer func() { debug.SetGCPercent(percent); debug.SetMemoryLimit(limit) }()
	env := func(kv ...string) func(string) string {
		return func(k string) string {
			for i := 0; i+1 < len(kv); i += 2 {
				if kv[i] == k {
					return kv[i+1]
				}
			}
			return ""
		}
	}
	tests := []struct {
		name        string
		mib         int
		getenv      func(string) string
		wantPercent int
		wantLimit   int64
	}{
		{"paced", 64, env(), -1, 64 << 20},
		{"off", 0, env(), 100, math.MaxInt64},
		{"GOGC set", 64, env("GOGC", "200"), 100, math.MaxInt64},
		{"GOMEMLIMIT set", 64, env("GOMEMLIMIT", "1GiB"), 100, math.MaxInt64},
	}
	for _, tt := range tests {
		debug.SetGCPercent(100)
		debug.SetMemoryLimit(math.MaxInt64)
		paceGC(tt.mib, tt.getenv)
		if got := debug.SetGCPercent(100); got != tt.wantPercent {
			t.Errorf("%s: GC percent %d, want %d", tt.name, got, tt.wantPercent)
		}
		if got := debug.SetMemoryLimit(-1); got != tt.wantLimit {
			t.Errorf("%s: memory limit %d, want %d", tt.name, got, tt.wantLimit)
		}
	}
}

// TestMonitorFeedRecord runs the monitor, feeds it a trace with a stall at
// its real pace, stops it as SIGTERM would, and checks that the recording
// holds every turn and that analyze finds the same underruns in it as in
// the original.
func TestMonitorFeedRecord(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orig, rec, events := filepath.Join(dir, "orig.jsonl"), filepath.Join(dir, "rec.jsonl"), filepath.Join(dir, "events.jsonl")
	writeTrace(t, orig, fourWordTurn("t1", "kitchen"), fourWordTurn("t2", "car"))
	model := []string{"--chunking", "token", "--token-audio", "80ms", "--tts-latency", "0", "--rtf", "0"}
	srv := startServer(t, append([]string{"monitor", "--listen", "127.0.0.1:0", "--record", rec, "--events", events}, model...)...)
	code, out, errOut := runCLI(t, "", "monitor", "feed", orig, "--monitor", srv.url)
	if code != exitOK || !strings.Contains(out, "fed 2 turns of 2 sessions: 12 messages, 0 refused") {
		t.Fatalf("feed: exit %d, %q, %s", code, out, errOut)
	}
	if code := srv.stop(t); code != exitOK {
		t.Fatalf("monitor exit %d: %s", code, srv.stderr.String())
	}
	turns := readTurns(t, rec)
	if len(turns) != 2 {
		t.Fatalf("recording holds %d turns, want 2", len(turns))
	}
	for _, tn := range turns {
		if want := tn.Session + "/t"; !strings.HasPrefix(tn.ID, want) || len(tn.Chunks) != 4 || tn.Status != pipeline.StatusOK {
			t.Errorf("recorded turn %s (session %s): %d chunks, %s", tn.ID, tn.Session, len(tn.Chunks), tn.Status)
		}
	}
	analyze := func(path string) string {
		code, out, errOut := runCLI(t, "", append([]string{"analyze", "--list", "0", "--max-tpot=false", path}, model...)...)
		if code != exitOK && code != exitFail {
			t.Fatalf("analyze %s: exit %d: %s", path, code, errOut)
		}
		i := strings.Index(out, "underrun")
		return out[i:]
	}
	// the same report, but for the recorded turn names (SESSION/TURN)
	if a, b := analyze(orig), strings.NewReplacer("kitchen/", "", "car/", "").Replace(analyze(rec)); a != b {
		t.Errorf("the recording analyzes differently:\noriginal:\n%s\nrecording:\n%s", a, b)
	}
	log, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"event":"underrun_started"`, `"event":"underrun"`, `"event":"turn"`, `"session":"kitchen"`, `"event":"session_open"`} {
		if !strings.Contains(string(log), want) {
			t.Errorf("event log lacks %s", want)
		}
	}
}

func TestMonitorUsage(t *testing.T) {
	t.Parallel()
	tests := []usageCase{
		{[]string{"monitor", "--listen", "0.0.0.0:0"}, "not a loopback address"},
		{[]string{"monitor", "--listen", "nonsense"}, "--listen"},
		{[]string{"monitor", "--max-rate", "0"}, "must be positive"},
		{[]string{"monitor", "--gc-memory", "-1"}, "--gc-memory"},
		{[]string{"monitor", "feed", "x.jsonl"}, "--monitor"},
		{[]string{"monitor", "feed", "/nonexistent.jsonl", "--monitor", "http://127.0.0.1:1"}, "no such file"},
		{[]string{"monitor", "load", "--sessions", "0"}, "must be positive"},
		{[]string{"monitor", "load", "--network", "udp"}, `--network "udp": want unix or tcp`},
		{[]string{"monitor", "load", "--priority", "high"}, `--priority "high": want auto, realtime or normal`},
	}
	checkUsage(t, tests)
}

func TestMonitorLoadSmall(t *testing.T) {
	t.Parallel()
	for _, network := range []string{"unix", "tcp"} {
		t.Run(network, func(t *testing.T) {
			t.Parallel()
			testMonitorLoadSmall(t, network)
		})
	}
}

func testMonitorLoadSmall(t *testing.T, network string) {
	code, out, errOut := runCLI(t, "", "monitor", "load", "--sessions", "20", "--duration", "600ms", "--turn-chunks", "12", "--stall-after", "4", "--in-process",
		"--network", network)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if via := map[string]string{"unix": "over Unix sockets", "tcp": "over loopback TCP"}[network]; !strings.Contains(out, via) {
		t.Errorf("the load does not say it ran %s:\n%s", via, out)
	}
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`\necho +(\d+) +(\d+) +0 `),
		regexp.MustCompile(`\nmonitor +(\d+) +(\d+) +0 +\d+ +\S+ +[1-9]\d* `), // no loss, some drains
	} {
		m := want.FindStringSubmatch(out)
		if m == nil || m[1] != m[2] {
			t.Errorf("output lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "refused") {
		t.Errorf("the monitor refused messages:\n%s", out)
	}
}

// TestReplayToMonitor feeds a trace into a running monitor with
// `replay --to`, and finds its turns in the monitor's recording.
func TestReplayToMonitor(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orig, rec := filepath.Join(dir, "orig.jsonl"), filepath.Join(dir, "rec.jsonl")
	ms := time.Millisecond
	writeTrace(t, orig, &pipeline.Turn{ID: "t1", Session: "desk", Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{
		{At: 20 * ms, Text: "Hi", Tokens: 1}, {At: 40 * ms, Text: " there.", Tokens: 1},
	}})
	srv := startServer(t, "monitor", "--listen", "127.0.0.1:0", "--record", rec)
	code, out, errOut := runCLI(t, "", "replay", orig, "--monitor", srv.url)
	if code != exitOK || !strings.Contains(out, "fed 1 turns of 1 sessions: 4 messages, 0 refused") {
		t.Fatalf("replay --to: exit %d, %q, %s", code, out, errOut)
	}
	if code := srv.stop(t); code != exitOK {
		t.Fatalf("monitor exit %d: %s", code, srv.stderr.String())
	}
	turns := readTurns(t, rec)
	if len(turns) != 1 || turns[0].ID != "desk/t1" || len(turns[0].Chunks) != 2 {
		t.Fatalf("recording holds %+v", turns)
	}
	if code, _, errOut := runCLI(t, "", "replay", orig, "--monitor", srv.url, "--speed", "2"); code != exitUsage || !strings.Contains(errOut, "drop --speed") {
		t.Errorf("--to with --speed: exit %d, %s", code, errOut)
	}
}

// TestMonitorLoadOwnProcesses runs the load as a user does: the echo
// server, the monitor and the events subscriber each in a process of its
// own (this test binary as the underrun command).
func TestMonitorLoadOwnProcesses(t *testing.T) {
	// not parallel: the environment tells the children to be the command
	t.Setenv("UNDERRUN_TEST_EXEC", "1")
	cpus := loadgen.AllowedCPUs(os.Getpid())
	procs := runtime.GOMAXPROCS(0)
	rec := filepath.Join(t.TempDir(), "load.jsonl")
	code, out, errOut := runCLI(t, "", "monitor", "load", "--sessions", "20", "--duration", "800ms", "--turn-chunks", "12", "--stall-after", "4",
		"--record", rec)
	if code != exitOK {
		t.Fatalf("exit %d: %s%s", code, out, errOut)
	}
	if !regexp.MustCompile(`its events subscriber connected to http://127\.0\.0\.1:\d+, over loopback TCP`).MatchString(out) {
		t.Errorf("the events subscriber did not connect over TCP:\n%s", out)
	}
	if !strings.Contains(out, "each target in its own process") {
		t.Errorf("not run in processes of their own:\n%s", out)
	}
	if !regexp.MustCompile(`write floor: a bare loop on the load's CPUs writes [1-9]\d* messages/s, one write\(2\) each, to 20 connections over Unix sockets in turn` +
		`(?s).*keeping this load's schedule, its writes are late by p99 \d+\.\d+ms, max \d+\.\d+ms`).MatchString(out) {
		t.Errorf("no write floor:\n%s", out)
	}
	// on Linux with two CPUs or more, the targets ran on CPUs of their own
	// (startOn checks each child's) and the load on the others, a sender
	// per CPU at real-time priority where this process may ask for it,
	// and this process got its CPUs back
	if _, lc, ok := loadgen.CPUSplit(); ok {
		if !strings.Contains(out, "CPUs: each target on [") {
			t.Errorf("the targets did not get CPUs of their own:\n%s", out)
		}
		senders := regexp.MustCompile(`\n  load: ` + plural(len(lc), "sender") +
			` at (real-time \(SCHED_FIFO 1\)|nice -20 \(real-time refused: [^)]+\)|normal \(real-time refused: [^)]+\)) priority, paced within 0\.20ms; send lag p50 \d+\.\d\dms, p99 \d+\.\d\dms, max \d+\.\d\dms\n`)
		if got := senders.FindAllString(out, -1); len(got) != 2 {
			t.Errorf("the echo and monitor runs do not both say their senders ran at real-time priority (or why not):\n%s", out)
		}
	}
	if got := loadgen.AllowedCPUs(os.Getpid()); !slices.Equal(got, cpus) || runtime.GOMAXPROCS(0) != procs {
		t.Errorf("after the load this process runs on CPUs %v with GOMAXPROCS %d, want %v and %d", got, runtime.GOMAXPROCS(0), cpus, procs)
	}
	m := regexp.MustCompile(`\nmonitor +(\d+) +(\d+) +0 +\d+ +\S+ +([1-9]\d*) `).FindStringSubmatch(out)
	if m == nil || m[1] != m[2] {
		t.Fatalf("no loss and some drains seen by the subscriber process, want both:\n%s", out)
	}
	// the monitor recorded every message it took
	records := 0
	for _, tn := range readTurns(t, rec) {
		records += 1 + len(tn.Chunks)
		if tn.Status != pipeline.StatusIncomplete {
			records++ // its end
		}
	}
	if strconv.Itoa(records) != m[2] {
		t.Errorf("the monitor's recording holds %d messages, it received %s", records, m[2])
	}
}

// TestMonitorListenUnixKeepsFile: --listen unix:PATH over a file that is
// not a socket is refused, and the file is left as it was.
func TestMonitorListenUnixKeepsFile(t *testing.T) {
	t.Parallel()
	file := filepath.Join(t.TempDir(), "notes.txt")
	if err := os.WriteFile(file, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	code, _, errOut := runCLI(t, "", "monitor", "--listen", "unix:"+file)
	if code != exitUsage || !strings.Contains(errOut, "not a socket") {
		t.Errorf("exit %d, %q; want 2 and a refusal", code, errOut)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Errorf("the file now holds %q", b)
	}
}

// TestMonitorListensOnTwo: a monitor given two --listen addresses serves
// the same sessions on both: a trace fed over the Unix socket is counted
// on the /metrics of the TCP address, and the socket goes when it stops.
func TestMonitorListensOnTwo(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	sock := filepath.Join(dir, "m.sock")
	srv := startServer(t, "monitor", "--listen", "unix:"+sock, "--listen", "127.0.0.1:0", "--events", "")
	if !strings.Contains(srv.stderr.String(), "underrun monitor on unix:"+sock) {
		t.Fatalf("the monitor does not say it listens on the socket:\n%s", srv.stderr.String())
	}
	orig := filepath.Join(dir, "t.jsonl")
	writeTrace(t, orig, &pipeline.Turn{ID: "t1", Session: "desk", Status: pipeline.StatusOK,
		Chunks: []pipeline.Chunk{{At: 5 * time.Millisecond, Text: "Hello", Tokens: 1}, {At: 10 * time.Millisecond, Text: " there.", Tokens: 1}}})
	if code, out, errOut := runCLI(t, "", "monitor", "feed", orig, "--monitor", "unix:"+sock); code != exitOK {
		t.Fatalf("feed over the socket: exit %d, %s%s", code, out, errOut)
	}
	n, err := monitor.ScrapeReceived(context.Background(), srv.url, "")
	if err != nil || n != 4 {
		t.Errorf("the TCP address's /metrics counts %d messages (%v), want the 4 fed over the socket", n, err)
	}
	if code := srv.stop(t); code != exitOK {
		t.Fatalf("monitor exit %d: %s", code, srv.stderr.String())
	}
	if _, err := os.Lstat(sock); !errors.Is(err, os.ErrNotExist) {
		t.Errorf("the socket is still there after the monitor stopped: %v", err)
	}
}

// fourWordTurn is a turn of four one-token words whose third comes 340 ms
// after the second: a stall the monitor tests feed.
func fourWordTurn(id, session string) *pipeline.Turn {
	ms := time.Millisecond
	return &pipeline.Turn{ID: id, Session: session, Status: pipeline.StatusOK, Chunks: []pipeline.Chunk{
		{At: 30 * ms, Text: "One", Tokens: 1}, {At: 60 * ms, Text: " two", Tokens: 1},
		{At: 400 * ms, Text: " three", Tokens: 1}, {At: 420 * ms, Text: " four.", Tokens: 1},
	}}
}
