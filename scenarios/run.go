package scenarios

import (
	"context"
	"fmt"
	"slices"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/sim"
)

// TurnID names turn i of a scenario in reports.
func (s *Scenario) TurnID(i int) string { return fmt.Sprintf("t%d", i+1) }

// EachTurn calls fn with each of the scenario's report turns in order, each a
// fresh copy the callee may keep. It stops at the first error.
func (s *Scenario) EachTurn(ctx context.Context, turns int, fn func(*pipeline.Turn) error) error {
	stream := s.Setup.Gen.NewStream(s.Seed)
	for i := range turns {
		if err := ctx.Err(); err != nil {
			return err
		}
		t := *stream.Turn(i)
		t.Chunks = slices.Clone(t.Chunks)
		t.ID = s.TurnID(i)
		sim.InsertToolCalls(&t, s.Setup.ToolCalls)
		if err := fn(&t); err != nil {
			return err
		}
	}
	return nil
}

// Evaluation is a scenario's outcome: its report, its Monte Carlo
// statistics and its expectations.
type Evaluation struct {
	Report     *pipeline.Report
	MonteCarlo *sim.Result
	Metrics    Metrics
	Checks     []Check
}

// Passed reports whether every expectation held.
func (e *Evaluation) Passed() bool { return Passed(e.Checks) }

// RunOptions size an evaluation; zero fields take the scenario's values.
type RunOptions struct {
	Turns, MonteCarlo int
	Workers           int
	// Report options for the report over the turns.
	Report pipeline.ReportOptions
}

// Evaluate runs the scenario: its turns through a report, its Monte Carlo
// turns through sim.Run, and checks its expectations.
func (s *Scenario) Evaluate(ctx context.Context, opts RunOptions) (*Evaluation, error) {
	turns, mcTurns := s.Turns, s.MonteCarlo
	if opts.Turns > 0 {
		turns = opts.Turns
	}
	if opts.MonteCarlo > 0 {
		mcTurns = opts.MonteCarlo
	}
	cfg := s.Setup.Config
	p, err := pipeline.NewPlayout(cfg, "")
	if err != nil {
		return nil, err
	}
	rep := pipeline.NewReport(cfg, opts.Report)
	err = s.EachTurn(ctx, turns, func(t *pipeline.Turn) error {
		if err := p.PlayTurn(t); err != nil {
			return err
		}
		rep.Add(t, p)
		return nil
	})
	if err != nil {
		return nil, err
	}
	rep.Close()
	mc, err := s.Setup.Run(ctx, sim.Options{Turns: mcTurns, Seed: s.Seed, Workers: opts.Workers})
	if err != nil {
		return nil, err
	}
	m := NewMetrics(rep, mc)
	checks := Checks(s.Expect, m)
	rep.Expect(ReportExpectations(checks)) // one verdict: the expectations decide it
	return &Evaluation{Report: rep, MonteCarlo: mc, Metrics: m, Checks: checks}, nil
}
