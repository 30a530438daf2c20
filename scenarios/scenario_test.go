package scenarios

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"os"
	"reflect"
	"strings"
	"testing"
	"testing/fstest"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/memtest"
	"github.com/speech-pipeline/underrun/tts"
)

// testMonteCarlo caps the Monte Carlo turns so the suite stays fast under
// -race; every expectation must hold at this size too.
const testMonteCarlo = 300

func evaluate(t *testing.T, s *Scenario) *Evaluation {
	t.Helper()
	ev, err := s.Evaluate(context.Background(), RunOptions{
		MonteCarlo: min(s.MonteCarlo, testMonteCarlo),
		Report:     pipeline.ReportOptions{MaxTPOT: true},
	})
	if err != nil {
		t.Fatal(err)
	}
	return ev
}

func TestBuiltinScenarios(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			s, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Expect) == 0 {
				t.Fatalf("%s documents no expectation", name)
			}
			ev := evaluate(t, s)
			for _, c := range ev.Checks {
				if !c.Pass {
					t.Errorf("%s: expectation %s (line %d) failed: got %v", name, c.Expectation, c.Line, c.Got)
				}
			}
		})
	}
}

func TestLibrary(t *testing.T) {
	t.Parallel()
	all, err := All()
	if err != nil {
		t.Fatal(err)
	}
	if len(all) < 10 {
		t.Errorf("%d built-in scenarios, want at least 10", len(all))
	}
	gpus := map[string]bool{}
	kinds := map[string]bool{}
	policies := map[string]bool{}
	var chunked, unchunked, speculative, reasoning, slowSynth bool
	stacks := map[string]bool{}
	for _, s := range all {
		// a scenario that models a named stack says so in its doc too
		if st := s.File.TTS.Stack; st != "" {
			stacks[st] = true
			if !strings.Contains(s.Doc, st+" stack") {
				t.Errorf("%s: doc %q does not name its stack %s", s.Name, s.Doc, st)
			}
		}
		if s.Doc == "" || strings.Contains(s.Doc, "\n") {
			t.Errorf("%s: doc %q is not one line", s.Name, s.Doc)
		}
		if s.Source != "builtin:"+s.Name {
			t.Errorf("%s: name does not match its file (%s)", s.Name, s.Source)
		}
		f := s.File.Generator
		kinds[f.Kind] = true
		if f.Kind == KindRoofline {
			gpus[f.GPU] = true
		}
		if f.Prefill != nil {
			chunked = chunked || f.Prefill.Chunked
			unchunked = unchunked || !f.Prefill.Chunked
		}
		speculative = speculative || f.Speculative != nil
		reasoning = reasoning || f.Reasoning != nil
		slowSynth = slowSynth || s.Setup.Config.Synth.RTF > 1
		policies[strings.SplitN(s.Setup.Config.Policy.Name(), ":", 2)[0]] = true
	}
	for _, g := range []string{"a100", "h100", "h200", "h20", "b200", "l4", "rtx4090"} {
		if !gpus[g] {
			t.Errorf("no scenario on %s", g)
		}
	}
	for _, p := range []string{"token", "word", "sentence", "livekit", "elevenlabs-schedule", "timer"} {
		if !policies[p] {
			t.Errorf("no scenario behind the %s policy", p)
		}
	}
	for _, st := range tts.Stacks {
		if !stacks[st.Name] {
			t.Errorf("no scenario models the %s stack", st.Name)
		}
	}
	for _, k := range Kinds {
		if !kinds[k] {
			t.Errorf("no scenario of kind %s", k)
		}
	}
	if !chunked || !unchunked || !speculative || !reasoning || !slowSynth {
		t.Errorf("missing: chunked %v unchunked %v speculative %v reasoning %v slow synthesizer %v", chunked, unchunked, speculative, reasoning, slowSynth)
	}
}

func TestDefaultScenarioIsDefaultTurn(t *testing.T) {
	t.Parallel()
	s, err := Builtin("default")
	if err != nil {
		t.Fatal(err)
	}
	var got *pipeline.Turn
	if err := s.EachTurn(context.Background(), 1, func(t *pipeline.Turn) error { got = t; return nil }); err != nil {
		t.Fatal(err)
	}
	if want := DefaultTurn(); !reflect.DeepEqual(got.Chunks, want.Chunks) {
		t.Errorf("the default scenario's turn differs from DefaultTurn()")
	}
}

// TestChunkedPrefill: under the same load, chunked prefill bounds the ITL
// tail and keeps more turns uninterrupted.
func TestChunkedPrefill(t *testing.T) {
	t.Parallel()
	u, err := Builtin("prefill-unchunked")
	if err != nil {
		t.Fatal(err)
	}
	c, err := Builtin("prefill-chunked")
	if err != nil {
		t.Fatal(err)
	}
	eu, ec := evaluate(t, u), evaluate(t, c)
	if !(ec.MonteCarlo.ITL.Max < eu.MonteCarlo.ITL.Max/3) {
		t.Errorf("chunked ITL max %.0f ms, unchunked %.0f ms", ec.MonteCarlo.ITL.Max, eu.MonteCarlo.ITL.Max)
	}
	if !(ec.MonteCarlo.Goodput > eu.MonteCarlo.Goodput) {
		t.Errorf("chunked goodput %.4f, unchunked %.4f", ec.MonteCarlo.Goodput, eu.MonteCarlo.Goodput)
	}
}

func TestSameSeedSameResult(t *testing.T) {
	t.Parallel()
	render := func(seed uint64) string {
		s, err := Builtin("policy-word")
		if err != nil {
			t.Fatal(err)
		}
		s.Seed = seed
		ev, err := s.Evaluate(context.Background(), RunOptions{Turns: 10, MonteCarlo: 200, Report: pipeline.ReportOptions{PerTurn: true}})
		if err != nil {
			t.Fatal(err)
		}
		var b bytes.Buffer
		if err := ev.Report.WriteJSON(&b); err != nil {
			t.Fatal(err)
		}
		if err := json.NewEncoder(&b).Encode(ev.MonteCarlo); err != nil {
			t.Fatal(err)
		}
		return b.String()
	}
	a, b, c := render(5), render(5), render(6)
	if a != b {
		t.Errorf("same seed, different results")
	}
	if a == c {
		t.Errorf("different seeds, same results")
	}
}

func TestParseErrors(t *testing.T) {
	t.Parallel()
	checkParseErrors(t, []parseErrorCase{
		{"unknown field", "generator:\n  kind: constant\n  tpot: 50ms\n  tpto: 1\n", []string{"line 4", "tpto"}},
		{"bad duration", "generator:\n  kind: constant\n  tpot: fast\n", []string{"line 3", "invalid duration", "fast", "such as 50ms"}},
		{"unknown kind", "generator:\n  kind: weibull\n", []string{"line 2", "generator.kind", "constant, lognormal"}},
		{"missing kind", "turns: 3\n", []string{"generator.kind"}},
		{"no tpot", "generator:\n  kind: constant\n", []string{"generator.tpot", "positive tpot"}},
		{"no cv", "generator:\n  kind: lognormal\n  tpot: 40ms\n", []string{"generator.cv", "coefficient of variation"}},
		{"field of another kind", "generator:\n  kind: constant\n  tpot: 40ms\n  gpu: h100\n", []string{"line 4", "generator.gpu", "only by roofline"}},
		{"unknown gpu", "generator:\n  kind: roofline\n  gpu: tpu\n  model: llama-3.1-8b\n", []string{"line 3", "generator.gpu", "h100"}},
		{"does not fit", "generator:\n  kind: roofline\n  gpu: l4\n  model: llama-3.1-70b\n", []string{"line 2", "generator", "needs", "GB", "largest batch"}},
		{"overload", "generator:\n  kind: roofline\n  gpu: l4\n  model: llama-3.1-8b\n  prefill:\n    rate: 50\n    prompt_tokens: {mean: 8000}\n", []string{"prefill load"}},
		{"bad budget", "generator:\n  kind: roofline\n  gpu: h100\n  model: llama-3.1-8b\n  prefill:\n    rate: 1\n    prompt_tokens: {mean: 800}\n    token_budget: 100\n", []string{"line 8", "token_budget"}},
		{"bad policy", "generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  chunking: paragraph\n", []string{"line 5", "tts.chunking"}},
		{"negative rtf", "generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  rtf: -1\n", []string{"line 5", "tts.rtf"}},
		{"bad stack", "generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  stack: pipecat-nope\n", []string{"line 5", "tts.stack", "unknown stack \"pipecat-nope\""}},
		{"bad mode", "generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  mode: batch\n", []string{"line 5", "tts.mode", "stream, request or parallel"}},
		{"negative continuation", "generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  continuation: -5ms\n", []string{"line 5", "tts.continuation"}},
		{"unknown metric", "generator:\n  kind: constant\n  tpot: 40ms\nexpect:\n  loudness: 3\n", []string{"line 5", "expect.loudness", "unknown metric"}},
		{"bad comparison", "generator:\n  kind: constant\n  tpot: 40ms\nexpect:\n  interruptions: \"about 3\"\n", []string{"line 5", "expect.interruptions", "comparison"}},
		{"two texts", "text: hi\ntokens: 3\ngenerator:\n  kind: constant\n  tpot: 40ms\n", []string{"one of text"}},
		{"no corpus file system", "corpus_file: x.txt\ngenerator:\n  kind: constant\n  tpot: 40ms\n", []string{"corpus_file"}},
		{"negative turns", "turns: -1\ngenerator:\n  kind: constant\n  tpot: 40ms\n", []string{"line 1", "turns"}},
		{"speculative without drafts", "generator:\n  kind: constant\n  tpot: 40ms\n  speculative: {acceptance: 0.5}\n", []string{"draft_tokens"}},
		{"no trace", "generator:\n  kind: empirical\n", []string{"trace file or a list of itls"}},
	})
}

// parseErrorCase is a scenario file that must not parse: its name, its
// text, and the substrings of its error.
type parseErrorCase struct {
	name, src string
	want      []string
}

// checkParseErrors runs checkParseError on each case, in parallel.
func checkParseErrors(t *testing.T, cases []parseErrorCase) {
	t.Helper()
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			checkParseError(t, c.src, c.want)
		})
	}
}

// checkParseError parses src and checks that the error is ErrScenario
// and mentions every string of want.
func checkParseError(t *testing.T, src string, want []string) {
	t.Helper()
	_, err := Parse([]byte(src), "test.yaml", nil, "")
	if err == nil {
		t.Fatal("no error")
	}
	if !errors.Is(err, ErrScenario) {
		t.Errorf("%v is not ErrScenario", err)
	}
	for _, w := range want {
		if !strings.Contains(err.Error(), w) {
			t.Errorf("error %q does not mention %q", err, w)
		}
	}
}

// TestParseStack: tts.stack sets the policy and synthesizer; the keys
// given replace its figures.
func TestParseStack(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte("generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  stack: livekit-openai\n  ttfa: 500ms\n  wpm: 170\n"), "s.yaml", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	cfg := s.Setup.Config
	if cfg.Stack != "livekit-openai" || cfg.Policy.Name() != "livekit" || cfg.Synth.Timing() != tts.ModeRequest ||
		cfg.Synth.TTFA != 500*time.Millisecond || cfg.Voice.WPM != 170 {
		t.Errorf("config %+v %s, want livekit-openai with 500 ms first audio and 170 wpm", cfg.Synth, cfg.Policy.Name())
	}
	s, err = Parse([]byte("generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  stack: pipecat-cartesia\n  mode: request\n"), "s.yaml", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Setup.Config.Synth; got.Timing() != tts.ModeRequest || got.TTFA != 140*time.Millisecond {
		t.Errorf("pipecat-cartesia in request mode: %+v", got)
	}
}

func TestParseFiles(t *testing.T) {
	t.Parallel()
	trace := `{"type":"header","format":"underrun-trace","version":1}
{"type":"turn","turn":"a"}
{"type":"chunk","turn":"a","t_ns":300000000,"text":"Hi"}
{"type":"chunk","turn":"a","t_ns":340000000,"text":" there"}
{"type":"chunk","turn":"a","t_ns":400000000,"text":"."}
{"type":"end","turn":"a","status":"ok"}
`
	fsys := fstest.MapFS{
		"dir/trace.jsonl": {Data: []byte(trace)},
		"dir/corpus.txt":  {Data: []byte("First answer, one.\n\nSecond\nanswer.\n")},
	}
	s, err := Parse([]byte("corpus_file: corpus.txt\ngenerator:\n  kind: empirical\n  trace: trace.jsonl\nexpect:\n  speech_goodput: \">= 0.5\"\n"), "x.yaml", fsys, "dir")
	if err != nil {
		t.Fatal(err)
	}
	if got, want := s.Setup.Gen.Texts, []string{"First answer, one.", "Second answer."}; !reflect.DeepEqual(got, want) {
		t.Errorf("corpus %q, want %q", got, want)
	}
	if s.Name != "x" || len(s.Expect) != 1 || s.Expect[0].Line != 6 || s.Expect[0].Op != ">=" {
		t.Errorf("scenario %+v", s)
	}
	ev, err := s.Evaluate(context.Background(), RunOptions{Turns: 2, MonteCarlo: 10})
	if err != nil {
		t.Fatal(err)
	}
	if got := ev.Metrics["itl_max_ms"]; got != 60 && got != 40 {
		t.Errorf("ITLs not resampled from the trace: max %v", got)
	}
}

func TestParseTextAndTokens(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte("text: \"Hello there. How are you?\"\ngenerator: {kind: constant, tpot: 30ms}\n"), "hello.yaml", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	if got := s.Setup.Gen.Texts; len(got) != 1 || got[0] != "Hello there. How are you?" {
		t.Errorf("texts %q", got)
	}
	s, err = Parse([]byte("tokens: 40\ngenerator: {kind: gamma, tpot: 30ms, cv: 0.5}\n"), "textless.yaml", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	err = s.EachTurn(context.Background(), 3, func(tr *pipeline.Turn) error {
		for _, c := range tr.Chunks {
			if !c.Textless {
				t.Errorf("chunk with text in a text-less scenario")
			}
		}
		n += tr.Tokens()
		return nil
	})
	if err != nil || n != 120 {
		t.Errorf("%d tokens in 3 turns, %v", n, err)
	}
	s, err = Parse([]byte("generator: {kind: constant, tpot: 30ms}\n"), "default-text.yaml", nil, "")
	if err != nil || len(s.Setup.Gen.Texts) != 1 || s.Setup.Gen.Texts[0] != DefaultText() {
		t.Errorf("no text given should speak the default text: %v", err)
	}
}

func TestExpectationOps(t *testing.T) {
	t.Parallel()
	tests := []struct {
		value any
		v     float64
		want  bool
	}{
		{uint64(0), 0, true}, {uint64(0), 1, false},
		{">= 0.99", 0.99, true}, {">= 0.99", 0.98, false},
		{"< 50", 49.9, true}, {"< 50", 50, false},
		{"<= 50", 50, true}, {"> 3", 3, false}, {"!= 2", 3, true}, {"= 2", 2, true}, {"== 2", 2, true},
		{1.5, 1.5, true}, {int64(-1), -1, true},
	}
	for _, tt := range tests {
		e, err := ParseExpectation("interruptions", tt.value)
		if err != nil {
			t.Fatalf("%v: %v", tt.value, err)
		}
		if got := e.Holds(tt.v); got != tt.want {
			t.Errorf("%s holds for %v = %v, want %v", e, tt.v, got, tt.want)
		}
	}
	checks := Checks([]Expectation{{Metric: "nothing", Op: "==", Value: 0}}, Metrics{})
	if checks[0].Pass || Passed(checks) {
		t.Errorf("a missing metric passes")
	}
}

func FuzzParse(f *testing.F) {
	for _, n := range Names() {
		src, err := Source(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	f.Add([]byte("generator: {kind: constant, tpot: 1ms}\nexpect: {interruptions: \"<= 1\"}\n"))
	for _, src := range rooflineSeeds {
		f.Add([]byte(src))
	}
	for _, c := range overflowCases {
		f.Add([]byte(c.src))
	}
	for _, file := range hostileFiles(f) {
		if b, err := os.ReadFile(file); err == nil {
			f.Add(b)
		}
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var s *Scenario
		var err error
		if mem := memtest.Allocated(func() { s, err = Parse(data, "fuzz.yaml", nil, "") }); mem > 128<<20 {
			t.Fatalf("%d bytes of YAML cost %d MB to parse", len(data), mem>>20)
		}
		if err != nil {
			if !errors.Is(err, ErrScenario) {
				t.Fatalf("error %v is not ErrScenario", err)
			}
			return
		}
		if err := s.Setup.Gen.Validate(); err != nil {
			t.Fatalf("accepted an invalid generator: %v", err)
		}
		if err := s.Setup.Config.Validate(); err != nil {
			t.Fatalf("accepted an invalid speech model: %v", err)
		}
	})
}
