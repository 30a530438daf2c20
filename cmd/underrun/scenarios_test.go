package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/scenarios"
)

// TestPrintedScenarioRuns: `underrun scenarios NAME > mine.yaml && underrun
// sim mine.yaml` works for every built-in scenario, in a folder that holds
// nothing else (20 of 21 failed: their corpus file was not found).
func TestPrintedScenarioRuns(t *testing.T) {
	t.Parallel()
	for _, name := range scenarios.Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			code, yaml, stderr := runCLI(t, "", "scenarios", name)
			if code != exitOK {
				t.Fatalf("scenarios %s: exit %d: %s", name, code, stderr)
			}
			mine := filepath.Join(t.TempDir(), "mine.yaml")
			if err := os.WriteFile(mine, []byte(yaml), 0o644); err != nil {
				t.Fatal(err)
			}
			code, out, stderr := runCLI(t, "", "sim", mine, "--turns", "1", "--monte-carlo", "1")
			if code == exitUsage || !strings.Contains(out, "scenario") {
				t.Errorf("sim mine.yaml: exit %d: %s%s", code, stderr, out)
			}
		})
	}
}

// TestHostileScenarioFiles: sim and mock refuse an alias bomb (550 bytes
// took them past 6 GB) and deep nesting with exit 2, naming the line.
func TestHostileScenarioFiles(t *testing.T) {
	t.Parallel()
	dir := "../../tts/yamlguard/testdata/hostile"
	for _, f := range []string{"alias-bomb-corpus.yaml", "alias-bomb-expect.yaml", "deep-flow.yaml"} {
		path := filepath.Join(dir, f)
		for _, args := range [][]string{{"sim", path}, {"mock", "--listen", "127.0.0.1:0", "--scenario", path}} {
			code, _, stderr := runCLI(t, "", args...)
			if code != exitUsage || !strings.Contains(stderr, "over a limit: line ") {
				t.Errorf("%v: exit %d: %s", args, code, stderr)
			}
		}
	}
}

// TestNegativeListRefused: --list -1 is bad usage on every command that
// lists underruns (it was taken as "none").
func TestNegativeListRefused(t *testing.T) {
	t.Parallel()
	for _, args := range [][]string{
		{"--list", "-1"},
		{"analyze", "--list", "-1", "testdata/analyze/handcheck.jsonl"},
		{"sim", "tpot-50ms", "--list", "-1"},
		{"replay", "--list", "-1", "testdata/analyze/handcheck.jsonl"},
	} {
		code, _, stderr := runCLI(t, "", args...)
		if code != exitUsage || !strings.Contains(stderr, "--list must not be negative") {
			t.Errorf("%v: exit %d: %s", args, code, stderr)
		}
	}
}
