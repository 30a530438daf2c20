package main

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"runtime"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/scenarios"
	"github.com/speech-pipeline/underrun/sim"
)

func init() { commands = append(commands, newSimCommand) }

const simLong = `Simulate a deployment in virtual time before buying it. A scenario (a YAML
file, or a built-in name: underrun scenarios) names a token generator, the
text, the TTS stack and its expectations; sim prints the report, a Monte Carlo
run and the expectations. --find tpot answers "what TPOT does my stack need?"
(with --stack: yours), --sweep shows a parameter's range.

The token generator is a constant TPOT, lognormal or gamma ITLs, ITLs
resampled from a trace, or a roofline model of a GPU decoding a model at a
batch size, with prefill interference from an arrival rate or a closed loop
of N users, speculative decoding and reasoning tokens. A roofline scenario
may define its own GPU and model
(gpu_profile, model_profile); its report says that the decode timing is a
model and how far it was from the published measurements it was fitted on.

sim plays the scenario's turns through the same engine analyze uses and
prints what the listener hears and the report, then a Monte Carlo run over
many more turns on every core (speech goodput with a 95% Wilson interval,
interruptions per minute of speech, the ITL tail set against the stall
tolerance), then the table of expectations (the metrics they may name:
underrun scenarios --metrics) and the one verdict: the expectations decide it
when the scenario has any, else what the listener hears. Speech-model
flags (--stack, --chunking, --tts-latency, --rtf, --wpm, --preroll, ...)
override the scenario only when given.

--sweep PARAM=FROM:TO:STEP runs the Monte Carlo at each value and prints
interruption rate and goodput per value, then the inverse answer: the
largest value (the smallest pre-roll) that keeps speech goodput at or above
--goodput-target. --find PARAM answers that question over a wide default
range. PARAM is one of tpot, batch, rate, prompt, ttfa, preroll, sessions
(tpot for constant, lognormal, gamma and empirical generators; batch, rate
and prompt for roofline ones: rate and prompt are the interfering prefill
load, batch is the number of clients of a closed loop; sessions for a
scenario with a tts server: how many sessions share it, 1 to 1024, ttfa
then being the server's).

Exit codes: 0 the verdict passed (every expectation held, or, with none, no
interruption and no turn without a reply); 1 it failed; 2 bad usage or a
bad scenario file.`

const simExample = `  underrun sim tpot-50ms
  underrun sim tpot-50ms --stack pipecat-cartesia --find tpot   # what TPOT does my stack need?
  underrun sim prefill-unchunked --per-turn --events events.jsonl
  underrun sim my-deployment.yaml --turns 100 --monte-carlo 100000
  underrun sim tpot-50ms --sweep tpot=20ms:300ms:20ms
  underrun sim gpu-h200 --sweep batch=8:128:8 --goodput-target 0.995
  underrun sim prefill-chunked --find rate --find prompt
  underrun sim tts-server --sweep sessions=8:64:8
  underrun sim policy-sentence --find preroll --chunking sentence --tts-latency 250ms`

type simCommand struct {
	env        *env
	cmd        *cobra.Command
	engine     engineFlags
	out        reportFlags
	turns      int
	monteCarlo int
	seed       uint64
	workers    int
	sweep      string
	find       []string
	target     float64
}

func newSimCommand(e *env) *cobra.Command {
	c := &simCommand{env: e}
	c.cmd = newCommand("sim FILE|NAME", "Simulate a deployment scenario: report, Monte Carlo, sweeps, expectations",
		simLong, simExample, positional(1, 1, "a scenario: a YAML file or the name of a built-in one (underrun scenarios lists them)"),
		func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) })
	fs := c.cmd.Flags()
	c.engine.bind(fs)
	c.out.bind(fs)
	renamed(e, fs, "output", "o", "report")
	fs.IntVar(&c.turns, "turns", 0, "turns through the report (default: the scenario's)")
	fs.IntVar(&c.monteCarlo, "monte-carlo", 0, "turns in the Monte Carlo run and each sweep point (default: the scenario's)")
	fs.Uint64Var(&c.seed, "seed", 0, "random seed (default: the scenario's)")
	fs.IntVar(&c.workers, "workers", runtime.GOMAXPROCS(0), "goroutines for the Monte Carlo run")
	fs.StringVar(&c.sweep, "sweep", "", "sweep `PARAM=FROM:TO:STEP`, e.g. tpot=20ms:120ms:10ms or batch=8:128:8")
	fs.StringArrayVar(&c.find, "find", nil, "find the largest `PARAM` (smallest preroll) that keeps goodput at the target (repeatable)")
	fs.Float64Var(&c.target, "goodput-target", 0.99, "speech goodput the sweep and --find answers must keep")
	showFlags(c.cmd, "stack", "find", "sweep", "goodput-target", "turns", "monte-carlo", "chunking", "tts-latency", "preroll", "report", "per-turn")
	return c.cmd
}

// load opens the scenario and applies the flags the user set.
func (c *simCommand) load(cmd *cobra.Command, name string) (*scenarios.Scenario, error) {
	s, err := scenarios.Open(name)
	if err != nil {
		return nil, usageError{err}
	}
	fs := cmd.Flags()
	if fs.Changed("turns") {
		if c.turns < 1 || c.turns > scenarios.MaxTurns {
			return nil, usagef("--turns must be in 1..%d, got %d", scenarios.MaxTurns, c.turns)
		}
		s.Turns = c.turns
	}
	if fs.Changed("monte-carlo") {
		if c.monteCarlo < 0 || c.monteCarlo > sim.MaxRunTurns {
			return nil, usagef("--monte-carlo must be in 0..%d, got %d", sim.MaxRunTurns, c.monteCarlo)
		}
		s.MonteCarlo = c.monteCarlo
	}
	if fs.Changed("seed") {
		s.Seed = c.seed
	}
	if !(c.target > 0 && c.target <= 1) {
		return nil, usagef("--goodput-target must be in (0, 1], got %v", c.target)
	}
	if c.workers < 1 {
		return nil, usagef("--workers must be at least 1, got %d", c.workers)
	}
	flagCfg, err := c.engine.config()
	if err != nil {
		return nil, err
	}
	cfg := &s.Setup.Config
	for _, o := range []struct {
		flag  string
		apply func()
	}{
		// a voice profile first, so that explicit flags below win over it
		{"voice", func() { cfg.Voice, cfg.Synth = flagCfg.Voice, flagCfg.Synth }},
		// then a stack, so that the speech flags given win over it
		{"stack", func() { cfg.Policy, cfg.Synth, cfg.Stack = flagCfg.Policy, flagCfg.Synth, flagCfg.Stack }},
		{"chunking", func() { cfg.Policy = flagCfg.Policy }},
		{"wpm", func() { cfg.Voice.WPM = flagCfg.Voice.WPM }},
		{"token-audio", func() { cfg.Voice.TokenAudio = flagCfg.Voice.TokenAudio }},
		{"tts-latency", func() { cfg.Synth.TTFA = flagCfg.Synth.TTFA }},
		{"tts-mode", func() { cfg.Synth.Mode = flagCfg.Synth.Mode }},
		{"tts-continuation", func() { cfg.Synth.Continuation = flagCfg.Synth.Continuation }},
		{"rtf", func() { cfg.Synth.RTF = flagCfg.Synth.RTF }},
		{"preroll", func() { cfg.Preroll = flagCfg.Preroll }},
		{"transport", func() { cfg.Transport = flagCfg.Transport }},
		{"interruption", func() { cfg.Interruption = flagCfg.Interruption }},
		{"stall-factor", func() { cfg.StallFactor = flagCfg.StallFactor }},
		{"filler", func() { cfg.Filler = flagCfg.Filler }},
	} {
		if fs.Changed(o.flag) {
			o.apply()
		}
	}
	if fs.Changed("tts-latency") && !fs.Changed("tts-continuation") {
		cfg.Synth.Continuation = min(cfg.Synth.Continuation, cfg.Synth.TTFA)
	}
	if srv := s.Setup.Server; srv != nil {
		for _, flag := range []string{"tts-latency", "rtf"} {
			if fs.Changed(flag) {
				return nil, usagef("--%s: the scenario's tts server (%s) sets the time to first audio and RTF from its load; vary its sessions instead (--sweep sessions=FROM:TO:STEP)", flag, srv.Name)
			}
		}
		s.Setup = s.Setup.WithServer(srv) // a voice or stack flag replaced the server's figures
	}
	if err := cfg.Validate(); err != nil {
		return nil, usageError{err}
	}
	return s, nil
}

// options sizes the Monte Carlo runs: the scenario's Monte Carlo turns,
// or its report turns when the Monte Carlo run is off (0).
func (c *simCommand) options(s *scenarios.Scenario) sim.Options {
	turns := s.MonteCarlo
	if turns == 0 {
		turns = s.Turns
	}
	return sim.Options{Turns: max(1, turns), Seed: s.Seed, Workers: c.workers}
}

func (c *simCommand) run(cmd *cobra.Command, name string) error {
	s, err := c.load(cmd, name)
	if err != nil {
		return err
	}
	if c.sweep != "" || len(c.find) > 0 {
		return c.runQuestions(cmd, s)
	}
	return c.runScenario(cmd, s)
}

// runScenario plays the turns through the session (report, events,
// sinks), runs the Monte Carlo and checks the expectations.
func (c *simCommand) runScenario(cmd *cobra.Command, s *scenarios.Scenario) error {
	var buf bytes.Buffer
	sub := *c.env
	sub.stdout = &buf
	sess, err := c.out.begin(&sub, s.Setup.Config)
	if err != nil {
		return err
	}
	if err := s.EachTurn(cmd.Context(), s.Turns, sess.add); err != nil {
		sess.abort()
		return err
	}
	rep := sess.report
	rep.Close()
	var mc *sim.Result
	if s.MonteCarlo > 0 {
		if mc, err = s.Setup.Run(cmd.Context(), c.options(s)); err != nil {
			sess.abort()
			return err
		}
		rep.Note(fmt.Sprintf("over %d Monte Carlo turns, listeners hear an interruption in %d (%.2f%%): speech goodput %.4f",
			mc.Turns, mc.Interrupted, 100*float64(mc.Interrupted)/float64(max(1, mc.Turns)), mc.Goodput))
	}
	// one verdict: the expectations decide it, with the report's figures
	checks := scenarios.Checks(s.Expect, scenarios.NewMetrics(rep, mc))
	rep.Expect(scenarios.ReportExpectations(checks))
	asJSON := c.out.output == "json"
	sess.writeReport = func(w io.Writer, r *pipeline.Report, _ bool) error {
		if asJSON {
			return r.WriteJSON(w)
		}
		return writeTextBody(w, r, c.out.list)
	}
	verdictErr := sess.finish()
	if verdictErr != nil && !errors.Is(verdictErr, errFail) {
		return verdictErr
	}
	w := c.env.stdout
	if asJSON {
		err = writeSimJSON(w, s, rep, buf.Bytes(), mc, checks)
	} else {
		err = writeSimText(w, s, rep, buf.Bytes(), mc, checks)
	}
	if err != nil {
		return err
	}
	return verdictErr
}

func describeScenario(w io.Writer, s *scenarios.Scenario) {
	fmt.Fprintf(w, "scenario %s (%s): %s\n", s.Name, s.Source, s.Doc)
	fmt.Fprintf(w, "generator: %s\n", s.Setup.Gen.String())
	if a := s.RooflineAccuracy(); a != nil {
		fmt.Fprintf(w, "the decode timing is a model, not a measurement: against %d published measurements it predicted %.2f-%.2fx the measured TPOT (80%% of points; median %.2fx, %.0f%% within 20%%, worst %.2fx-%.2fx; every point is in cmd/underrun/docs/simulate.md)\n",
			a.Points, a.P10, a.P90, a.Median, 100*a.Within20, a.Low, a.High)
	}
	if srv := s.Setup.Server; srv != nil {
		ttfa, rtf := srv.At(srv.Typical())
		fmt.Fprintf(w, "tts server: %s, %d sessions each synthesizing %.0f%% of the time; the report's turns play at the typical %d streams (first audio %v, RTF %.3f), each Monte Carlo turn at the streams drawn for it; source: %s\n",
			srv.Name, srv.Sessions, 100*srv.Active, srv.Typical(), ttfa.Round(10*time.Microsecond), rtf, srv.Source)
	}
	fmt.Fprintf(w, "turns: %d through the report, %d in the Monte Carlo run; seed %d\n\n", s.Turns, s.MonteCarlo, s.Seed)
}

func writeSimText(w io.Writer, s *scenarios.Scenario, rep *pipeline.Report, report []byte, mc *sim.Result, checks []scenarios.Check) error {
	var b strings.Builder
	if err := rep.WriteAnswer(&b); err != nil {
		return err
	}
	describeScenario(&b, s)
	b.Write(report)
	if mc != nil {
		b.WriteString("\n")
		mc.WriteText(&b)
	}
	if len(checks) > 0 {
		b.WriteString("\nexpectations (they decide the verdict):\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  line\tmetric\twant\tgot\tresult")
		for _, ch := range checks {
			line := "-"
			if ch.Line > 0 {
				line = fmt.Sprint(ch.Line)
			}
			result := "pass"
			if !ch.Pass {
				result = "FAIL"
			}
			fmt.Fprintf(tw, "  %s\t%s\t%s %g\t%s\t%s\n", line, ch.Metric, ch.Op, ch.Value, fmtGot(ch.Got), result)
		}
		tw.Flush()
	}
	if err := rep.WriteVerdict(&b); err != nil {
		return err
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func fmtGot(v float64) string {
	if math.IsNaN(v) {
		return "n/a"
	}
	return fmt.Sprintf("%.4g", v)
}

func writeSimJSON(w io.Writer, s *scenarios.Scenario, rep *pipeline.Report, report []byte, mc *sim.Result, checks []scenarios.Check) error {
	out := scenarios.NewRunJSON(s, checks, rep.Verdict.Pass())
	out.Answer, out.Report, out.MonteCarlo = rep.Answer, bytes.TrimSpace(report), mc
	return writeJSON(w, out)
}

func writeJSON(w io.Writer, v any) error {
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(v)
}

// runQuestions runs the sweep, if any, and answers the inverse questions:
// the sweep's own parameter within its range, and each --find over its
// default range.
func (c *simCommand) runQuestions(cmd *cobra.Command, s *scenarios.Scenario) error {
	opts := c.options(s)
	var (
		sw      sim.Sweep
		points  []sim.Point
		answers []sim.Answer
		err     error
	)
	if c.sweep != "" {
		if sw, err = sim.ParseSweep(c.sweep); err != nil {
			return usagef("--sweep: %w", err)
		}
		if _, err := s.Setup.With(sw.Param, sw.From); err != nil {
			return usagef("--sweep: %w", err)
		}
		if points, err = sim.RunSweep(cmd.Context(), s.Setup, sw, opts); err != nil {
			return usageError{err}
		}
		a, err := sim.Solve(cmd.Context(), s.Setup, sw.Param, sw.From, sw.To, c.target, opts)
		if err != nil {
			return usageError{err}
		}
		answers = append(answers, a)
	}
	for _, name := range c.find {
		p, err := sim.ParseParam(name)
		if err != nil {
			return usagef("--find: %w", err)
		}
		a, err := sim.Find(cmd.Context(), s.Setup, p, c.target, opts)
		if err != nil {
			return usagef("--find %s: %w", p, err)
		}
		answers = append(answers, a)
	}
	if c.out.output == "json" {
		out := scenarios.NewRunJSON(s, nil, true)
		for _, p := range points {
			out.Sweep = append(out.Sweep, scenarios.SweepJSON{Value: p.Value, Label: sw.Param.Format(p.Value), Result: p.Result})
		}
		for _, a := range answers {
			out.Answers = append(out.Answers, scenarios.NewAnswerJSON(a))
		}
		return writeJSON(c.env.stdout, out)
	}
	var b strings.Builder
	describeScenario(&b, s)
	cfg := s.Setup.Config
	speech := cfg.Policy.Name() + " chunking, TTS " + cfg.Synth.String()
	if cfg.Stack != "" {
		speech = "stack " + cfg.Stack + ": " + speech
	}
	fmt.Fprintf(&b, "speech: %s; the answers are for it\n", speech)
	if len(points) > 0 {
		fmt.Fprintf(&b, "sweep %s: %d values, %d turns each (the same turns at every value)\n\n", sw, len(points), opts.Turns)
		sim.WriteSweep(&b, sw, points, c.target, s.Setup.Server)
		fmt.Fprintf(&b, "\n(< marks goodput below the target %g)\n", c.target)
	} else {
		fmt.Fprintf(&b, "each probe simulates the same %d turns\n", opts.Turns)
	}
	for _, a := range answers {
		fmt.Fprintf(&b, "%s\n", a)
	}
	_, err = io.WriteString(c.env.stdout, b.String())
	return err
}
