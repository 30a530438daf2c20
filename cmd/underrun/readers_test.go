package main

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestAnalyzeBadInputExitsTwo: input that cannot be read exits 2 with a
// message naming the line or field, also when it is a single line of
// garbage for a format named with --format, or counts and times past what
// the rest of the tool can hold.
func TestAnalyzeBadInputExitsTwo(t *testing.T) {
	t.Parallel()
	long := `{"type":"chunk","turn":"a","t_ns":1,"text":"` + strings.Repeat("x", 2<<20) + "\"}\n"
	cases := []struct {
		name, stdin string
		args        []string
		want        string
	}{
		{"sse garbage", "garbage", []string{"--format", "sse"}, "stdin:1: not a JSON object"},
		{"sse garbage lines", "garbage\nmore garbage\n", []string{"--format", "sse"}, "stdin:1: not a JSON object"},
		{"native garbage", "garbage", []string{"--format", "native"}, "stdin:1: not a JSON object"},
		{"long first line", long, nil, "stdin:1: line longer than"},
		{"long second line", `{"type":"header"}` + "\n" + long, []string{"--format", "native"}, "stdin:2: line longer than"},
		{"a million tokens, with --wav", `{"type":"chunk","turn":"a","t_ns":1,"tokens":1000000}` + "\n",
			[]string{"--wav", "WAV", "--audio-engine", "synthetic"}, `stdin:1: chunk of turn "a" has tokens 1000000; want a count from 0 to 262144`},
		{"a turn that speaks for hours, with --wav", `{"type":"chunk","turn":"a","t_ns":1,"tokens":200000}` + "\n",
			[]string{"--wav", "WAV", "--audio-engine", "synthetic", "--chunking", "token"}, `--wav: turn "a" plays for`},
		{"t_ns past a year", `{"type":"chunk","turn":"a","t_ns":9223372036854775807,"text":"Hi"}` + "\n", nil, "t_ns 9223372036854775807; want a time from 0"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			args := append([]string{"analyze"}, tc.args...)
			for i, a := range args {
				if a == "WAV" {
					args[i] = filepath.Join(t.TempDir(), "out.wav")
				}
			}
			code, _, stderr := runCLI(t, tc.stdin, args...)
			if code != exitUsage || !strings.Contains(stderr, tc.want) {
				t.Errorf("exit %d, stderr %q; want exit 2 saying %q", code, stderr, tc.want)
			}
		})
	}
}

// TestAnalyzeVLLMPastTheHead: a vLLM result whose identifying keys come
// after its first 64 KiB (here: keys sorted by name, a long text first)
// is told from its content when analyze reads it from a file.
func TestAnalyzeVLLMPastTheHead(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "sorted.json")
	text := strings.Repeat("Sure, here it is. ", 5000)
	in := `{"completed": 1, "errors": [""], "generated_texts": ["` + text + `"], "itls": [[0.02, 0.02]], "output_lens": [3], "ttfts": [0.1]}`
	if err := os.WriteFile(path, []byte(in), 0o644); err != nil {
		t.Fatal(err)
	}
	code, stdout, stderr := runCLI(t, "", "analyze", "--per-turn", path)
	if code == exitUsage || !strings.Contains(stdout, "vllm "+path) {
		t.Errorf("exit %d, stderr %s, stdout:\n%s", code, stderr, stdout)
	}
}
