//go:build linux || darwin

package main

import (
	"bytes"
	"context"
	"encoding/json"
	"io"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/creack/pty"
)

// ptyRun runs the command line with stderr on a pseudo-terminal (stdout a
// pipe, as a buffer) and returns the exit code, stdout and what the
// terminal received.
func ptyRun(t *testing.T, after time.Duration, args ...string) (int, string, string) {
	t.Helper()
	return ptyRunStdin(t, strings.NewReader(""), after, args...)
}

// ptyRunStdin is ptyRun with stdin as the command's standard input.
func ptyRunStdin(t *testing.T, stdin io.Reader, after time.Duration, args ...string) (int, string, string) {
	t.Helper()
	master, tty, err := pty.Open()
	if err != nil {
		t.Skipf("no pseudo-terminal here: %v", err)
	}
	defer master.Close()
	got := make(chan []byte)
	go func() {
		b, _ := io.ReadAll(master) // ends with EIO once tty is closed
		got <- b
	}()
	var out bytes.Buffer
	// every step redrawn: the test sees the counts move
	code := runEnv(context.Background(), &env{stdin: stdin, stdout: &out, stderr: tty, progressAfter: after}, args)
	tty.Close()
	return code, out.String(), string(<-got)
}

// bigTrace writes a native trace of n text-less turns.
func bigTrace(t *testing.T, n int) string {
	t.Helper()
	var b strings.Builder
	b.WriteString(`{"type":"header","format":"underrun-trace","version":1}` + "\n")
	for i := range n {
		handTurn(&b, "t"+strconv.Itoa(i), 0, 100, 300, 500)
	}
	path := filepath.Join(t.TempDir(), "big.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	return path
}

// redraw matches a carriage return that is not a terminal's line end: a
// bar redrawing itself.
var redraw = regexp.MustCompile("\r[^\n]")

// bar matches what the progress bar draws: the file, the turns done (some
// by then), and the bytes read of the file's size.
var bar = regexp.MustCompile(`big\.jsonl: [1-9]\d* turns? .*\(\d+(\.\d+)? ?[kMG]?B?/\d+(\.\d+)? ?[kMG]?B`)

// TestProgressBarOnTerminal: analyze, convert and plot draw a progress bar
// (bytes read, turns done) on a terminal stderr once the input has taken
// longer than the threshold, and never on a pipe, for a quick input, with
// --events on stderr, or in the JSON on stdout.
func TestProgressBarOnTerminal(t *testing.T) {
	t.Parallel()
	path := bigTrace(t, 400)
	dir := t.TempDir()
	for _, args := range [][]string{
		{"analyze", "--max-tpot=false", path},
		{"convert", path, "-o", filepath.Join(dir, "out.jsonl")},
		{"plot", path, "-o", filepath.Join(dir, "fleet.svg"), "--max-tpot=false"},
	} {
		code, _, term := ptyRun(t, 0, args...)
		if code == exitUsage {
			t.Fatalf("%s: exit %d: %s", args[0], code, term)
		}
		if !bar.MatchString(term) {
			t.Errorf("%s: no progress bar on the terminal:\n%q", args[0], term)
		}
		// a quick input: no bar before the threshold
		if _, _, term := ptyRun(t, time.Hour, args...); bar.MatchString(term) || redraw.MatchString(term) {
			t.Errorf("%s: a bar on the terminal before the threshold:\n%q", args[0], term)
		}
		// stderr a pipe
		var out, errOut bytes.Buffer
		runEnv(context.Background(), &env{stdin: strings.NewReader(""), stdout: &out, stderr: &errOut}, args)
		if bar.MatchString(errOut.String()) || strings.Contains(errOut.String(), "\r") {
			t.Errorf("%s: a bar on a pipe:\n%q", args[0], errOut.String())
		}
	}
	// JSON on stdout stays JSON, the same as without a terminal; the bar is
	// on stderr only
	code, js, term := ptyRun(t, 0, "analyze", "--max-tpot=false", "--report", "json", path)
	if code == exitUsage || !bar.MatchString(term) {
		t.Errorf("analyze --report json: exit %d, terminal %q", code, term)
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(js), &report); err != nil || strings.ContainsAny(js, "\r\x1b") {
		t.Errorf("stdout is not clean JSON (%v):\n%q", err, js[:min(len(js), 300)])
	}
	_, plain, _ := runCLI(t, "", "analyze", "--max-tpot=false", "--report", "json", path)
	if js != plain {
		t.Error("the JSON report differs with a terminal on stderr")
	}
	// the event log on stderr: no bar among its lines
	if _, _, term := ptyRun(t, 0, "analyze", "--max-tpot=false", "--events", "-", path); bar.MatchString(term) {
		t.Errorf("a bar among the event lines on stderr:\n%q", term[:min(len(term), 400)])
	}
}

// TestProgressBarStdin: standard input, whose size is unknown, gets a
// spinner with the bytes read and the turns done, drawn by the reading
// itself (no ticker of the bar's own, which would race what the command
// writes afterwards).
func TestProgressBarStdin(t *testing.T) {
	t.Parallel()
	data, err := os.ReadFile(bigTrace(t, 400))
	if err != nil {
		t.Fatal(err)
	}
	code, out, term := ptyRunStdin(t, bytes.NewReader(data), 0, "analyze", "--max-tpot=false", "--report", "json", "-")
	if code == exitUsage {
		t.Fatalf("exit %d: %s", code, term)
	}
	if !regexp.MustCompile(`stdin: [1-9]\d* turns? .*\d+(\.\d+)? ?[kMG]?B`).MatchString(term) {
		t.Errorf("no spinner with bytes and turns on the terminal:\n%q", term)
	}
	var report map[string]any
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Errorf("stdout is not clean JSON: %v", err)
	}
}

// TestProgressBarStopsAtClose: once an input is closed its bar reaches
// the terminal no more, whatever is asked of it.
func TestProgressBarStopsAtClose(t *testing.T) {
	t.Parallel()
	for _, size := range []int64{0, 1 << 20} { // a spinner, a bar
		var term bytes.Buffer
		in := &input{tty: true, after: time.Now(), progressDest: &term, size: size, max: size, label: "x.jsonl"}
		if size == 0 {
			in.max = -1
		}
		in.progress(4096)
		if term.Len() == 0 {
			t.Fatalf("size %d: nothing drawn", size)
		}
		in.Close()
		n := term.Len()
		in.bar.Add(4096)
		in.bar.Describe("later")
		in.bar.RenderBlank()
		if term.Len() != n {
			t.Errorf("size %d: the bar wrote %q after Close", size, term.String()[n:])
		}
	}
}

// TestFromWriter: a bar made at the first read writes nothing before its
// time, and everything after.
func TestFromWriter(t *testing.T) {
	t.Parallel()
	var b bytes.Buffer
	early := &fromWriter{w: &b, from: time.Now().Add(time.Hour)}
	if n, err := early.Write([]byte("drawn too soon")); n != 14 || err != nil || b.Len() != 0 {
		t.Errorf("before its time: wrote %q (%d, %v)", b.String(), n, err)
	}
	due := &fromWriter{w: &b, from: time.Now().Add(-time.Second)}
	if _, err := due.Write([]byte("bar")); err != nil || b.String() != "bar" {
		t.Errorf("after its time: %q, %v", b.String(), err)
	}
}
