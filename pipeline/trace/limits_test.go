package trace

import (
	"bytes"
	"errors"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestToolLimits: counts and times past what the rest of the tool can
// hold are bad input, named with the field, in every benchmark format.
func TestToolLimits(t *testing.T) {
	t.Parallel()
	vllm := fixture(t, "testdata/vllm/basic/result.json")
	aiperf := fixture(t, "testdata/aiperf/basic/profile_export.jsonl")
	genai := fixture(t, "testdata/genaiperf/basic/profile_export.json")
	manyITLs := "[" + strings.Repeat("0.001, ", MaxTurnTokens) + "0.001]"
	cases := []struct {
		name, format, input string
		want                []string
	}{
		{"vllm a million output tokens", "vllm", strings.Replace(vllm, `"output_lens": [4, 2, 0, 1, 5]`, `"output_lens": [1000000, 2, 0, 1, 5]`, 1),
			[]string{`"output_lens"[0]`, "output length 1000000; want a count from 0 to 262144"}},
		{"vllm 2e9 output tokens", "vllm", strings.Replace(vllm, `"output_lens": [4, 2, 0, 1, 5]`, `"output_lens": [4, 2000000000, 0, 1, 5]`, 1),
			[]string{`"output_lens"[1]`, "output length 2000000000"}},
		{"vllm more ITLs than tokens a turn can have", "vllm", strings.Replace(vllm, `[0.02, 0.03, 0.025]`, manyITLs, 1),
			[]string{`"itls"[0]`, "more than 262144 values in one request"}},
		{"vllm a year-long ITL", "vllm", strings.Replace(vllm, `[0.05]`, `[40000000.5]`, 1),
			[]string{`"itls"[1]`, "want a gap >= 0 and under 31536000 s"}},
		{"vllm text over 16 MiB", "vllm", strings.Replace(vllm, `"Yes, sure."`, `"`+strings.Repeat("ab cd ", 3<<20)+`"`, 1),
			[]string{`"generated_texts"[1]`, "a string longer than 16777216 bytes"}},
		{"aiperf 2e9 output tokens", "aiperf", strings.Replace(aiperf, `"output_token_count": {"value": 6, "unit": "tokens"}`, `"output_token_count": {"value": 2000000000, "unit": "tokens"}`, 1),
			[]string{"in:2", "metrics.output_token_count", "want a whole count from 0 to 262144"}},
		{"genai 2e9 completion tokens", "genai-perf", strings.Replace(genai, `\"completion_tokens\": 5`, `\"completion_tokens\": 2000000000`, 1),
			[]string{"experiments[0].requests[0]", "completion_tokens 2000000000"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := drain([]byte(tc.input), tc.format)
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v; want an ErrFormat naming %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestVLLMLongStringBoundedMemory: a vLLM file whose label is a 20 MB
// string reads with the reader's buffers at their usual size (a skipped
// value is never held), and one whose generated text is 20 MB is refused
// once the text passes MaxTextBytes, its buffers never past that.
func TestVLLMLongStringBoundedMemory(t *testing.T) {
	t.Parallel()
	vllm := fixture(t, "testdata/vllm/basic/result.json")
	huge := strings.Repeat("gibberish ", 2<<20)
	dir := t.TempDir()
	write := func(name, content string) *os.File {
		path := filepath.Join(dir, name)
		if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
			t.Fatal(err)
		}
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { f.Close() })
		return f
	}
	label := write("label.json", strings.Replace(vllm, `"label": null`, `"label": "`+huge+`"`, 1))
	dec, err := Open(label, "label.json", "auto")
	if err != nil {
		t.Fatal(err)
	}
	n, most := 0, 0
	for {
		_, err := dec.Next()
		if err != nil {
			if !strings.Contains(err.Error(), "EOF") {
				t.Fatal(err)
			}
			break
		}
		n++
		most = max(most, footprint(dec))
	}
	if n != 5 || most > 2<<20 {
		t.Errorf("read %d turns holding up to %d bytes; want 5 turns in under 2 MiB", n, most)
	}

	text := write("text.json", strings.Replace(vllm, `"Yes, sure."`, `"`+huge+`"`, 1))
	dec, err = Open(text, "text.json", "auto")
	if err != nil {
		t.Fatal(err)
	}
	for {
		_, err := dec.Next()
		if err == nil {
			continue
		}
		if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), `"generated_texts"[1]: a string longer than`) {
			t.Errorf("error %v; want the generated text refused", err)
		}
		break
	}
	if got := footprint(dec); got > MaxTextBytes+4<<20 {
		t.Errorf("the refused text left %d bytes of buffers; want at most MaxTextBytes and change", got)
	}
}

// TestVLLMSniffPastTheHead: a vLLM result whose telling keys come after
// the first 64 KiB (keys sorted by name put "errors" and "generated_texts"
// first) is still told from its content, when it can be read at offsets;
// from a pipe the error says to name the format.
func TestVLLMSniffPastTheHead(t *testing.T) {
	t.Parallel()
	texts := `"` + strings.Repeat("x", 100<<10) + `"`
	in := `{"completed": 1, "errors": [""], "generated_texts": [` + texts + `], "itls": [[0.02]], "output_lens": [2], "ttfts": [0.1]}`
	dec, err := Open(bytes.NewReader([]byte(in)), "sorted.json", "auto")
	if err != nil {
		t.Fatal(err)
	}
	if td, ok := dec.(ToolDecoder); !ok || td.Tool() != ToolVLLM {
		t.Fatalf("decoder %T, want the vLLM reader", dec)
	}
	turn, err := dec.Next()
	if err != nil || len(turn.Chunks) != 2 {
		t.Fatalf("turn %+v, error %v", turn, err)
	}
	_, err = Open(struct{ io.Reader }{strings.NewReader(in)}, "stdin", "auto")
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "name it with --format") {
		t.Errorf("from a pipe: %v", err)
	}
}

// TestStartTimeLimits: start times near the int64 limits (issue 45) made
// replay lay turns out 292 years apart and fail with "unknown turn", with
// neither file nor line; every reader refuses them where it reads them.
func TestStartTimeLimits(t *testing.T) {
	t.Parallel()
	aiperf := fixture(t, "testdata/aiperf/basic/profile_export.jsonl")
	genai := fixture(t, "testdata/genaiperf/basic/profile_export.json")
	chunk := `{"type":"chunk","turn":"a","t_ns":1000,"text":"Hi"}` + "\n"
	for _, tc := range []struct {
		name, format, input string
		want                []string
	}{
		{"native far past", "native", `{"type":"turn","turn":"a","start_unix_ns":-9223372036854775000}` + "\n" + chunk,
			[]string{"in:1", `turn "a"`, "start_unix_ns", "-9223372036854775000", "want from 0 to 4611686018427387904"}},
		{"native far future", "native", `{"type":"turn","turn":"a","start_unix_ns":9223372036854775000}` + "\n" + chunk,
			[]string{"in:1", "start_unix_ns"}},
		{"native just past 2116", "native", `{"type":"turn","turn":"a","start_unix_ns":4611686018427387905}` + "\n" + chunk,
			[]string{"in:1", "start_unix_ns"}},
		{"capture", "sse", `{"type":"sse_header","format":"underrun-sse","version":1}` + "\n" +
			`{"type":"request","stream":"s","start_unix_ns":-9223372036854775000}` + "\n",
			[]string{"in:2", `stream "s"`, "start_unix_ns"}},
		{"aiperf", "aiperf", strings.Replace(aiperf, `"request_start_ns": `, `"request_start_ns": 9000000000000000000, "x": `, 1),
			[]string{"request_start_ns", "want from 0"}},
		{"genai-perf", "genai-perf", strings.Replace(genai, `"timestamp": `, `"timestamp": 9000000000000000000, "x": `, 1),
			[]string{"experiments[0].requests[0]", "timestamp", "want from 0"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := drain([]byte(tc.input), tc.format)
			if !errors.Is(err, ErrFormat) {
				t.Fatalf("error %v; want an ErrFormat naming %q", err, tc.want)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}
