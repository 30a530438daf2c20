package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/sim"
)

// server is a long-running command (mock, proxy) started in the test.
type server struct {
	url            string
	stdout, stderr *testkit.Buffer
	code           chan int
	cancel         context.CancelFunc
}

var listenRe = regexp.MustCompile(`http://(127\.0\.0\.1:\d+)`)

// startServer runs a serving command and waits until it says where it
// listens.
func startServer(t *testing.T, args ...string) *server {
	t.Helper()
	ctx, cancel := context.WithCancel(context.Background())
	s := &server{stdout: &testkit.Buffer{}, stderr: &testkit.Buffer{}, code: make(chan int, 1), cancel: cancel}
	go func() { s.code <- run(ctx, args, strings.NewReader(""), s.stdout, s.stderr) }()
	// however long a busy machine takes to start it (the test's own
	// deadline ends a command that never says)
	for {
		if m := listenRe.FindStringSubmatch(s.stderr.String()); m != nil {
			s.url = "http://" + m[1]
			return s
		}
		select {
		case code := <-s.code:
			t.Fatalf("%s exited %d: %s", args[0], code, s.stderr.String())
		case <-time.After(5 * time.Millisecond):
		}
	}
}

// stop ends the command (Ctrl-C) and returns its exit code.
func (s *server) stop(t *testing.T) int {
	t.Helper()
	s.cancel()
	return <-s.code
}

// writeTrace writes turns as a native trace file.
func writeTrace(t *testing.T, path string, turns ...*pipeline.Turn) {
	t.Helper()
	var buf bytes.Buffer
	w := trace.NewWriter(&buf, "test")
	for _, tn := range turns {
		if err := w.WriteTurn(tn); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.WriteFile(path, buf.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// readTurns reads every turn of a trace file in any format.
func readTurns(t *testing.T, path string) []*pipeline.Turn {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := trace.Open(f, path, "auto")
	if err != nil {
		t.Fatal(err)
	}
	return testkit.All(t, dec.Next)
}

type jsonReport struct {
	Turns     int `json:"turns"`
	TurnsOK   int `json:"turns_ok"`
	Underruns []struct {
		Turn  string `json:"turn"`
		Token int    `json:"token"`
		Cause string `json:"cause"`
	} `json:"underrun_list"`
}

func analyzeJSON(t *testing.T, path string) jsonReport {
	t.Helper()
	code, out, errOut := runCLI(t, "", "analyze", "--report", "json", path)
	if code != exitOK && code != exitFail {
		t.Fatalf("analyze %s: exit %d: %s", path, code, errOut)
	}
	var r jsonReport
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatalf("analyze %s: %v", path, err)
	}
	return r
}

// TestMockCaptureProxy runs the three live commands together on loopback:
// the mock streams a recorded turn, the proxy guards it on the way, and
// capture records it; analyze finds the same underruns in the original,
// the capture, the raw SSE capture and the proxy's recording.
//
// The chain runs in real time, so a machine busy enough to hold the mock
// off the CPU for longer than the original's timing margins moves the
// chunks it sends and with them the underruns: the recordings' own
// timings say whether that happened (timingComparable), and only then are
// the underruns and the verdicts compared. Everything else is checked
// whatever the load.
func TestMockCaptureProxy(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	orig := sim.ConstantTurn("orig", "Well, let me think. The answer is simple: you go left.", 30*time.Millisecond, 10*time.Millisecond,
		[]sim.Stall{{Token: 3, Delay: 700 * time.Millisecond}})
	origFile := filepath.Join(dir, "orig.jsonl")
	writeTrace(t, origFile, orig)
	want := analyzeJSON(t, origFile)
	if len(want.Underruns) == 0 {
		t.Fatal("the original has no underrun: the test proves nothing")
	}

	mock := startServer(t, "mock", "--listen", "127.0.0.1:0", "--trace", origFile)
	proxyTrace, events := filepath.Join(dir, "proxy.jsonl"), filepath.Join(dir, "events.jsonl")
	proxy := startServer(t, "proxy", "--listen", "127.0.0.1:0", "--url", mock.url, "-o", proxyTrace,
		"--events", events, "--report", "json")

	capFile, sseFile := filepath.Join(dir, "capture.jsonl"), filepath.Join(dir, "capture.sse.jsonl")
	// a name of its own: t.Setenv cannot be used in a parallel test
	os.Setenv("UNDERRUN_TEST_KEY_LIVE", "sk-never-written")
	t.Cleanup(func() { os.Unsetenv("UNDERRUN_TEST_KEY_LIVE") })
	code, out, errOut := runCLI(t, "", "capture", "--url", proxy.url+"/v1", "--model", "m", "--requests", "3",
		"--concurrency", "3", "-o", capFile, "--sse", sseFile, "--report", "json", "--api-key-env", "UNDERRUN_TEST_KEY_LIVE")
	if code != exitFail && code != exitOK {
		t.Fatalf("capture: exit %d: %s", code, errOut)
	}
	if !strings.Contains(errOut, "3 requests") || !strings.Contains(errOut, "3 ok") {
		t.Errorf("capture summary: %s", errOut)
	}
	var rep jsonReport
	if err := json.Unmarshal([]byte(out), &rep); err != nil || rep.Turns != 3 || rep.TurnsOK != 3 {
		t.Fatalf("capture report: %v %+v\n%s", err, rep, out)
	}
	proxyCode := proxy.stop(t)
	if code := mock.stop(t); code != exitOK {
		t.Errorf("mock: exit %d: %s", code, mock.stderr.String())
	}
	var prep jsonReport
	if err := json.Unmarshal([]byte(proxy.stdout.String()), &prep); err != nil || prep.Turns != 3 {
		t.Errorf("proxy report: %v %+v\n%s", err, prep, proxy.stdout.String())
	}
	comparable := true
	for _, f := range []string{capFile, sseFile, proxyTrace} {
		turns := readTurns(t, f)
		if len(turns) != 3 {
			t.Errorf("%s: %d turns, want 3", filepath.Base(f), len(turns))
		}
		for _, tn := range turns {
			if tn.Text() != orig.Text() || tn.Status != pipeline.StatusOK {
				t.Errorf("%s: turn %s: %s %q", filepath.Base(f), tn.ID, tn.Status, tn.Text())
			}
			if ok, why := timingComparable(t, orig, tn); !ok {
				t.Logf("%s: turn %s: %s: the underruns are not compared", filepath.Base(f), tn.ID, why)
				comparable = false
			}
		}
	}
	if comparable {
		if code != exitFail { // the turn interrupts: the verdict fails
			t.Errorf("capture: exit %d, want %d: %s", code, exitFail, errOut)
		}
		if proxyCode != exitFail {
			t.Errorf("proxy: exit %d, want %d: %s", proxyCode, exitFail, proxy.stderr.String())
		}
		for _, f := range []string{capFile, sseFile, proxyTrace} {
			got := analyzeJSON(t, f)
			if got.Turns != 3 || len(got.Underruns) != 3*len(want.Underruns) {
				t.Errorf("%s: %d turns, %d underruns; want 3 turns, %d underruns", filepath.Base(f), got.Turns, len(got.Underruns), 3*len(want.Underruns))
				continue
			}
			for i, u := range got.Underruns {
				w := want.Underruns[i%len(want.Underruns)]
				if u.Token != w.Token || u.Cause != w.Cause {
					t.Errorf("%s: underrun %d at token %d (%s), want token %d (%s)", filepath.Base(f), i, u.Token, u.Cause, w.Token, w.Cause)
				}
			}
		}
	}
	ev, err := os.ReadFile(events)
	if err != nil {
		t.Fatal(err)
	}
	wantEvents := []string{`"event":"turn"`, `"event":"proxy_stream"`}
	if comparable {
		wantEvents = append(wantEvents, `"event":"underrun_started"`, `"event":"underrun"`)
	}
	for _, want := range wantEvents {
		if !bytes.Contains(ev, []byte(want)) {
			t.Errorf("proxy events lack %s", want)
		}
	}
	for _, f := range []string{capFile, sseFile, proxyTrace, events} {
		b, _ := os.ReadFile(f)
		if bytes.Contains(b, []byte("sk-never-written")) {
			t.Errorf("%s contains the API key", filepath.Base(f))
		}
	}
}

// timingComparable reports whether a recording of orig, made in real time,
// kept orig's timing closely enough that analyze must find orig's
// underruns in it: no chunk moved, against the recording's first chunk,
// by half the smallest of orig's underrun lengths and stall tolerances
// (the least change of timing that can make or unmake an underrun). A
// machine too busy to send or read the chunks on time moves them further;
// why then says by how much.
func timingComparable(t *testing.T, orig, rec *pipeline.Turn) (ok bool, why string) {
	t.Helper()
	if len(rec.Chunks) != len(orig.Chunks) || len(orig.Chunks) == 0 {
		return false, fmt.Sprintf("%d chunks, the original %d", len(rec.Chunks), len(orig.Chunks))
	}
	p, err := pipeline.Play(pipeline.DefaultConfig(), orig)
	if err != nil {
		t.Fatal(err)
	}
	margin := time.Duration(math.MaxInt64)
	for _, u := range p.Underruns {
		margin = min(margin, u.Duration)
	}
	for _, tol := range p.Tolerance {
		if tol > 0 && tol != pipeline.Unbounded {
			margin = min(margin, tol)
		}
	}
	margin /= 2
	if margin < 5*time.Millisecond {
		t.Fatalf("the original's timing margin is %v: no recording could be compared with it", margin)
	}
	var moved time.Duration
	for k := range orig.Chunks {
		d := (rec.Chunks[k].At - rec.Chunks[0].At) - (orig.Chunks[k].At - orig.Chunks[0].At)
		moved = max(moved, d, -d)
	}
	if moved >= margin {
		return false, fmt.Sprintf("a chunk came %v off the original's schedule, beyond the %v that keeps its underruns", moved.Round(time.Millisecond), margin.Round(time.Millisecond))
	}
	return true, ""
}

// TestCaptureInterrupted stops a capture midway (Ctrl-C): the trace holds
// every chunk so far and an end record per turn, and the report covers
// what was captured.
func TestCaptureInterrupted(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	long := sim.ConstantTurn("long", strings.Repeat("one more word ", 100), 10*time.Millisecond, 10*time.Millisecond, nil)
	origFile := filepath.Join(dir, "long.jsonl")
	writeTrace(t, origFile, long)
	mock := startServer(t, "mock", "--listen", "127.0.0.1:0", "--trace", origFile)
	defer mock.stop(t)
	capFile := filepath.Join(dir, "capture.jsonl")
	ctx, cancel := context.WithTimeout(context.Background(), 400*time.Millisecond)
	defer cancel()
	var out, errOut bytes.Buffer
	code := run(ctx, []string{"capture", "--url", mock.url, "--model", "m", "--requests", "4", "--concurrency", "2",
		"-o", capFile, "--report", "json"}, strings.NewReader(""), &out, &errOut)
	if code != exitOK && code != exitFail {
		t.Fatalf("exit %d: %s", code, errOut.String())
	}
	if !strings.Contains(errOut.String(), "interrupted") || !strings.Contains(errOut.String(), "2 cancelled") {
		t.Errorf("summary: %s", errOut.String())
	}
	turns := readTurns(t, capFile)
	if len(turns) != 2 {
		t.Fatalf("%d turns in the trace, want the 2 in flight", len(turns))
	}
	raw, err := os.ReadFile(capFile)
	if err != nil {
		t.Fatal(err)
	}
	if header, _, _ := bytes.Cut(raw, []byte("\n")); !bytes.Contains(header, []byte(`clock: kernel receive stamps`)) {
		t.Errorf("the trace header does not say which clock timed it: %s", header)
	}
	for _, tn := range turns {
		if tn.Status != pipeline.StatusCancelled || len(tn.Chunks) < 5 || len(tn.Chunks) >= len(long.Chunks) {
			t.Errorf("turn %s: %s with %d chunks", tn.ID, tn.Status, len(tn.Chunks))
		}
	}
	var rep jsonReport
	if err := json.Unmarshal(out.Bytes(), &rep); err != nil || rep.Turns != 2 {
		t.Errorf("report: %v %+v", err, rep)
	}
}

func TestLiveCommandsUsage(t *testing.T) {
	t.Parallel()
	tests := []usageCase{
		{[]string{"capture", "--model", "m"}, "--url and --model"},
		{[]string{"capture", "--url", "http://127.0.0.1:1", "--model", "m", "--api", "images"}, "--api"},
		{[]string{"capture", "--url", "127.0.0.1:1", "--model", "m"}, "--url"},
		{[]string{"capture", "--url", "http://127.0.0.1:1", "--model", "m", "--rate", "-1"}, "rate"},
		{[]string{"capture", "--url", "http://127.0.0.1:1", "--model", "m", "--prompts", "/nonexistent"}, "--prompts"},
		{[]string{"capture", "--url", "http://127.0.0.1:1", "--model", "m", "--report", "yaml"}, "--report"},
		{[]string{"capture", "--url", "http://127.0.0.1:1", "--model", "m", "--clock", "tsc"}, "--clock"},
		{[]string{"proxy", "--url", "http://127.0.0.1:1", "--report", "yaml"}, "--report"},
		{[]string{"proxy", "--url", "http://127.0.0.1:1", "--warn-tolerance", "-1s"}, "--warn-tolerance"},
		{[]string{"proxy", "--url", "http://127.0.0.1:1", "--tool-wait", "0s"}, "--tool-wait must be positive"},
		{[]string{"capture", "--url", "http://127.0.0.1:1", "--model", "m", "--api-key-env", "UNDERRUN_SURELY_UNSET_VAR"}, "not set"},
		{[]string{"proxy"}, "--url"},
		{[]string{"proxy", "--url", "ftp://x"}, "--url"},
		{[]string{"mock", "--trace", "a", "--scenario", "b"}, "not both"},
		{[]string{"mock", "--trace", "/nonexistent"}, "--trace"},
		{[]string{"mock", "--scenario", "no-such-scenario"}, "no-such-scenario"},
	}
	checkUsage(t, tests)
}

func TestMockTurnsFromScenario(t *testing.T) {
	t.Parallel()
	c := &mockCommand{env: &env{stdin: strings.NewReader("")}, scenario: "tpot-50ms", turns: 2}
	turns, from, err := c.loadTurns(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if len(turns) != 2 || !strings.Contains(from, "tpot-50ms") {
		t.Fatalf("%d turns from %s", len(turns), from)
	}
	for _, tn := range turns {
		if len(tn.Chunks) == 0 || tn.Validate() != nil {
			t.Errorf("turn %s: %d chunks, %v", tn.ID, len(tn.Chunks), tn.Validate())
		}
	}
	c = &mockCommand{env: &env{stdin: strings.NewReader("")}}
	turns, _, err = c.loadTurns(context.Background())
	if err != nil || len(turns) != 1 || turns[0].ID != "default" {
		t.Errorf("default: %v %v", turns, err)
	}
}
