package main

import (
	"errors"
	"fmt"
	"os"

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

Exit codes: 0 pass; 1 some turn has TPOT over --tpot-slo or an interruption;
2 bad usage or bad input.`

const analyzeExample = `  underrun analyze trace.jsonl
  underrun analyze --chunking sentence --tts-latency 250ms --preroll 300ms trace.jsonl
  underrun analyze --output json --per-turn --events events.jsonl a.jsonl b.jsonl
  # a player that plays each token for 250 ms the moment it arrives:
  underrun analyze --token-audio 250ms --chunking token --tts-latency 0 --rtf 0 trace.jsonl
  # a run of underrun speak --record, again through the model, with the synthesizer as it was measured:
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
	a.cmd = &cobra.Command{
		Use:     "analyze [FILE...]",
		Short:   "Find the underruns in recorded token traces",
		Long:    analyzeLong,
		Example: analyzeExample,
		RunE:    func(cmd *cobra.Command, args []string) error { return a.run(cmd, args) },
	}
	fs := a.cmd.Flags()
	a.engine.bind(fs)
	a.out.bind(fs)
	fs.StringVar(&a.format, "format", "auto", "input format: auto or one of "+trace.FormatNames())
	fs.StringVar(&a.measured, "measured", "", "take each speech chunk's synthesizer timing from `FILE`, a recording of underrun speak --record (the same engine flags as that run)")
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
	s, err := a.begin()
	if err != nil {
		return err
	}
	if len(args) == 0 {
		args = []string{"-"}
	}
	for _, name := range args {
		if err := a.readFile(cmd, s, name); err != nil {
			s.abort()
			return err
		}
	}
	return s.finish()
}

func (a *analyzeCommand) readFile(cmd *cobra.Command, s *session, name string) error {
	in, err := openInput(a.env, name)
	if err != nil {
		return err
	}
	defer in.Close()
	dec, err := in.decoder(a.format)
	if err != nil {
		return err
	}
	// a benchmark tool's file: its figures as that tool computes them,
	// compared with the summary it saved
	td, _ := dec.(trace.ToolDecoder)
	var parity *trace.Parity
	if td != nil {
		parity = trace.NewParity(td.Tool())
	}
	err = in.each(cmd.Context(), dec, func(t *pipeline.Turn) error {
		if parity != nil {
			parity.AddFrom(td, t)
		}
		if err := s.add(t); err != nil {
			return usageError{fmt.Errorf("%s: %w", in.label, err)}
		}
		return nil
	})
	if err == nil && parity != nil {
		for _, f := range parity.Figures(td.ToolSummaries()) {
			f.File = in.label
			s.report.Tools = append(s.report.Tools, f)
		}
	}
	return err
}

// runDefault analyzes the built-in default turn.
func (a *analyzeCommand) runDefault(cmd *cobra.Command) error {
	s, err := a.begin()
	if err != nil {
		return err
	}
	t := scenarios.DefaultTurn()
	if a.out.output == "text" {
		fmt.Fprintf(a.env.stdout, "underrun: no input given, so here is the built-in default: one assistant turn\n"+
			"of %d tokens decoded every %v after a TTFT of %v, with two prefill-like stalls\n"+
			"(%v before token %d, %v before token %d). Analyze your own traces with\n"+
			"`underrun analyze FILE`; see `underrun --help`.\n\n",
			len(t.Chunks), scenarios.DefaultTPOT, scenarios.DefaultTTFT,
			scenarios.DefaultStalls[0].Delay, scenarios.DefaultStalls[0].Token,
			scenarios.DefaultStalls[1].Delay, scenarios.DefaultStalls[1].Token)
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
