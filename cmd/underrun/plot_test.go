package main

import (
	"bytes"
	"encoding/xml"
	"image/png"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/scenarios"
)

func TestPlotCommand(t *testing.T) {
	t.Parallel()
	trace := filepath.Join("testdata", "analyze", "handcheck.jsonl")
	sweep := filepath.Join(t.TempDir(), "sweep.json")
	if err := os.WriteFile(sweep, []byte(`{"param":"TPOT","unit":"ms","goodput_slo":0.95,"points":[{"value":30,"speech_goodput":1},{"value":60,"interruptions_per_minute":3,"speech_goodput":0.7}]}`), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name   string
		args   []string
		out    string // file name in a temp dir, passed as -o
		code   int
		stderr string // expected in stderr
		check  func(t *testing.T, b []byte)
	}{
		{name: "default html", args: []string{"default"}, out: "d.html", check: func(t *testing.T, b []byte) {
			for _, want := range []string{"<!DOCTYPE html>", "<pre>underrun report: ", `class="underrun interruption"`, `<figure id="tail">`} {
				if !bytes.Contains(b, []byte(want)) {
					t.Errorf("HTML lacks %q", want)
				}
			}
		}},
		{name: "default svg", args: []string{"default"}, out: "d.svg", check: wellFormedSVG},
		{name: "default png", args: []string{"default"}, out: "d.png", check: func(t *testing.T, b []byte) {
			if _, err := png.Decode(bytes.NewReader(b)); err != nil {
				t.Errorf("not a PNG: %v", err)
			}
		}},
		{name: "trace tail", args: []string{trace, "--plot-kind", "tail"}, out: "tail.svg", check: wellFormedSVG},
		{name: "trace fleet", args: []string{trace, "--plot-kind", "fleet"}, out: "fleet.svg", check: wellFormedSVG},
		{name: "one turn's timeline", args: []string{trace, "--turn", "t1", "--chunking", "sentence"}, out: "t1.svg", check: wellFormedSVG},
		{name: "stdin", args: []string{"-"}, out: "stdin.svg", check: wellFormedSVG},
		{name: "sweep", args: []string{sweep, "--plot-kind", "sweep"}, out: "sweep.svg", check: wellFormedSVG},
		{name: "no such turn", args: []string{trace, "--turn", "nope"}, out: "x.svg", code: exitUsage, stderr: `no turn "nope"`},
		{name: "no such input", args: []string{"no-such-thing"}, out: "x.svg", code: exitUsage, stderr: "no such file or built-in scenario"},
		{name: "bad extension", args: []string{"default"}, out: "x.txt", code: exitUsage, stderr: "want a file ending in .html, .svg or .png"},
		{name: "report needs html", args: []string{"default", "--plot-kind", "report"}, out: "x.svg", code: exitUsage, stderr: "needs an .html file"},
		{name: "unknown kind", args: []string{"default", "--plot-kind", "pie"}, out: "x.svg", code: exitUsage, stderr: "unknown plot kind"},
		{name: "not a sweep", args: []string{trace, "--plot-kind", "sweep"}, out: "x.svg", code: exitUsage, stderr: "not a sweep JSON file"},
		{name: "no output", args: []string{"default"}, code: exitUsage, stderr: "plot needs -o FILE"},
		{name: "two inputs", args: []string{"default", "default"}, out: "x.svg", code: exitUsage, stderr: "plot takes one input"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"plot"}, tc.args...)
			path := ""
			if tc.out != "" {
				path = filepath.Join(t.TempDir(), tc.out)
				args = append(args, "-o", path)
			}
			stdin := ""
			if tc.args[0] == "-" {
				b, err := os.ReadFile(trace)
				if err != nil {
					t.Fatal(err)
				}
				stdin = string(b)
			}
			code, _, stderr := runCLI(t, stdin, args...)
			if code != tc.code {
				t.Fatalf("exit %d, want %d; stderr: %s", code, tc.code, stderr)
			}
			if !strings.Contains(stderr, tc.stderr) {
				t.Errorf("stderr %q lacks %q", stderr, tc.stderr)
			}
			if tc.check != nil {
				b, err := os.ReadFile(path)
				if err != nil {
					t.Fatal(err)
				}
				tc.check(t, b)
			}
		})
	}
}

func wellFormedSVG(t *testing.T, b []byte) {
	t.Helper()
	if !bytes.Contains(b, []byte("<svg")) {
		t.Fatal("no <svg> element")
	}
	if err := xml.Unmarshal(b, new(struct{})); err != nil {
		t.Errorf("not well-formed SVG: %v", err)
	}
}

func TestPlotScenario(t *testing.T) {
	t.Parallel()
	var name string
	for _, n := range scenarios.Names() {
		if n != "default" {
			name = n
			break
		}
	}
	if name == "" {
		t.Skip("no built-in scenarios besides default")
	}
	path := filepath.Join(t.TempDir(), "s.svg")
	code, _, stderr := runCLI(t, "", "plot", name, "-o", path, "--plot-kind", "fleet")
	if code != exitOK {
		t.Fatalf("plot %s: exit %d: %s", name, code, stderr)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	wellFormedSVG(t, b)
}

func TestPlotSink(t *testing.T) {
	t.Parallel()
	trace := filepath.Join("testdata", "analyze", "handcheck.jsonl")
	dir := t.TempDir()
	html := filepath.Join(dir, "report.html")
	code, stdout, stderr := runCLI(t, "", "analyze", "--plot", html, trace)
	if code != exitOK && code != exitFail {
		t.Fatalf("analyze --plot: exit %d: %s", code, stderr)
	}
	b, err := os.ReadFile(html)
	if err != nil {
		t.Fatal(err)
	}
	// the page carries the same verdict as the text report
	verdict := "PASS"
	if strings.Contains(stdout, "verdict: FAIL") {
		verdict = "FAIL"
	}
	if !bytes.Contains(b, []byte(`">`+verdict+`</span>`)) {
		t.Errorf("HTML does not show the verdict %s", verdict)
	}
	png := filepath.Join(dir, "fleet.png")
	if code, _, stderr := runCLI(t, "", "analyze", "--plot", png, "--plot-kind", "fleet", trace); code == exitUsage {
		t.Fatalf("analyze --plot png: %s", stderr)
	}
	if st, err := os.Stat(png); err != nil || st.Size() == 0 {
		t.Errorf("no PNG written: %v", err)
	}
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"--plot-kind", "tail", trace}, "--plot-kind needs --plot"},
		{[]string{"--plot", filepath.Join(dir, "no", "such", "dir.svg"), trace}, "does not exist"},
		{[]string{"--plot", filepath.Join(dir, "x.svg"), "--plot-kind", "report", trace}, "needs an .html file"},
	} {
		code, _, stderr := runCLI(t, "", append([]string{"analyze"}, tc.args...)...)
		if code != exitUsage || !strings.Contains(stderr, tc.want) {
			t.Errorf("analyze %v: exit %d, stderr %q; want exit 2 mentioning %q", tc.args, code, stderr, tc.want)
		}
	}
}
