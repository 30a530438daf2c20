//go:build unix

package main

import (
	"bytes"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeLongTextBoundedMemory runs analyze as its own process on a
// vLLM result with a 64 MB generated text and an unknown 64 MB field: the
// text is refused (exit 2, the field named) and the process's peak memory
// stays far below the file's size, where reading the text whole took
// about 4.6 times it.
func TestAnalyzeLongTextBoundedMemory(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector multiplies the memory this test measures")
	}
	t.Parallel()
	raw, err := os.ReadFile(filepath.Join(toolFixtures, "vllm/basic/result.json"))
	if err != nil {
		t.Fatal(err)
	}
	// written piece by piece, so that this process stays small: the
	// child starts as a copy of it
	path := filepath.Join(t.TempDir(), "result.json")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	piece := []byte(strings.Repeat("gibberish ", 1<<16))
	huge := func() {
		f.WriteString(`"`)
		for range 64 << 20 / len(piece) {
			f.Write(piece)
		}
		f.WriteString(`"`)
	}
	head, rest, _ := strings.Cut(string(raw), `null`) // "label": null
	text, tail, _ := strings.Cut(rest, `"Yes, sure."`)
	f.WriteString(head)
	huge()
	f.WriteString(text)
	huge()
	f.WriteString(tail)
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	raw = nil
	cmd := exec.Command(os.Args[0], "analyze", path)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	peak, err := execPeak(t, cmd)
	code := cmd.ProcessState.ExitCode()
	if code != exitUsage || !strings.Contains(stderr.String(), `"generated_texts"[1]: a string longer than 16777216 bytes`) {
		t.Fatalf("exit %d (%v), stderr %q", code, err, stderr.String())
	}
	if peak > 100<<20 {
		t.Errorf("peak memory %d MB for a 128 MB file; want under 100 MB", peak>>20)
	}
	t.Logf("peak memory %d MB for a 128 MB file", peak>>20)
}
