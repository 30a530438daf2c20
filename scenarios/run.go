package scenarios

import (
	"context"
	"fmt"
	"slices"
	"time"

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
		InsertToolCalls(&t, s.ToolCalls)
		if err := fn(&t); err != nil {
			return err
		}
	}
	return nil
}

// InsertToolCalls pauses t for each tool call: the stream stops when its
// AfterTokens-th token has arrived (at 0 for none), and every chunk after
// it arrives Duration later. A tool call past the turn's tokens is left
// out. t's chunks must be its own.
func InsertToolCalls(t *pipeline.Turn, tcs []ToolCallFile) {
	if len(tcs) == 0 {
		return
	}
	t.ToolCalls = nil
	k, tokens := 0, 0
	for _, tc := range tcs {
		for k < len(t.Chunks) && tokens < tc.AfterTokens {
			tokens += t.Chunks[k].TokenCount()
			k++
		}
		if k >= len(t.Chunks) {
			return
		}
		at := time.Duration(0)
		if k > 0 {
			at = t.Chunks[k-1].At
		}
		for j := k; j < len(t.Chunks); j++ {
			t.Chunks[j].At += tc.Duration
		}
		t.ToolCalls = append(t.ToolCalls, pipeline.ToolCall{At: at, Duration: tc.Duration, Name: tc.Name})
	}
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
	return &Evaluation{Report: rep, MonteCarlo: mc, Metrics: m, Checks: Checks(s.Expect, m)}, nil
}
