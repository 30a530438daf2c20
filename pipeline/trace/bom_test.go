package trace

import (
	"errors"
	"io"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
)

// TestByteOrderMark: a trace that starts with UTF-8's byte-order mark (as
// Windows editors save it) was "not a format underrun knows" (issue 45);
// it reads as the same file without the mark, in every format, from a
// stream and from a file read at offsets (vLLM's reader reads it so), and
// Detect tells its format.
func TestByteOrderMark(t *testing.T) {
	t.Parallel()
	bom := string(byteOrderMark)
	for _, tc := range []struct{ format, path string }{
		{"native", ""},
		{"vllm", "testdata/vllm/basic/result.json"},
		{"sglang", "testdata/sglang/basic/result.jsonl"},
		{"aiperf", "testdata/aiperf/basic/profile_export.jsonl"},
		{"genai-perf", "testdata/genaiperf/basic/profile_export.json"},
	} {
		t.Run(tc.format, func(t *testing.T) {
			t.Parallel()
			src := `{"type":"chunk","turn":"a","t_ns":1000,"text":"Hi"}` + "\n" + `{"type":"end","turn":"a"}` + "\n"
			if tc.path != "" {
				src = fixture(t, tc.path)
			}
			want, err := drain([]byte(src), "")
			if err != nil {
				t.Fatal(err)
			}
			if got := Detect([]byte(bom + src)); got != tc.format {
				t.Errorf("Detect: %q, want %q", got, tc.format)
			}
			got, err := drain([]byte(bom+src), "")
			if err != nil {
				t.Fatalf("from a stream: %v", err)
			}
			if !sameTurns(got, want) {
				t.Errorf("from a stream: %d turns, want %d as without the mark", len(got), len(want))
			}
			file := filepath.Join(t.TempDir(), "bom")
			if err := os.WriteFile(file, []byte(bom+src), 0o644); err != nil {
				t.Fatal(err)
			}
			f, err := os.Open(file)
			if err != nil {
				t.Fatal(err)
			}
			defer f.Close()
			dec, err := Open(f, file, "")
			if err != nil {
				t.Fatalf("from a file: %v", err)
			}
			got, err = drainDecoder(dec)
			if err != nil {
				t.Fatalf("from a file: %v", err)
			}
			if !sameTurns(got, want) {
				t.Errorf("from a file: %d turns, want %d as without the mark", len(got), len(want))
			}
			// with --format named, too
			if got, err = drain([]byte(bom+src), tc.format); err != nil || !sameTurns(got, want) {
				t.Errorf("--format %s: %d turns, %v", tc.format, len(got), err)
			}
		})
	}
	// a mark alone is an empty input, as nothing is
	if _, err := drain([]byte(bom), ""); err == nil || !strings.Contains(err.Error(), "empty input") {
		t.Errorf("a mark alone: %v, want empty input", err)
	}
}

// drainDecoder reads every turn of dec.
func drainDecoder(dec Decoder) ([]*pipeline.Turn, error) {
	var turns []*pipeline.Turn
	for {
		t, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return turns, nil
		}
		if err != nil {
			return turns, err
		}
		turns = append(turns, t)
	}
}

// sameTurns reports whether two reads gave the same turns.
func sameTurns(a, b []*pipeline.Turn) bool {
	return len(a) > 0 && reflect.DeepEqual(a, b)
}
