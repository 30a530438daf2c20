package main

import (
	"bytes"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// eachCommand calls fn with every command of the tree under root, root
// and nested subcommands included (cobra's own help and completion
// excepted), each by its path of names after "underrun".
func eachCommand(root *cobra.Command, fn func(path []string, c *cobra.Command)) {
	var walk func(path []string, c *cobra.Command)
	walk = func(path []string, c *cobra.Command) {
		fn(path, c)
		for _, sub := range c.Commands() {
			if sub.Name() == "help" || sub.Name() == "completion" {
				continue
			}
			walk(append(append([]string(nil), path...), sub.Name()), sub)
		}
	}
	walk(nil, root)
}

// commandPaths are the paths of every command, made fresh.
func commandPaths() [][]string {
	var paths [][]string
	eachCommand(newRootCommand(&env{}), func(path []string, _ *cobra.Command) { paths = append(paths, path) })
	return paths
}

// findCommand builds a fresh command tree writing to e and returns the
// command at path.
func findCommand(t *testing.T, e *env, path []string) *cobra.Command {
	t.Helper()
	root := newRootCommand(e)
	cmd, _, err := root.Find(path)
	if err != nil || cmd.CommandPath() != strings.Join(append([]string{"underrun"}, path...), " ") {
		t.Fatalf("%v: no such command (%v)", path, err)
	}
	return cmd
}

// sampleValue is a value other than the default that a flag of typ
// accepts.
func sampleValue(typ string) string {
	switch typ {
	case "bool":
		return "true"
	case "duration":
		return "123ms"
	case "int", "int64", "uint64":
		return "7"
	case "float64":
		return "2.5"
	}
	return "sample-value"
}

// TestRenamedFlags proves every deprecated flag name still works: giving
// it sets the flag that replaced it, as if that were given, and says once
// on stderr which flag to use instead.
func TestRenamedFlags(t *testing.T) {
	t.Parallel()
	seen := 0
	for _, path := range commandPaths() {
		var aliases []*pflag.Flag
		findCommand(t, &env{}, path).Flags().VisitAll(func(f *pflag.Flag) {
			if len(f.Annotations[renamedTo]) == 1 {
				aliases = append(aliases, f)
			}
		})
		for _, old := range aliases {
			to := old.Annotations[renamedTo][0]
			forms := []string{"--" + old.Name}
			if old.Shorthand != "" {
				forms = append(forms, "-"+old.Shorthand)
			}
			for _, form := range forms {
				seen++
				var errOut bytes.Buffer
				cmd := findCommand(t, &env{stderr: &errOut}, path)
				value := sampleValue(old.Value.Type())
				// given twice: the warning still comes once
				if err := cmd.ParseFlags([]string{form, value, form, value}); err != nil {
					t.Errorf("%v %s %s: %v", path, form, value, err)
					continue
				}
				f := cmd.Flags().Lookup(to)
				if !f.Changed {
					t.Errorf("%v %s: --%s not marked as given", path, form, to)
				}
				if got := f.Value.String(); got != value && !strings.Contains(got, value) {
					t.Errorf("%v %s %s: --%s is %q", path, form, value, to, got)
				}
				want := "is deprecated; use --" + to + "\n"
				if got := errOut.String(); strings.Count(got, "\n") != 1 || !strings.HasSuffix(got, want) || !strings.Contains(got, "--"+old.Name) {
					t.Errorf("%v %s: stderr %q, want one line ending %q", path, form, got, want)
				}
			}
		}
	}
	if seen < 20 {
		t.Errorf("only %d deprecated flag forms found; the renames are missing", seen)
	}
}

// TestRenamedFlagsRun runs commands end to end under their old flag names:
// the same output as under the new ones, and the deprecation line.
func TestRenamedFlagsRun(t *testing.T) {
	t.Parallel()
	const trace = "testdata/analyze/handcheck.jsonl"
	for _, tc := range []struct{ old, new []string }{
		{[]string{"analyze", "-o", "json", trace}, []string{"analyze", "--report", "json", trace}},
		{[]string{"analyze", "--output=json", trace}, []string{"analyze", "--report=json", trace}},
		{[]string{"-o", "json"}, []string{"--report", "json"}},
		{[]string{"stacks", "-o", "json"}, []string{"stacks", "--report", "json"}},
		{[]string{"transports", "--output", "json", "pipecat"}, []string{"transports", "--report", "json", "pipecat"}},
		{[]string{"scenarios", "-o", "json"}, []string{"scenarios", "--report", "json"}},
		{[]string{"sim", "tpot-50ms", "--monte-carlo", "0", "--turns", "2", "-o", "json"}, []string{"sim", "tpot-50ms", "--monte-carlo", "0", "--turns", "2", "--report", "json"}},
		{[]string{"replay", "--speed", "50", "--warn", "100ms", "-o", "json", trace}, []string{"replay", "--speed", "50", "--warn-tolerance", "100ms", "--report", "json", trace}},
	} {
		code, out, errOut := runCLI(t, "", tc.old...)
		wantCode, wantOut, _ := runCLI(t, "", tc.new...)
		if code != wantCode || out != wantOut {
			t.Errorf("%v: exit %d and %d bytes; under the new names %v: exit %d and %d bytes", tc.old, code, len(out), tc.new, wantCode, len(wantOut))
		}
		if !strings.Contains(errOut, "is deprecated; use --") {
			t.Errorf("%v: no deprecation line on stderr: %q", tc.old, errOut)
		}
	}
	// a command whose product is a file: the same file under both names
	dir := t.TempDir()
	plotted := func(kindFlag, name string) (string, []byte) {
		out := filepath.Join(dir, name)
		code, _, errOut := runCLI(t, "", "plot", trace, "-o", out, kindFlag, "tail")
		if code != exitOK {
			t.Fatalf("plot %s tail: exit %d: %s", kindFlag, code, errOut)
		}
		b, err := os.ReadFile(out)
		if err != nil {
			t.Fatal(err)
		}
		return errOut, b
	}
	errOut, oldSVG := plotted("--kind", "old.svg")
	_, newSVG := plotted("--plot-kind", "new.svg")
	if !bytes.Equal(oldSVG, newSVG) || !strings.Contains(errOut, "--kind is deprecated; use --plot-kind") {
		t.Errorf("plot --kind tail: %d bytes (--plot-kind tail: %d), stderr %q", len(oldSVG), len(newSVG), errOut)
	}
	// voice calibrate's engine: the same refusal under both names
	code, _, errOut := runCLI(t, "", "voice", "calibrate", "--engine", "festival")
	if code != exitUsage || !strings.Contains(errOut, "--engine is deprecated; use --audio-engine") || !strings.Contains(errOut, "--audio-engine: can calibrate espeak-ng") {
		t.Errorf("voice calibrate --engine festival: exit %d, stderr %q", code, errOut)
	}
}
