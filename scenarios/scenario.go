package scenarios

import (
	"errors"
	"fmt"
	"io"
	"io/fs"
	"math"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"strings"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/goccy/go-yaml/ast"
	"github.com/goccy/go-yaml/lexer"
	"github.com/goccy/go-yaml/parser"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/sim"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/yamlguard"
)

// Defaults of a scenario.
const (
	DefaultTurns      = 20
	DefaultMonteCarlo = 1000
	DefaultSeed       = 1
	// MaxTurns bounds the turns that go through the report, which keeps
	// every inter-token latency.
	MaxTurns = 1_000_000
)

// ErrScenario reports a scenario file that cannot be read or run.
var ErrScenario = errors.New("invalid scenario")

// The generator kinds a scenario file accepts.
const (
	KindConstant  = "constant"
	KindLognormal = "lognormal"
	KindGamma     = "gamma"
	KindEmpirical = "empirical"
	KindRoofline  = "roofline"
)

// Kinds lists the generator kinds.
var Kinds = []string{KindConstant, KindLognormal, KindGamma, KindEmpirical, KindRoofline}

// File is a scenario file as written: see the package documentation for
// its fields.
type File struct {
	Name       string        `yaml:"name"`
	Doc        string        `yaml:"doc"`
	Seed       *uint64       `yaml:"seed"`
	Turns      int           `yaml:"turns"`
	MonteCarlo int           `yaml:"monte_carlo"`
	Text       string        `yaml:"text"`
	Corpus     []string      `yaml:"corpus"`
	CorpusFile string        `yaml:"corpus_file"`
	Tokens     int           `yaml:"tokens"`
	Generator  GeneratorFile `yaml:"generator"`
	TTS        TTSFile       `yaml:"tts"`
	Expect     yaml.MapSlice `yaml:"expect"`
	// ToolCalls pause every turn for a tool call (Scenario.ToolCalls).
	ToolCalls []sim.ToolCall `yaml:"tool_calls"`
}

// GeneratorFile is the generator section of a scenario file.
type GeneratorFile struct {
	Kind string `yaml:"kind"`
	// constant, lognormal, gamma
	TTFT   *time.Duration `yaml:"ttft"`
	TPOT   time.Duration  `yaml:"tpot"`
	CV     float64        `yaml:"cv"`
	Stalls []sim.Stall    `yaml:"stalls"`
	// empirical
	Trace string          `yaml:"trace"`
	ITLs  []time.Duration `yaml:"itls"`
	TTFTs []time.Duration `yaml:"ttfts"`
	// roofline (see roofline.go)
	GPU                 string            `yaml:"gpu"`
	GPUProfile          *GPUProfileFile   `yaml:"gpu_profile"`
	Model               string            `yaml:"model"`
	ModelProfile        *ModelProfileFile `yaml:"model_profile"`
	GPUs                int               `yaml:"gpus"`
	Weights             string            `yaml:"weights"`
	KVCache             string            `yaml:"kv_cache"`
	Batch               int               `yaml:"batch"`
	Concurrency         int               `yaml:"concurrency"`
	Prompt              int               `yaml:"prompt_tokens"`
	Output              *LengthsFile      `yaml:"output_tokens"`
	Context             int               `yaml:"context"`
	BandwidthEfficiency float64           `yaml:"bandwidth_efficiency"`
	ComputeEfficiency   float64           `yaml:"compute_efficiency"`
	Overhead            time.Duration     `yaml:"overhead"`
	LayerOverhead       time.Duration     `yaml:"layer_overhead"`
	Comm                time.Duration     `yaml:"comm"`
	ExpertOverhead      time.Duration     `yaml:"expert_overhead"`
	Prefill             *PrefillFile      `yaml:"prefill"`
	// any kind
	Speculative *SpeculativeFile `yaml:"speculative"`
	Reasoning   *LengthsFile     `yaml:"reasoning"`
}

// LengthsFile is a distribution of token counts.
type LengthsFile struct {
	Mean float64 `yaml:"mean"`
	CV   float64 `yaml:"cv"`
	Dist string  `yaml:"dist"`
	Min  int     `yaml:"min"`
	Max  int     `yaml:"max"`
}

// SpeculativeFile is speculative decoding.
type SpeculativeFile struct {
	Draft      int     `yaml:"draft_tokens"`
	Acceptance float64 `yaml:"acceptance"`
	Cost       float64 `yaml:"draft_cost"`
}

// TTSFile is the speech side: a named stack (tts.Stacks), chunking
// policy, synthesizer, voice and player. The keys given replace the stack's
// figures.
type TTSFile struct {
	Stack        string         `yaml:"stack"`
	Chunking     string         `yaml:"chunking"`
	Mode         string         `yaml:"mode"`
	TTFA         *time.Duration `yaml:"ttfa"`
	Continuation *time.Duration `yaml:"continuation"`
	RTF          *float64       `yaml:"rtf"`
	WPM          float64        `yaml:"wpm"`
	TokenAudio   time.Duration  `yaml:"token_audio"`
	Preroll      time.Duration  `yaml:"preroll"`
	Interruption time.Duration  `yaml:"interruption"`
	// Transport is the output transport, as --transport writes it
	// (tts.ParseTransport): a preset and any overrides.
	Transport string `yaml:"transport"`
	// Server, when set, is the TTS server the synthesizer shares with
	// other sessions: its load curve sets the time to first audio and RTF.
	Server *ServerFile `yaml:"server"`
}

// ServerFile is a TTS server shared by sessions: a preset (sim.TTSServers)
// or an explicit load curve, and how many sessions share it and how
// often each is synthesizing.
type ServerFile struct {
	Preset   string        `yaml:"preset"`
	Source   string        `yaml:"source"`
	Curve    []TTSLoadFile `yaml:"curve"`
	Sessions int           `yaml:"sessions"`
	Active   *float64      `yaml:"active"`
}

// TTSLoadFile is one point of a load curve.
type TTSLoadFile struct {
	Streams int           `yaml:"streams"`
	TTFA    time.Duration `yaml:"ttfa"`
	RTF     float64       `yaml:"rtf"`
}

// Scenario is a loaded, validated scenario, ready to run.
type Scenario struct {
	// Name and Doc identify it.
	Name, Doc string
	// Source is where it was read from (a path, or "builtin:NAME").
	Source string
	// Seed, Turns and MonteCarlo are the run's size: Turns go through the
	// report, MonteCarlo through the parallel statistics.
	Seed              uint64
	Turns, MonteCarlo int
	// Setup is the generator and the speech model.
	Setup sim.Setup
	// Expect are the expectations, in file order.
	Expect []Expectation
	// File is the file as decoded.
	File File
}

// MaxToolCall is the longest tool call a scenario may pause for.
const MaxToolCall = time.Hour

// maxToolAfter bounds a tool call's after_tokens (the traces' per-turn token limit).
const maxToolAfter = 262144

// lineFinder locates fields of the parsed file for error messages.
type lineFinder struct {
	file *ast.File
}

// line returns the line of field, or of the closest enclosing field
// given when the field itself is missing (0: neither is in the file).
func (l lineFinder) line(field string) int {
	if l.file == nil {
		return 0
	}
	for ; field != ""; field, _ = cutLast(field, ".") {
		p, err := yaml.PathString("$." + field)
		if err != nil {
			return 0
		}
		n, err := p.FilterFile(l.file)
		if err == nil && n != nil && n.GetToken() != nil {
			return n.GetToken().Position.Line
		}
	}
	return 0
}

// cutLast cuts s around the last sep: "a.b.c" is "a.b" and "c"; with no
// sep, "" and s.
func cutLast(s, sep string) (before, after string) {
	if i := strings.LastIndex(s, sep); i >= 0 {
		return s[:i], s[i+len(sep):]
	}
	return "", s
}

// loader holds what Parse needs to turn a File into a Scenario.
type loader struct {
	name  string
	lines lineFinder
	fsys  fs.FS // for corpus_file and trace, relative to the scenario
	dir   string
}

// fieldError names the scenario, the line when known, the field and what
// was expected.
func (ld *loader) fieldError(field string, err error) error {
	if l := ld.lines.line(field); l > 0 {
		return fmt.Errorf("%w %s: line %d: %s: %w", ErrScenario, ld.name, l, field, err)
	}
	return fmt.Errorf("%w %s: %s: %w", ErrScenario, ld.name, field, err)
}

func (ld *loader) fieldErrorf(field, format string, args ...any) error {
	return ld.fieldError(field, fmt.Errorf(format, args...))
}

var (
	yamlPos    = regexp.MustCompile(`^\[(\d+):(\d+)\] `)
	yamlQuoted = regexp.MustCompile(`"([^"]*)"`)
)

// decodeMessage turns a YAML decoding error into one line that says where.
// Some errors (a bad duration) carry no position: the line of the first
// value they quote is found in the source instead.
func decodeMessage(data []byte, err error) string {
	msg, _, _ := strings.Cut(err.Error(), "\n")
	if yamlPos.MatchString(msg) {
		return yamlPos.ReplaceAllString(msg, "line $1, column $2: ")
	}
	if strings.Contains(msg, "invalid duration") {
		msg += " (want a duration such as 50ms or 1.5s)"
	}
	if m := yamlQuoted.FindStringSubmatch(msg); m != nil {
		for _, tok := range lexer.Tokenize(string(data)) {
			if tok.Value == m[1] && tok.Position != nil {
				return fmt.Sprintf("line %d, column %d: %s", tok.Position.Line, tok.Position.Column, msg)
			}
		}
	}
	return msg
}

// Parse reads a scenario from YAML. name labels errors; fsys and dir,
// when fsys is not nil, resolve the files it names (corpus_file, trace).
func Parse(data []byte, name string, fsys fs.FS, dir string) (*Scenario, error) {
	// aliases, nesting and size are bounded before goccy/go-yaml sees them
	if err := yamlguard.Default.Check(data); err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrScenario, name, err)
	}
	var f File
	if err := yaml.UnmarshalWithOptions(data, &f, yaml.DisallowUnknownField()); err != nil {
		return nil, fmt.Errorf("%w %s: %s", ErrScenario, name, decodeMessage(data, err))
	}
	file, _ := parser.ParseBytes(data, 0)
	ld := &loader{name: name, lines: lineFinder{file}, fsys: fsys, dir: dir}
	return ld.build(f)
}

func (ld *loader) build(f File) (*Scenario, error) {
	s := &Scenario{Name: f.Name, Doc: strings.TrimSpace(f.Doc), File: f, Seed: DefaultSeed, Turns: DefaultTurns, MonteCarlo: DefaultMonteCarlo}
	if s.Name == "" {
		s.Name = strings.TrimSuffix(path.Base(filepath.ToSlash(ld.name)), path.Ext(ld.name))
	}
	if f.Seed != nil {
		s.Seed = *f.Seed
	}
	switch {
	case f.Turns < 0 || f.Turns > MaxTurns:
		return nil, ld.fieldErrorf("turns", "want a number of turns in 1..%d, got %d", MaxTurns, f.Turns)
	case f.Turns > 0:
		s.Turns = f.Turns
	}
	switch {
	case f.MonteCarlo < 0 || f.MonteCarlo > sim.MaxRunTurns:
		return nil, ld.fieldErrorf("monte_carlo", "want a number of turns in 0..%d (0: the default %d), got %d", sim.MaxRunTurns, DefaultMonteCarlo, f.MonteCarlo)
	case f.MonteCarlo > 0:
		s.MonteCarlo = f.MonteCarlo
	}
	gen, err := ld.generator(f)
	if err != nil {
		return nil, err
	}
	cfg, err := ld.tts(f.TTS)
	if err != nil {
		return nil, err
	}
	s.Setup = sim.Setup{Gen: gen, Config: cfg}
	if f.TTS.Server != nil {
		srv, err := ld.server(f.TTS)
		if err != nil {
			return nil, err
		}
		s.Setup = s.Setup.WithServer(srv)
	}
	if s.Expect, err = ld.expectations(f.Expect); err != nil {
		return nil, err
	}
	for i, tc := range f.ToolCalls {
		switch {
		case tc.AfterTokens < 0 || tc.AfterTokens > maxToolAfter:
			return nil, ld.fieldErrorf("tool_calls", "tool call %d: after_tokens %d; want a count from 0 to %d", i+1, tc.AfterTokens, maxToolAfter)
		case tc.Duration <= 0 || tc.Duration > MaxToolCall:
			return nil, ld.fieldErrorf("tool_calls", "tool call %d: duration %v; want a positive duration up to %v (e.g. 1.5s)", i+1, tc.Duration, MaxToolCall)
		case i > 0 && tc.AfterTokens < f.ToolCalls[i-1].AfterTokens:
			return nil, ld.fieldErrorf("tool_calls", "tool call %d: after_tokens %d, before tool call %d's %d; want them in order", i+1, tc.AfterTokens, i, f.ToolCalls[i-1].AfterTokens)
		}
	}
	s.Setup.ToolCalls = f.ToolCalls
	return s, nil
}

// texts returns the corpus the scenario speaks.
func (ld *loader) texts(f File) ([]string, error) {
	given := 0
	for _, set := range []bool{f.Text != "", len(f.Corpus) > 0, f.CorpusFile != "", f.Tokens != 0} {
		if set {
			given++
		}
	}
	if given > 1 {
		return nil, fmt.Errorf("%w %s: give one of text, corpus, corpus_file or tokens", ErrScenario, ld.name)
	}
	switch {
	case f.Text != "":
		if strings.TrimSpace(f.Text) == "" {
			return nil, ld.fieldErrorf("text", "want some text to speak")
		}
		return []string{strings.TrimSpace(f.Text)}, nil
	case len(f.Corpus) > 0:
		for i, t := range f.Corpus {
			if strings.TrimSpace(t) == "" {
				return nil, ld.fieldErrorf(fmt.Sprintf("corpus[%d]", i), "want some text to speak, got an empty entry")
			}
		}
		return f.Corpus, nil
	case f.CorpusFile != "":
		data, err := ld.readFile(f.CorpusFile)
		if err != nil {
			return nil, ld.fieldError("corpus_file", err)
		}
		texts := SplitCorpus(string(data))
		if len(texts) == 0 {
			return nil, ld.fieldErrorf("corpus_file", "%s holds no text (want paragraphs separated by blank lines)", f.CorpusFile)
		}
		return texts, nil
	case f.Tokens < 0:
		return nil, ld.fieldErrorf("tokens", "want a positive token count, got %d", f.Tokens)
	case f.Tokens > 0:
		return nil, nil
	}
	return []string{DefaultText()}, nil
}

var blankLine = regexp.MustCompile(`\n\s*\n`)

// SplitCorpus splits a text file into answers at blank lines.
func SplitCorpus(s string) []string {
	var out []string
	for _, p := range blankLine.Split(strings.ReplaceAll(s, "\r\n", "\n"), -1) {
		if p = strings.Join(strings.Fields(p), " "); p != "" {
			out = append(out, p)
		}
	}
	return out
}

// BuiltinFile is the prefix of a file name (corpus_file, trace) that
// names a file built into underrun, wherever the scenario is: the library's
// own scenarios use it, so that one printed by `underrun scenarios NAME`
// runs as it is.
const BuiltinFile = "builtin:"

// MaxFile bounds a file a scenario names (corpus_file, trace).
const MaxFile = 64 << 20

// openFile opens a file the scenario names: built in, absolute, or
// relative to the scenario.
func (ld *loader) openFile(name string) (fs.File, error) {
	if rest, ok := strings.CutPrefix(name, BuiltinFile); ok {
		if !fs.ValidPath(rest) {
			return nil, fmt.Errorf("%s: not a built-in file (want %stexts/NAME.txt)", name, BuiltinFile)
		}
		return library.Open(rest)
	}
	if path.IsAbs(filepath.ToSlash(name)) {
		return os.Open(name)
	}
	if ld.fsys == nil {
		return nil, fmt.Errorf("cannot read %s: the scenario was not loaded from a file", name)
	}
	return ld.fsys.Open(path.Join(ld.dir, filepath.ToSlash(name)))
}

// readFile reads a file the scenario names, up to MaxFile.
func (ld *loader) readFile(name string) ([]byte, error) {
	f, err := ld.openFile(name)
	if err != nil {
		return nil, err
	}
	defer f.Close()
	b, err := io.ReadAll(io.LimitReader(f, MaxFile+1))
	if err != nil {
		return nil, err
	}
	if len(b) > MaxFile {
		return nil, fmt.Errorf("%s is larger than %d MiB", name, MaxFile>>20)
	}
	return b, nil
}

func (ld *loader) lengths(field string, l LengthsFile) (sim.Lengths, error) {
	out := sim.Lengths{Dist: sim.Dist{Shape: l.Dist, Mean: l.Mean, CV: l.CV}, Min: l.Min, Max: l.Max}
	if l.Dist == "" && l.CV > 0 {
		out.Shape = sim.ShapeLognormal
	}
	if err := out.Validate(); err != nil {
		return out, ld.fieldError(field, err)
	}
	return out, nil
}

func (ld *loader) generator(f File) (sim.Generator, error) {
	g := f.Generator
	var gen sim.Generator
	texts, err := ld.texts(f)
	if err != nil {
		return gen, err
	}
	gen.Texts, gen.Tokens = texts, f.Tokens
	ttft := 250 * time.Millisecond
	if g.TTFT != nil {
		ttft = *g.TTFT
	}
	needTPOT := func() error {
		if g.TPOT <= 0 || g.TPOT > sim.MaxDelay {
			return ld.fieldErrorf("generator.tpot", "kind %s needs a positive tpot up to %v such as 50ms, got %v", g.Kind, sim.MaxDelay, g.TPOT)
		}
		return nil
	}
	if ttft < 0 || ttft > sim.MaxDelay {
		return gen, ld.fieldErrorf("generator.ttft", "want a time to first token from 0 to %v, got %v", sim.MaxDelay, ttft)
	}
	for i, st := range g.Stalls {
		if st.Delay < 0 || st.Delay > sim.MaxDelay {
			return gen, ld.fieldErrorf("generator.stalls", "stall %d: delay %v; want a delay from 0 to %v", i+1, st.Delay, sim.MaxDelay)
		}
	}
	if err := ld.onlyFor(g); err != nil {
		return gen, err
	}
	switch g.Kind {
	case KindConstant:
		if err := needTPOT(); err != nil {
			return gen, err
		}
		if g.CV != 0 {
			return gen, ld.fieldErrorf("generator.cv", "a constant generator has no variation (use kind lognormal or gamma)")
		}
		gen.Timing = sim.Constant{TTFT: ttft, TPOT: g.TPOT, Stalls: g.Stalls}
	case KindLognormal, KindGamma:
		if err := needTPOT(); err != nil {
			return gen, err
		}
		if !(g.CV >= sim.MinCV && g.CV <= 100) {
			return gen, ld.fieldErrorf("generator.cv", "kind %s needs a coefficient of variation from %v to 100 such as 0.5, got %v", g.Kind, sim.MinCV, g.CV)
		}
		gen.Timing = sim.Sampled{TTFT: ttft, ITL: sim.Dist{Shape: g.Kind, Mean: g.TPOT.Seconds(), CV: g.CV}}
	case KindEmpirical:
		e := sim.Empirical{ITLs: g.ITLs, TTFTs: g.TTFTs}
		if g.Trace != "" {
			if len(g.ITLs) > 0 {
				return gen, ld.fieldErrorf("generator.itls", "give a trace or itls, not both")
			}
			if e, err = ld.empirical(g.Trace); err != nil {
				return gen, ld.fieldError("generator.trace", err)
			}
		}
		if len(e.ITLs) == 0 {
			return gen, ld.fieldErrorf("generator", "kind empirical needs a trace file or a list of itls")
		}
		if len(e.TTFTs) == 0 {
			e.TTFTs = []time.Duration{ttft}
		}
		if g.TPOT > 0 {
			t, _ := e.With(sim.ParamTPOT, float64(g.TPOT))
			e = t.(sim.Empirical)
		}
		gen.Timing = e
	case KindRoofline:
		r, err := ld.roofline(g)
		if err != nil {
			return gen, err
		}
		gen.Timing = r
	default:
		return gen, ld.fieldErrorf("generator.kind", "want one of %s, got %q", strings.Join(Kinds, ", "), g.Kind)
	}
	if g.Speculative != nil {
		gen.Speculative = sim.Speculative{Draft: g.Speculative.Draft, Acceptance: g.Speculative.Acceptance, Cost: g.Speculative.Cost}
		if gen.Speculative.Draft < 1 {
			return gen, ld.fieldErrorf("generator.speculative.draft_tokens", "want at least 1 draft token, got %d", gen.Speculative.Draft)
		}
		if err := gen.Speculative.Validate(); err != nil {
			return gen, ld.fieldError("generator.speculative", err)
		}
	}
	if g.Reasoning != nil {
		if gen.Reasoning, err = ld.lengths("generator.reasoning", *g.Reasoning); err != nil {
			return gen, err
		}
		if !(gen.Reasoning.Mean > 0) {
			return gen, ld.fieldErrorf("generator.reasoning.mean", "want a positive mean number of reasoning tokens, got %v", gen.Reasoning.Mean)
		}
	}
	if err := gen.Validate(); err != nil {
		return gen, ld.fieldError("generator", err)
	}
	return gen, nil
}

// onlyField is a generator field, whether the file sets it, and the kinds
// that use it.
type onlyField struct {
	name string
	set  bool
	kind []string
}

// onlyFor rejects fields that the generator's kind does not use.
func (ld *loader) onlyFor(g GeneratorFile) error {
	fields := []onlyField{
		{"tpot", g.TPOT != 0, []string{KindConstant, KindLognormal, KindGamma, KindEmpirical}},
		{"cv", g.CV != 0, []string{KindConstant, KindLognormal, KindGamma}},
		{"ttft", g.TTFT != nil, []string{KindConstant, KindLognormal, KindGamma, KindEmpirical}},
		{"stalls", len(g.Stalls) > 0, []string{KindConstant}},
		{"trace", g.Trace != "", []string{KindEmpirical}},
		{"itls", len(g.ITLs) > 0, []string{KindEmpirical}},
		{"ttfts", len(g.TTFTs) > 0, []string{KindEmpirical}},
	}
	fields = append(fields, rooflineFields(g)...)
	known := false
	for _, k := range Kinds {
		known = known || k == g.Kind
	}
	if !known {
		return nil // the kind itself is reported
	}
	for _, f := range fields {
		if !f.set {
			continue
		}
		ok := false
		for _, k := range f.kind {
			ok = ok || k == g.Kind
		}
		if !ok {
			return ld.fieldErrorf("generator."+f.name, "not used by kind %s (only by %s)", g.Kind, strings.Join(f.kind, ", "))
		}
	}
	return nil
}

// empirical reads a trace in any supported format and pools its TTFTs and
// inter-token latencies.
func (ld *loader) empirical(name string) (sim.Empirical, error) {
	var e sim.Empirical
	f, err := ld.openFile(name)
	if err != nil {
		return e, err
	}
	defer f.Close()
	dec, err := trace.Open(f, name, "auto") // streamed: the readers bound its memory
	if err != nil {
		return e, err
	}
	for {
		t, err := dec.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			return e, err
		}
		if len(t.Chunks) == 0 {
			continue
		}
		e.TTFTs = append(e.TTFTs, t.Chunks[0].At)
		for i := 1; i < len(t.Chunks); i++ {
			e.ITLs = append(e.ITLs, t.Chunks[i].At-t.Chunks[i-1].At)
		}
	}
	if len(e.ITLs) == 0 {
		return e, fmt.Errorf("%s holds no inter-token latencies (want turns of at least two chunks)", name)
	}
	return e, nil
}

func (ld *loader) tts(t TTSFile) (pipeline.Config, error) {
	cfg := pipeline.DefaultConfig()
	if t.Stack != "" {
		st, err := tts.LookupStack(t.Stack)
		if err != nil {
			return cfg, ld.fieldError("tts.stack", err)
		}
		if cfg.Policy, err = st.Policy(); err != nil {
			return cfg, ld.fieldError("tts.stack", err)
		}
		cfg.Synth, cfg.Stack = st.Synth, st.Name
	}
	if t.Chunking != "" {
		p, err := tts.ParsePolicy(t.Chunking)
		if err != nil {
			return cfg, ld.fieldError("tts.chunking", err)
		}
		cfg.Policy = p
	}
	if t.TTFA != nil {
		if *t.TTFA < 0 {
			return cfg, ld.fieldErrorf("tts.ttfa", "want a time to first audio >= 0, got %v", *t.TTFA)
		}
		cfg.Synth.TTFA = *t.TTFA
	}
	if t.Mode != "" {
		m, err := tts.ParseMode(t.Mode)
		if err != nil {
			return cfg, ld.fieldError("tts.mode", err)
		}
		cfg.Synth.Mode = m
	}
	if t.Continuation != nil {
		if *t.Continuation < 0 {
			return cfg, ld.fieldErrorf("tts.continuation", "want a continuation latency >= 0, got %v", *t.Continuation)
		}
		cfg.Synth.Continuation = *t.Continuation
	}
	if t.TTFA != nil && t.Continuation == nil {
		// a continuation is never slower than the first audio unless the
		// file says so
		cfg.Synth.Continuation = min(cfg.Synth.Continuation, cfg.Synth.TTFA)
	}
	if t.RTF != nil {
		if !(*t.RTF >= 0) || math.IsInf(*t.RTF, 0) {
			return cfg, ld.fieldErrorf("tts.rtf", "want a real-time factor >= 0, got %v", *t.RTF)
		}
		cfg.Synth.RTF = *t.RTF
	}
	for _, c := range []struct {
		field string
		bad   bool
		want  string
	}{
		{"tts.wpm", t.WPM != 0 && !(t.WPM >= tts.MinWPM && t.WPM <= tts.MaxWPM), fmt.Sprintf("a speaking rate from %v to %v words per minute, got %v", tts.MinWPM, tts.MaxWPM, t.WPM)},
		{"tts.token_audio", t.TokenAudio < 0 || t.TokenAudio > tts.MaxTokenAudio, fmt.Sprintf("how long one token is spoken, from 0 to %v, got %v", tts.MaxTokenAudio, t.TokenAudio)},
		{"tts.preroll", t.Preroll < 0, "a duration >= 0"},
		{"tts.interruption", t.Interruption < 0, "a duration > 0"},
	} {
		if c.bad {
			return cfg, ld.fieldErrorf(c.field, "want %s", c.want)
		}
	}
	if t.Transport != "" {
		tr, err := tts.ParseTransport(t.Transport)
		if err != nil {
			return cfg, ld.fieldError("tts.transport", err)
		}
		cfg.Transport = tr
	}
	if t.WPM > 0 {
		cfg.Voice.WPM = t.WPM
	}
	cfg.Voice.TokenAudio = t.TokenAudio
	cfg.Preroll = t.Preroll
	if t.Interruption > 0 {
		cfg.Interruption = t.Interruption
	}
	if err := cfg.Validate(); err != nil {
		return cfg, ld.fieldError("tts", err)
	}
	return cfg, nil
}

// DefaultActive is the share of the time a session on a TTS server is
// synthesizing when the file does not say.
const DefaultActive = 0.5

// server reads tts.server: a preset or a curve (not both), the sessions
// (default 1) and the share of the time each is active.
func (ld *loader) server(t TTSFile) (*sim.TTSServer, error) {
	f := t.Server
	const at = "tts.server"
	for _, c := range []struct {
		field string
		set   bool
	}{{"tts.ttfa", t.TTFA != nil}, {"tts.rtf", t.RTF != nil}} {
		if c.set {
			return nil, ld.fieldErrorf(c.field, "give a tts server or %s, not both (the server's load curve sets it)", c.field)
		}
	}
	var srv sim.TTSServer
	switch {
	case f.Preset != "" && len(f.Curve) > 0:
		return nil, ld.fieldErrorf(at+".curve", "give a preset or a curve, not both")
	case f.Preset != "":
		var err error
		if srv, err = sim.LookupTTSServer(f.Preset); err != nil {
			return nil, ld.fieldError(at+".preset", err)
		}
		if f.Source != "" {
			return nil, ld.fieldErrorf(at+".source", "a preset cites its own source (give a source with a curve)")
		}
	case len(f.Curve) > 0:
		srv.Name, srv.Source = "curve", f.Source
		for i, p := range f.Curve {
			field := fmt.Sprintf("%s.curve[%d]", at, i)
			switch {
			case p.Streams < 1:
				return nil, ld.fieldErrorf(field+".streams", "want a number of streams >= 1, got %d", p.Streams)
			case i > 0 && p.Streams <= f.Curve[i-1].Streams:
				return nil, ld.fieldErrorf(field+".streams", "want the curve sorted by streams, got %d after %d", p.Streams, f.Curve[i-1].Streams)
			case p.TTFA < 0:
				return nil, ld.fieldErrorf(field+".ttfa", "want a time to first audio >= 0, got %v", p.TTFA)
			case !(p.RTF > 0) || math.IsInf(p.RTF, 0):
				return nil, ld.fieldErrorf(field+".rtf", "want a real-time factor > 0, got %v", p.RTF)
			}
			srv.Curve = append(srv.Curve, sim.TTSLoad{Streams: p.Streams, TTFA: p.TTFA, RTF: p.RTF})
		}
	default:
		return nil, ld.fieldErrorf(at, "want a preset (one of %s) or a curve", serverNames())
	}
	srv.Sessions, srv.Active = 1, DefaultActive
	if f.Sessions != 0 {
		if f.Sessions < 1 || f.Sessions > sim.MaxSessions {
			return nil, ld.fieldErrorf(at+".sessions", "want a number of sessions in 1..%d, got %d", sim.MaxSessions, f.Sessions)
		}
		srv.Sessions = f.Sessions
	}
	if f.Active != nil {
		if !(*f.Active > 0 && *f.Active <= 1) {
			return nil, ld.fieldErrorf(at+".active", "want the share of the time a session is synthesizing, in (0, 1], got %v", *f.Active)
		}
		srv.Active = *f.Active
	}
	if err := srv.Validate(); err != nil {
		return nil, ld.fieldError(at, err)
	}
	return &srv, nil
}

func serverNames() string {
	names := make([]string, len(sim.TTSServers))
	for i, s := range sim.TTSServers {
		names[i] = s.Name
	}
	return strings.Join(names, ", ")
}

// Load reads a scenario from a file on disk.
func Load(file string) (*Scenario, error) {
	f, err := os.Open(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	data, err := yamlguard.Default.ReadAll(f)
	f.Close()
	if err != nil {
		return nil, fmt.Errorf("%w %s: %w", ErrScenario, file, err)
	}
	abs, err := filepath.Abs(file)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrScenario, err)
	}
	dir := filepath.Dir(abs)
	s, err := Parse(data, file, os.DirFS(dir), ".")
	if err != nil {
		return nil, err
	}
	s.Source = file
	return s, nil
}

// Open loads a scenario by file name, or by the name of a built-in one.
func Open(nameOrFile string) (*Scenario, error) {
	if _, err := os.Stat(nameOrFile); err == nil {
		return Load(nameOrFile)
	}
	if s, err := Builtin(nameOrFile); err == nil {
		return s, nil
	} else if !errors.Is(err, ErrUnknown) {
		return nil, err
	}
	return nil, fmt.Errorf("%w %q: no such file, and no built-in scenario of that name (see `underrun scenarios`)", ErrUnknown, nameOrFile)
}
