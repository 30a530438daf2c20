package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestReplaySaysTraceLength: three 2 s turns that start 0.5 s apart make
// 3 s of trace, not the 6 s their lengths add up to.
func TestReplaySaysTraceLength(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	b.WriteString(`{"type":"header","format":"underrun-trace","version":1}` + "\n")
	for i, id := range []string{"a", "b", "c"} {
		handTurn(&b, id, int64(500*i), 100, 2000)
	}
	path := filepath.Join(t.TempDir(), "overlap.jsonl")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", append([]string{"replay", "--speed", "20", path}, handFlags...)...)
	if code != exitOK && code != exitFail {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if want := "replaying 3 turns (3.0 s of trace, 0.1 s at 20x)"; !strings.Contains(out, want) {
		t.Errorf("replay's first line is not %q:\n%s", want, out)
	}
}

// TestPlotFlagSaysWrote: --plot on analyze, sim and replay says what it
// wrote, as plot does.
func TestPlotFlagSaysWrote(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	trace := filepath.Join("testdata", "analyze", "handcheck.jsonl")
	for _, args := range [][]string{
		{"analyze", trace},
		{"replay", "--speed", "50", trace},
		{"sim", "tpot-50ms"},
	} {
		out := filepath.Join(dir, args[0]+".html")
		code, _, errOut := runCLI(t, "", append(args, "--plot", out, "--max-tpot=false")...)
		if code != exitOK && code != exitFail {
			t.Fatalf("%s: exit %d: %s", args[0], code, errOut)
		}
		if want := "underrun: wrote " + out + " ("; !strings.Contains(errOut, want) {
			t.Errorf("%s --plot: stderr lacks %q:\n%s", args[0], want, errOut)
		}
		if _, err := os.Stat(out); err != nil {
			t.Errorf("%s --plot: %v", args[0], err)
		}
	}
}
