package trace

import (
	"bytes"
	"flag"
	"os"
	"path/filepath"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

var update = flag.Bool("update", false, "rewrite the golden files under testdata/")

// readToolFile reads every turn of a file through Open with the format told
// from the content, and returns the decoder too.
func readToolFile(t testing.TB, path string) ([]*pipeline.Turn, Decoder) {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	dec, err := Open(f, path, "auto")
	if err != nil {
		t.Fatal(err)
	}
	turns := testkit.All(t, dec.Next)
	for _, turn := range turns {
		if err := turn.Validate(); err != nil {
			t.Fatalf("%s: %v", path, err)
		}
	}
	return turns, dec
}

// toolFixtures are the example files, one per format, built by hand from
// each tool's documented output.
var toolFixtures = []struct {
	format, path string
	tool         Tool
}{
	{"vllm", "testdata/vllm/basic/result.json", ToolVLLM},
	{"sglang", "testdata/sglang/basic/result.jsonl", ToolSGLang},
	{"aiperf", "testdata/aiperf/basic/profile_export.jsonl", ToolAIPerf},
	{"genai-perf", "testdata/genaiperf/basic/profile_export.json", ToolGenAIPerf},
	{"llmperf", "testdata/llmperf/basic/example-voice-8b_550_80_individual_responses.json", ToolLLMPerf},
	{"guidellm", "testdata/guidellm/basic/benchmarks.json", ToolGuideLLM},
}

// summaryFixtures are the summary-only files, one per tool that writes
// its summary apart from its requests.
var summaryFixtures = []struct {
	format, path string
	tool         Tool
}{
	{"aiperf-summary", "testdata/aiperf/basic/profile_export_aiperf.json", ToolAIPerf},
	{"genai-perf-summary", "testdata/genaiperf/basic/profile_export_genai_perf.json", ToolGenAIPerf},
	{"llmperf-summary", "testdata/llmperf/basic/example-voice-8b_550_80_summary.json", ToolLLMPerf},
}

// TestToolFixturesGolden reads each fixture (its format told from the
// content) and compares the turns, written as a native trace, with the
// golden file beside it. Run with -update to rewrite the golden files.
func TestToolFixturesGolden(t *testing.T) {
	t.Parallel()
	for _, fx := range toolFixtures {
		t.Run(fx.format, func(t *testing.T) {
			t.Parallel()
			turns, dec := readToolFile(t, fx.path)
			td, ok := dec.(ToolDecoder)
			if !ok || td.Tool() != fx.tool {
				t.Fatalf("decoder %T is not the %s reader", dec, fx.tool)
			}
			var buf bytes.Buffer
			w := NewWriter(&buf, "convert")
			for _, turn := range turns {
				if err := w.WriteTurn(turn); err != nil {
					t.Fatal(err)
				}
			}
			golden := filepath.Join(filepath.Dir(fx.path), "turns.golden.jsonl")
			if *update {
				if err := os.WriteFile(golden, buf.Bytes(), 0o644); err != nil {
					t.Fatal(err)
				}
			}
			want, err := os.ReadFile(golden)
			if err != nil {
				t.Fatalf("%v (run go test -update to create it)", err)
			}
			if got := buf.Bytes(); !bytes.Equal(got, want) {
				t.Errorf("turns differ from %s:\ngot:\n%s\nwant:\n%s", golden, got, want)
			}
		})
	}
}
