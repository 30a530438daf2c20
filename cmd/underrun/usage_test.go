package main

import (
	"errors"
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
		// monitor load's hidden tools speak as the other commands do
		{[]string{"monitor", "echo", "x"}, []string{"monitor echo takes no arguments", `"x"`, "for example: underrun monitor echo --listen"}, `for "underrun`},
		{[]string{"monitor", "sink", "x", "y"}, []string{"monitor sink takes no arguments", `"x" "y"`, "for example: underrun monitor sink"}, `for "underrun`},
		{[]string{"monitor", "watch", "x"}, []string{"monitor watch takes no arguments", `"x"`}, `for "underrun`},
		{[]string{"monitor", "watch"}, []string{"monitor watch needs --monitor URL", "for example: underrun monitor watch --monitor http://"}, ""},
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

// TestEveryCommandsArguments holds every command, hidden ones included, to
// the messages above: too many arguments give a usage error of underrun's
// own, never cobra's ("accepts 0 arg(s)", `unknown command "x" for "underrun
// monitor echo"`).
func TestEveryCommandsArguments(t *testing.T) {
	t.Parallel()
	extra := []string{"a1", "a2", "a3", "a4", "a5", "a6", "a7", "a8", "a9"}
	for _, path := range commandPaths() {
		c := findCommand(t, &env{}, path)
		if c.Args == nil {
			if c.HasSubCommands() {
				t.Errorf("%v: no Args check, so cobra's own message for an unknown command; give it positional(...)", path)
			}
			continue // a leaf without one takes any number
		}
		err := c.Args(c, extra)
		if err == nil {
			continue // takes any number
		}
		var ue usageError
		if !errors.As(err, &ue) {
			t.Errorf("%v with %d arguments: %q is not underrun's usage error", path, len(extra), err)
		}
		if msg := err.Error(); strings.Contains(msg, "accepts") || strings.Contains(msg, `for "underrun`) {
			t.Errorf("%v with %d arguments: cobra's message %q", path, len(extra), msg)
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
