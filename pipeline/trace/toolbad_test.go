package trace

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"os"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// drain reads every turn of input in format.
func drain(input []byte, format string) ([]*pipeline.Turn, error) {
	dec, err := Open(bytes.NewReader(input), "in", format)
	if err != nil {
		return nil, err
	}
	var turns []*pipeline.Turn
	for range 1 << 20 {
		turn, err := dec.Next()
		if errors.Is(err, io.EOF) {
			return turns, nil
		}
		if err != nil {
			return turns, err
		}
		turns = append(turns, turn)
	}
	return turns, errors.New("reader did not finish")
}

func fixture(t testing.TB, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// TestToolBadFiles: wrong schemas, arrays of different lengths and files
// cut in the middle give errors that name the field or the line.
func TestToolBadFiles(t *testing.T) {
	t.Parallel()
	vllm := fixture(t, "testdata/vllm/basic/result.json")
	sglang := fixture(t, "testdata/sglang/basic/result.jsonl")
	aiperf := fixture(t, "testdata/aiperf/basic/profile_export.jsonl")
	genai := fixture(t, "testdata/genaiperf/basic/profile_export.json")
	cases := []struct {
		name, format, input string
		want                []string
	}{
		{"vllm lengths", "vllm", strings.Replace(vllm, `[[0.02, 0.03, 0.025], [0.05], [], [], [0.04, 0.5]]`, `[[0.02, 0.03, 0.025], [0.05], []]`, 1),
			[]string{`"itls" has 3 entries but "ttfts" has 5`, "in:23"}},
		{"vllm cut", "vllm", vllm[:len(vllm)/2], []string{"cut off"}},
		{"vllm cut in arrays", "vllm", vllm[:strings.Index(vllm, `"start_times"`)+30], []string{"cut off"}},
		{"vllm itl not a number", "vllm", strings.Replace(vllm, `[0.05]`, `["0.05"]`, 1), []string{`"itls"[1]`, "want a number, got a string", "in:23"}},
		{"vllm negative itl", "vllm", strings.Replace(vllm, `[0.05]`, `[-0.05]`, 1), []string{`"itls"[1]`, "want a gap >= 0"}},
		{"vllm ttfts not array", "vllm", strings.Replace(vllm, `"ttfts": [0.1, 0.2, 0.0, 0.15, 0.3]`, `"ttfts": 0.1`, 1), []string{`"ttfts"`, "want an array"}},
		{"vllm not an object", "vllm", `[1, 2]`, []string{"want a JSON object"}},
		{"vllm empty", "vllm", "", []string{"empty input"}},
		{"sglang lengths on line 2", "sglang", strings.Replace(sglang, `"output_lens": [4, 3]`, `"output_lens": [4]`, 1),
			[]string{`in:2: "output_lens" has 1 entries but "ttfts" has 2`}},
		{"sglang cut", "sglang", sglang[:len(sglang)-100], []string{"in:2", "cut off"}},
		{"aiperf cut", "aiperf", aiperf[:len(aiperf)-40], []string{"in:7", "cut off"}},
		{"aiperf icl not a list of numbers", "aiperf", strings.Replace(aiperf, `[50.0, 45.5]`, `[50.0, "x"]`, 1),
			[]string{"in:2", "metrics.inter_chunk_latency", "want a number"}},
		{"aiperf bad unit", "aiperf", strings.Replace(aiperf, `"value": 95.0, "unit": "ms"`, `"value": 95.0, "unit": "parsec"`, 1),
			[]string{"in:2", "time_to_first_token", `unit "parsec"`}},
		{"aiperf negative gap", "aiperf", strings.Replace(aiperf, `[50.0, 45.5]`, `[50.0, -45.5]`, 1),
			[]string{"in:2", "inter_chunk_latency[1]", "want a time >= 0"}},
		{"aiperf not json", "aiperf", aiperf + "garbage\n", []string{"in:8", "want an AIPerf record"}},
		{"genai lengths", "genai-perf", strings.Replace(genai, `"response_timestamps": [
            1764669702030000000,`, `"response_timestamps": [`, 1),
			[]string{"experiments[0].requests[2]", `"response_timestamps" has 2 entries but "response_outputs" has 3`}},
		{"genai cut", "genai-perf", genai[:len(genai)/2], []string{"experiments[0].requests[1]", "cut off"}},
		{"genai no experiments", "genai-perf", `{"version": "1"}`, []string{`no "experiments"`}},
		{"genai bad response", "genai-perf", strings.Replace(genai, `data: [DONE]`, `data: {oops`, 1),
			[]string{"experiments[0].requests[0]", "response_outputs[5]", "not an OpenAI-compatible JSON event"}},
		{"genai time order", "genai-perf", strings.Replace(genai, `1764669700190000000`, `1764669700150000000`, 1),
			[]string{"experiments[0].requests[0]", "response 3", "arrival order"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			_, err := drain([]byte(tc.input), tc.format)
			if err == nil {
				t.Fatalf("no error; want one naming %q", tc.want)
			}
			if !errors.Is(err, ErrFormat) {
				t.Errorf("error does not wrap ErrFormat: %v", err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q does not say %q", err, w)
				}
			}
		})
	}
}

// TestToolSniff: each fixture is told from its content as its own format
// and no other.
func TestToolSniff(t *testing.T) {
	t.Parallel()
	for _, fx := range append(toolFixtures, summaryFixtures...) {
		head := []byte(fixture(t, fx.path))
		var matched []string
		for _, f := range Formats {
			if f.Sniff(head) {
				matched = append(matched, f.Name)
			}
		}
		if len(matched) != 1 || matched[0] != fx.format {
			t.Errorf("%s sniffed as %v, want [%s]", fx.path, matched, fx.format)
		}
	}
	if Formats[0].Name != "native" {
		t.Errorf("first format %q, want native", Formats[0].Name)
	}
}

// randomVLLM writes a random vLLM result and the turns it must read as.
func randomVLLM(rng *rand.Rand, n int) ([]byte, []*pipeline.Turn) {
	var b strings.Builder
	var ttfts, itls, outs, texts, errs []string
	var want []*pipeline.Turn
	for i := range n {
		// times in units of 100 ns and 10 ns, written as seconds: the
		// chunks arrive at their exact sums
		ttftUnits := 1 + rng.Int64N(2e6)
		ttft := float64(ttftUnits) / 1e7
		t := &pipeline.Turn{ID: fmt.Sprint(i), Status: pipeline.StatusOK, Operation: pipeline.OperationTextCompletion} // backend vllm: /v1/completions
		var gaps []string
		at := time.Duration(ttftUnits * 100)
		chunks := []pipeline.Chunk{{At: at, Tokens: 1, Textless: true}}
		for range rng.IntN(40) {
			units := rng.Int64N(3e6)
			at += time.Duration(units * 10)
			gaps = append(gaps, fmt.Sprint(float64(units)/1e8))
			chunks = append(chunks, pipeline.Chunk{At: at, Tokens: 1, Textless: true})
		}
		errText := ""
		if rng.IntN(6) == 0 {
			errText = "boom \"quoted\" " + fmt.Sprint(i)
			t.Status, t.Error = pipeline.StatusError, errText
		}
		out := len(chunks) + rng.IntN(3)
		t.OutputTokens = out
		spreadTokens(chunks, out)
		t.Chunks = chunks
		text := ""
		if rng.IntN(2) == 0 {
			text = strings.Repeat(" word", rng.IntN(60)) + " é\n\"end\"."
			spreadText(t.Chunks, text)
		}
		want = append(want, t)
		ttfts = append(ttfts, fmt.Sprint(ttft))
		itls = append(itls, "["+strings.Join(gaps, ", ")+"]")
		outs = append(outs, fmt.Sprint(out))
		q, _ := jsonString(text)
		texts = append(texts, q)
		q, _ = jsonString(errText)
		errs = append(errs, q)
	}
	fmt.Fprintf(&b, `{"backend": "vllm", "tokenizer_id": "x", "completed": %d, "ttfts": [%s], "itls": [%s], "output_lens": [%s], "generated_texts": [%s], "errors": [%s], "mean_ttft_ms": NaN}`,
		n, strings.Join(ttfts, ", "), strings.Join(itls, ", "), strings.Join(outs, ", "), strings.Join(texts, ", "), strings.Join(errs, ", "))
	return []byte(b.String()), want
}

func jsonString(s string) (string, error) {
	return string(appendString(nil, s)), nil
}

// TestToolRoundTrip is the round-trip property: random tool files read as
// the turns they describe, and those turns come back unchanged through the
// native format.
func TestToolRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 7))
	for iter := range 30 {
		data, want := randomVLLM(rng, 1+rng.IntN(20))
		got, err := drain(data, "")
		if err != nil {
			t.Fatalf("iteration %d: %v", iter, err)
		}
		if !reflect.DeepEqual(got, want) {
			t.Fatalf("iteration %d: read %+v\nwant %+v", iter, got[0], want[0])
		}
		var buf bytes.Buffer
		w := NewWriter(&buf, "convert")
		for _, turn := range got {
			if err := w.WriteTurn(turn); err != nil {
				t.Fatal(err)
			}
		}
		back, err := drain(buf.Bytes(), "")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, want) {
			t.Fatalf("iteration %d: native round trip changed the turns:\n%+v\nwant %+v", iter, back[0], want[0])
		}
	}
	// every fixture survives the native round trip too
	for _, fx := range toolFixtures {
		turns, _ := readToolFile(t, fx.path)
		var buf bytes.Buffer
		w := NewWriter(&buf, "convert")
		for _, turn := range turns {
			w.WriteTurn(turn)
		}
		back, err := drain(buf.Bytes(), "native")
		if err != nil {
			t.Fatal(err)
		}
		if !reflect.DeepEqual(back, turns) {
			t.Errorf("%s: native round trip changed the turns", fx.path)
		}
	}
}

func fuzzTool(f *testing.F, format, path string) {
	b, err := os.ReadFile(path)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(b)
	f.Add(b[:len(b)/3])
	f.Add([]byte("{}"))
	// the hostile inputs of issue 20: counts and times past the limits
	for _, r := range []*strings.Replacer{
		strings.NewReplacer(`"output_lens": [4,`, `"output_lens": [1000000,`, `"output_token_count": {"value": 3,`, `"output_token_count": {"value": 2000000000,`,
			`\"completion_tokens\": 5`, `\"completion_tokens\": 2000000000`),
		strings.NewReplacer(`[0.05]`, `[9223372036.9]`, `"value": 120.5, "unit": "ms"`, `"value": 9.3e18, "unit": "ns"`,
			`1764669700196000000`, `9223372036854775807`),
	} {
		f.Add([]byte(r.Replace(string(b))))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		dec, err := Open(bytes.NewReader(data), "fuzz", format)
		if err != nil {
			t.Fatal(err) // opening by name does not read
		}
		drainFuzz(t, dec, data, 100000, ErrFormat, nil)
	})
}

// drainFuzz reads dec to its end, at most limit turns, as the fuzzers
// do: every turn sound, the reader's memory in proportion to its input,
// no error but io.EOF or one wrapping want; check, if any, runs after
// every Next.
func drainFuzz(t *testing.T, dec Decoder, data []byte, limit int, want error, check func()) {
	t.Helper()
	for range limit {
		turn, err := dec.Next()
		checkFootprint(t, dec, data)
		if check != nil {
			check()
		}
		if err != nil {
			if !errors.Is(err, io.EOF) && !errors.Is(err, want) {
				t.Fatalf("error %v is neither EOF nor %v", err, want)
			}
			return
		}
		checkTurn(t, turn)
	}
	t.Fatal("reader did not finish")
}

// checkTurn fails a fuzz run whose reader returned a turn that cannot be
// real or that the rest of the tool cannot hold.
func checkTurn(t *testing.T, turn *pipeline.Turn) {
	t.Helper()
	if err := turn.Validate(); err != nil {
		t.Fatalf("reader returned an invalid turn: %v", err)
	}
	if err := checkLimits(turn); err != nil {
		t.Fatalf("reader returned a turn past the limits: %v", err)
	}
}

// checkFootprint fails a fuzz run whose reader holds memory out of
// proportion to its input.
func checkFootprint(t *testing.T, dec Decoder, data []byte) {
	t.Helper()
	if n, most := footprint(dec), 2<<20+64*len(data); n > most {
		t.Fatalf("reader holds %d bytes for %d bytes of input; want at most %d", n, len(data), most)
	}
}

func FuzzVLLMReader(f *testing.F)   { fuzzTool(f, "vllm", "testdata/vllm/basic/result.json") }
func FuzzSGLangReader(f *testing.F) { fuzzTool(f, "sglang", "testdata/sglang/basic/result.jsonl") }
func FuzzAIPerfReader(f *testing.F) {
	fuzzTool(f, "aiperf", "testdata/aiperf/basic/profile_export.jsonl")
}
func FuzzLLMPerfReader(f *testing.F) {
	fuzzTool(f, "llmperf", "testdata/llmperf/basic/example-voice-8b_550_80_individual_responses.json")
}
func FuzzGuideLLMReader(f *testing.F) {
	fuzzTool(f, "guidellm", "testdata/guidellm/basic/benchmarks.json")
}
func FuzzGenAIPerfReader(f *testing.F) {
	fuzzTool(f, "genai-perf", "testdata/genaiperf/basic/profile_export.json")
}
