package main

import (
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
)

// handTurn writes one native turn of text-less chunks at the given times
// (ms since its request), starting startMs after a common origin.
func handTurn(b *strings.Builder, id string, startMs int64, chunksMs ...int64) {
	fmt.Fprintf(b, `{"type":"turn","turn":%q,"start_unix_ns":%d}`+"\n", id, 1764669600000000000+startMs*1_000_000)
	for _, at := range chunksMs {
		fmt.Fprintf(b, `{"type":"chunk","turn":%q,"t_ns":%d}`+"\n", id, at*1_000_000)
	}
	fmt.Fprintf(b, `{"type":"end","turn":%q,"status":"ok"}`+"\n", id)
}

// handFlags play each text-less token for exactly 250 ms the moment it
// arrives, so a trace's gaps are its ITLs less 250 ms.
var handFlags = []string{"--token-audio", "250ms", "--chunking", "token", "--tts-latency", "0", "--rtf", "0"}

// TestWorstTurnAgrees: the verdict of analyze and of replay, the fleet
// view, the default timeline and the HTML report's table name the same
// worst turn of one trace. Turns a1 and a2 each have three interruptions of
// 160 ms; b has one of 1000 ms. a2 starts first, so replay ends it first.
func TestWorstTurnAgrees(t *testing.T) {
	t.Parallel()
	as := func(b *strings.Builder) {
		handTurn(b, "a1", 2000, 100, 510, 920, 1330)
		handTurn(b, "a2", 0, 100, 510, 920, 1330)
	}
	var withB, tied strings.Builder
	as(&withB)
	handTurn(&withB, "b", 4000, 100, 1350)
	as(&tied)
	for _, tc := range []struct {
		name, trace, worst string
	}{
		{"most silence in interruptions", withB.String(), "b"},
		{"equal turns, by ID", tied.String(), "a1"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path := filepath.Join(dir, "trace.jsonl")
			if err := os.WriteFile(path, []byte(`{"type":"header","format":"underrun-trace","version":1}`+"\n"+tc.trace), 0o644); err != nil {
				t.Fatal(err)
			}
			verdict := func(args ...string) string {
				t.Helper()
				code, out, errOut := runCLI(t, "", append(append(args, handFlags...), "--report", "json", path)...)
				if code != exitFail {
					t.Fatalf("%s: exit %d, want %d; stderr %s", args[0], code, exitFail, errOut)
				}
				var r struct {
					Verdict struct{ Reasons []string }
				}
				if err := json.Unmarshal([]byte(out), &r); err != nil {
					t.Fatal(err)
				}
				for _, reason := range r.Verdict.Reasons {
					if _, after, ok := strings.Cut(reason, "worst turn "); ok {
						return after
					}
				}
				t.Fatalf("%s: no worst turn in the verdict %q", args[0], r.Verdict.Reasons)
				return ""
			}
			plotted := func(name string, args ...string) []byte {
				t.Helper()
				out := filepath.Join(dir, name)
				if code, _, errOut := runCLI(t, "", append(append([]string{"plot", path, "-o", out}, args...), handFlags...)...); code != exitOK {
					t.Fatalf("plot %s: exit %d; stderr %s", name, code, errOut)
				}
				b, err := os.ReadFile(out)
				if err != nil {
					t.Fatal(err)
				}
				return b
			}
			firstTurn := regexp.MustCompile(`data-turn="([^"]*)"`)
			firstOf := func(b []byte) string {
				m := firstTurn.FindSubmatch(b)
				if m == nil {
					t.Fatal("no underrun mark in the plot")
				}
				return string(m[1])
			}
			tableRow := regexp.MustCompile(`<h2>Turns, worst first</h2>[\s\S]*?<tbody>\s*<tr[^>]*><td class="l">([^<]*)<`)
			table := tableRow.FindSubmatch(plotted("report.html"))
			if table == nil {
				t.Fatal("no per-turn table in the HTML report")
			}
			for view, got := range map[string]string{
				"analyze verdict":           verdict("analyze"),
				"replay verdict":            verdict("replay", "--speed", "25"),
				"fleet view, first row":     firstOf(plotted("fleet.svg", "--plot-kind", "fleet")),
				"timeline drawn by default": firstOf(plotted("timeline.svg", "--plot-kind", "timeline")),
				"HTML per-turn table":       string(table[1]),
			} {
				if got != tc.worst {
					t.Errorf("%s: worst turn %q, want %q", view, got, tc.worst)
				}
			}
		})
	}
}
