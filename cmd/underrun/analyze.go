package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/scenarios"
)

const analyzeLong = `Read token traces, run every turn through the speech model, and report the
timing metrics (TTFT, TPOT, ITL, E2E latency), the time to first audio, and
every underrun: when it fell, how long it lasted, whether it is a glitch or an
interruption, where in the text it fell, and its cause (a token stall and the
ITL behind it, a chunk held by the chunking policy, a slow synthesizer, the
stream's pace, or a thin start-up buffer).

Reads the named files, or standard input when there are none. The format is
told from the content (or --format). For the result files of benchmark tools
(vLLM bench serve, SGLang bench_serving, AIPerf, GenAI-Perf) the report adds
the TTFT, TPOT and ITL figures as that tool computes them, and compares them
with the summary the tool saved in the file, if any.

Exit codes: 0 pass; 1 the listener hears an interruption (a gap of --interruption or more) or a turn
without a reply (its request failed), or TPOT or TTFT over --tpot-slo or
--ttft-slo where given; 2 bad usage or bad input.`

const analyzeExample = `  underrun analyze trace.jsonl
  underrun analyze --chunking sentence --tts-latency 250ms --preroll 300ms trace.jsonl
  underrun analyze --report json --per-turn --events events.jsonl a.jsonl b.jsonl
  # a player that plays each token for 250 ms the moment it arrives:
  underrun analyze --token-audio 250ms --chunking token --tts-latency 0 --rtf 0 trace.jsonl
  # a run of underrun speak --record through the model, with its measured synthesizer:
  underrun analyze --measured run.jsonl run.jsonl`

type analyzeCommand struct {
	env      *env
	cmd      *cobra.Command
	engine   engineFlags
	out      reportFlags
	format   string
	measured string
}

func newAnalyzeCommand(e *env) *analyzeCommand {
	a := &analyzeCommand{env: e}
	a.cmd = newCommand("analyze [FILE...]", "Find the underruns in recorded token traces",
		analyzeLong, analyzeExample, nil,
		func(cmd *cobra.Command, args []string) error { return a.run(cmd, args) })
	fs := a.cmd.Flags()
	a.engine.bind(fs)
	a.out.bind(fs)
	renamed(e, fs, "output", "o", "report")
	bindFormat(fs, &a.format, "input")
	fs.StringVar(&a.measured, "measured", "", "take the synthesizer's timings from `FILE`, a recording of underrun speak --record (with that run's engine flags)")
	showFlags(a.cmd, "stack", "chunking", "tts-latency", "preroll", "voice", "report", "per-turn", "wav", "plot", "events")
	return a
}

func (a *analyzeCommand) begin() (*session, error) {
	cfg, err := a.engine.config()
	if err != nil {
		return nil, err
	}
	if a.measured != "" {
		f, err := os.Open(a.measured)
		if err != nil {
			return nil, usagef("--measured: %w", err)
		}
		rec, err := speak.ReadRecording(f, a.measured)
		f.Close()
		if err != nil {
			return nil, usagef("--measured: %w", err)
		}
		chunks := 0
		for _, c := range rec.Chunks {
			chunks += len(c)
		}
		if chunks == 0 {
			return nil, usagef("--measured %s: no synthesizer timings in it (want a recording of underrun speak --record)", a.measured)
		}
		cfg.Measured = rec.Measured()
		fmt.Fprintf(a.env.stderr, "underrun: the synthesizer timings measured in %s (%d chunks of %d turns) replace the synthesizer and voice models for those chunks\n",
			a.measured, chunks, len(rec.Chunks))
	}
	return a.out.begin(a.env, cfg)
}

func (a *analyzeCommand) run(cmd *cobra.Command, args []string) error {
	args = a.out.takeSLOArgs(args)
	s, err := a.begin()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	inputs, summaries := pairSummaries(args, a.format)
	for _, name := range inputs {
		if err := a.readFile(cmd, s, name, summaries[name]); err != nil {
			s.abort()
			return err
		}
	}
	return s.finish()
}

// summaryOf names, for the tools that save their summary in a file of
// its own, that file's format by the format of the per-request file.
var summaryOf = map[string]string{"aiperf": "aiperf-summary", "llmperf": "llmperf-summary"}

// summaryBeside returns where a tool writes the summary of a per-request
// file: AIPerf's profile_export_aiperf.json in its folder, llmperf's
// NAME_summary.json for NAME_individual_responses.json.
func summaryBeside(tool trace.Tool, name string) string {
	switch tool {
	case trace.ToolAIPerf:
		return filepath.Join(filepath.Dir(name), "profile_export_aiperf.json")
	case trace.ToolLLMPerf:
		if base, ok := strings.CutSuffix(name, "_individual_responses.json"); ok {
			return base + "_summary.json"
		}
	}
	return ""
}

// pairSummaries finds, among the files named, summaries given beside the
// per-request file they sum up (profile_export_aiperf.json after
// profile_export.jsonl, llmperf's _summary.json after its individual
// responses): each is paired with the file of its tool in its folder,
// else the one named before it, and is not read on its own. The rest are
// the inputs, in order.
func pairSummaries(args []string, format string) (inputs []string, summaries map[string]string) {
	if format != "" && format != "auto" {
		return args, nil
	}
	kinds := make([]string, len(args))
	for i, name := range args {
		kinds[i] = detectFile(name)
	}
	summaries = map[string]string{}
	for i, name := range args {
		perRequest := ""
		for k, v := range summaryOf {
			if v == kinds[i] {
				perRequest = k
			}
		}
		if perRequest == "" {
			continue
		}
		pair := ""
		for j := range args {
			if kinds[j] == perRequest && summaries[args[j]] == "" && (pair == "" || filepath.Dir(args[j]) == filepath.Dir(name) || j < i) {
				pair = args[j]
				if filepath.Dir(args[j]) == filepath.Dir(name) {
					break
				}
			}
		}
		if pair != "" {
			summaries[pair] = name
			kinds[i] = "paired"
		}
	}
	for i, name := range args {
		if kinds[i] != "paired" {
			inputs = append(inputs, name)
		}
	}
	return inputs, summaries
}

// detectFile tells the format of a named file from its start ("" for
// standard input, or a file that cannot be read).
func detectFile(name string) string {
	if name == "-" {
		return ""
	}
	f, err := os.Open(name)
	if err != nil {
		return ""
	}
	defer f.Close()
	head := make([]byte, trace.SniffLen)
	n, _ := io.ReadFull(f, head)
	return trace.Detect(head[:n])
}

// readSummary reads the saved summaries of a summary file, of format.
func readSummary(e *env, name, format string) ([]trace.ToolSummary, error) {
	in, dec, err := openDecoder(e, name, format)
	if err != nil {
		return nil, err
	}
	defer in.Close()
	td, ok := dec.(trace.ToolDecoder)
	if !ok {
		return nil, fmt.Errorf("%s: not a benchmark tool's summary", name)
	}
	if _, err := dec.Next(); !errors.Is(err, io.EOF) {
		if err == nil {
			return nil, fmt.Errorf("%s: holds requests, not a summary", name)
		}
		return nil, err
	}
	return td.ToolSummaries(), nil
}

func (a *analyzeCommand) readFile(cmd *cobra.Command, s *session, name, summary string) error {
	in, dec, err := openDecoder(a.env, name, a.format)
	if err != nil {
		return err
	}
	defer in.Close()
	// a benchmark tool's file: its figures as that tool computes them,
	// compared with the summary it saved
	td, _ := dec.(trace.ToolDecoder)
	var parity *trace.Parity
	if td != nil {
		parity = trace.NewParity(td.Tool())
		// request goodput of a tool's file is counted on its own times
		parity.CountGoodput(a.out.slos)
		s.report.CountGoodputElsewhere(true)
		defer s.report.CountGoodputElsewhere(false)
		defer s.report.ITLsElsewhere(nil)
	}
	err = in.each(cmd.Context(), dec, func(t *pipeline.Turn) error {
		if parity != nil {
			parity.AddFrom(td, t)
			// the ITLs the parity pools at the file's precision, the
			// report takes from there
			s.report.ITLsElsewhere(parity.SharedITLs())
		}
		if err := s.add(t); err != nil {
			return usageError{fmt.Errorf("%s: %w", in.label, err)}
		}
		return nil
	})
	if err != nil || parity == nil {
		return err
	}
	saved, note := td.ToolSummaries(), ""
	if kind, ok := summaryOf[string(td.Tool())]; ok && len(saved) == 0 {
		// the tool saves its summary beside the file: given, or found
		// there by its name; one that cannot be read is warned of, and
		// the per-request analysis goes on without it
		if beside := summaryBeside(td.Tool(), name); summary == "" && name != "-" && beside != "" && isFile(beside) {
			summary = beside
		}
		if summary != "" {
			note = "compared with " + td.Tool().Title() + "'s summary " + summary
			if saved, err = readSummary(a.env, summary, kind); err != nil {
				warnf(a.env, "%v; %s is analyzed without %s's summary", err, in.label, td.Tool().Title())
				saved, note = nil, td.Tool().Title()+"'s summary "+summary+" could not be read: "+err.Error()
			}
		}
	}
	for _, f := range parity.Figures(saved) {
		f.File = in.label
		if note != "" {
			f.Notes = append(f.Notes, note)
		}
		s.report.MergeGoodput(f.Goodput)
		s.report.Tools = append(s.report.Tools, f)
	}
	return nil
}

// runDefault analyzes the built-in default turn.
func (a *analyzeCommand) runDefault(cmd *cobra.Command) error {
	s, err := a.begin()
	if err != nil {
		return err
	}
	t := scenarios.DefaultTurn()
	if a.out.output == "text" {
		fmt.Fprintf(a.env.stdout, "underrun: the built-in default turn (%d tokens every %v after a %v TTFT, stalls of %v before\n"+
			"tokens %d and %d); yours: `underrun analyze FILE`, see `underrun --help`.\n\n",
			len(t.Chunks), scenarios.DefaultTPOT, scenarios.DefaultTTFT, scenarios.DefaultStalls[0].Delay,
			scenarios.DefaultStalls[0].Token, scenarios.DefaultStalls[1].Token)
	}
	if err := s.add(t); err != nil {
		s.abort()
		return err
	}
	err = s.finish()
	if errors.Is(err, errFail) && a.out.output == "text" {
		fmt.Fprint(a.env.stdout, defaultFailNote)
	}
	return err
}

// defaultFailNote ends the default run's text report, which fails by
// design: without it a first user sees only "exit status 1" from go run.
const defaultFailNote = `
The verdict is FAIL, so underrun exits with status 1 (go run prints "exit
status 1"). That is by design: the default turn has an audible gap. Exit
codes: 0 pass, 1 failing verdict, 2 bad usage or bad input, for CI to gate on.
`
