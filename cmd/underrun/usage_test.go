package main

import (
	"strings"
	"testing"
)

// TestArgumentErrors checks that a missing or extra argument says what is
// missing or extra with an example, and an unknown command or flag names
// the nearest known one; exit code 2 each time.
func TestArgumentErrors(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		has  []string
		not  string
	}{
		{[]string{"sim"}, []string{"sim needs a scenario", "for example: underrun sim tpot-50ms"}, "accepts"},
		{[]string{"sim", "a", "b"}, []string{"sim takes at most 1 argument", `"a" "b"`, "for example: underrun sim"}, "accepts"},
		{[]string{"heard"}, []string{"heard needs a recording", "for example: underrun heard call.wav"}, "accepts"},
		{[]string{"heard", "a.wav", "t.jsonl", "x"}, []string{"at most 2 arguments", `"x"`}, "accepts"},
		{[]string{"monitor", "feed"}, []string{"monitor feed needs the trace", "for example: underrun monitor feed"}, "accepts"},
		{[]string{"capture", "trace.jsonl"}, []string{"capture takes no arguments", `"trace.jsonl"`, "for example: underrun capture --url"}, "accepts"},
		{[]string{"stacks", "a", "b"}, []string{"stacks takes at most 1 argument"}, "accepts"},
		{[]string{"analyse"}, []string{`unknown command "analyse"`, "did you mean analyze?"}, ""},
		{[]string{"monitor", "fed"}, []string{`unknown command "fed" for underrun monitor`, "did you mean feed"}, ""},
		{[]string{"voice", "calibrat"}, []string{"did you mean calibrate?"}, ""},
		// unknown flags: the nearest of the command's flags
		{[]string{"analyze", "--chunkin", "word"}, []string{"unknown flag --chunkin", "did you mean --chunking?"}, ""},
		{[]string{"sim", "tpot-50ms", "--stak", "pipecat-cartesia"}, []string{"did you mean --stack?"}, ""},
		{[]string{"--tts-latncy", "1s"}, []string{"did you mean --tts-latency?"}, ""},
		{[]string{"analyze", "--help-al"}, []string{"did you mean --help-all?"}, ""},
		// a deprecated name near it gives the name that replaced it
		{[]string{"proxy", "--upstrem", "http://x"}, []string{"did you mean --url?"}, ""},
		{[]string{"speak", "--wav-ot", "x.wav"}, []string{"did you mean --wav?"}, ""},
		// nothing near: the commands that have it
		{[]string{"capture", "--mark-gaps"}, []string{"unknown flag --mark-gaps", "it is a flag of analyze, replay, sim"}, ""},
		{[]string{"analyze", "--zzzzzzzz"}, []string{"unknown flag --zzzzzzzz", "underrun analyze --help lists the flags"}, "did you mean"},
		{[]string{"analyze", "-Q"}, []string{"unknown shorthand flag -Q"}, ""},
	} {
		code, out, errOut := runCLI(t, "", tc.args...)
		if code != exitUsage || out != "" {
			t.Errorf("%q: exit %d, stdout %q; want %d and nothing", tc.args, code, out, exitUsage)
		}
		for _, want := range tc.has {
			if !strings.Contains(errOut, want) {
				t.Errorf("%q: stderr %q lacks %q", tc.args, errOut, want)
			}
		}
		if tc.not != "" && strings.Contains(errOut, tc.not) {
			t.Errorf("%q: stderr %q has %q", tc.args, errOut, tc.not)
		}
	}
}

func TestEditDistance(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		a, b string
		want int
	}{
		{"", "", 0}, {"", "abc", 3}, {"abc", "", 3}, {"kitten", "sitting", 3},
		{"chunking", "chunkin", 1}, {"wav", "wav-out", 4}, {"flaw", "lawn", 2},
	} {
		if got := editDistance(tc.a, tc.b); got != tc.want {
			t.Errorf("editDistance(%q, %q) = %d, want %d", tc.a, tc.b, got, tc.want)
		}
	}
}
