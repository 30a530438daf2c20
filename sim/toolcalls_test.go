package sim

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

const ms = time.Millisecond

func TestInsertToolCalls(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name  string
		calls []ToolCall
		at    []time.Duration
		tools []pipeline.ToolCall
	}{
		{"after two tokens", []ToolCall{{AfterTokens: 2, Duration: time.Second, Name: "x"}},
			[]time.Duration{0, 10 * ms, 1020 * ms, 1030 * ms}, []pipeline.ToolCall{{At: 10 * ms, Duration: time.Second, Name: "x"}}},
		{"before any token", []ToolCall{{AfterTokens: 0, Duration: time.Second}},
			[]time.Duration{1000 * ms, 1010 * ms, 1020 * ms, 1030 * ms}, []pipeline.ToolCall{{At: 0, Duration: time.Second}}},
		{"past the turn", []ToolCall{{AfterTokens: 4, Duration: time.Second}},
			[]time.Duration{0, 10 * ms, 20 * ms, 30 * ms}, nil},
		{"two", []ToolCall{{AfterTokens: 1, Duration: 100 * ms}, {AfterTokens: 3, Duration: 200 * ms}},
			[]time.Duration{0, 110 * ms, 120 * ms, 330 * ms}, []pipeline.ToolCall{{At: 0, Duration: 100 * ms}, {At: 120 * ms, Duration: 200 * ms}}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			turn := &pipeline.Turn{}
			for i := range 4 {
				turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: time.Duration(i) * 10 * ms, Tokens: 1, Text: " a"})
			}
			InsertToolCalls(turn, tt.calls)
			for i, c := range turn.Chunks {
				if c.At != tt.at[i] {
					t.Errorf("chunk %d at %v, want %v", i, c.At, tt.at[i])
				}
			}
			if len(turn.ToolCalls) != len(tt.tools) {
				t.Fatalf("tool calls %+v, want %+v", turn.ToolCalls, tt.tools)
			}
			for i := range tt.tools {
				if turn.ToolCalls[i] != tt.tools[i] {
					t.Errorf("tool call %d = %+v, want %+v", i, turn.ToolCalls[i], tt.tools[i])
				}
			}
		})
	}
}

// TestMonteCarloToolCalls: the Monte Carlo turns pause for the setup's
// tool calls; each pause is a tool-call silence, apart from the
// underruns, and the TPOT and ITLs leave the tool's time out.
func TestMonteCarloToolCalls(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	cfg.Synth.TTFA, cfg.Synth.RTF = 150*ms, 0.2
	s := Setup{Gen: Generator{Timing: Sampled{TTFT: 300 * ms, ITL: Dist{Shape: ShapeLognormal, Mean: 0.025, CV: 0.5}}, Texts: []string{benchText}}, Config: cfg}
	opts := Options{Turns: 300, Seed: 7, Workers: 2}
	without, err := s.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	s.ToolCalls = []ToolCall{{AfterTokens: 6, Duration: 4 * time.Second, Name: "get_weather"}}
	with, err := s.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if with.ToolSilences != opts.Turns || with.ToolSilenceMs < float64(opts.Turns)*2000 || without.ToolSilences != 0 {
		t.Fatalf("tool silences %d (%.0f ms) with the call, %d without; want one a turn", with.ToolSilences, with.ToolSilenceMs, without.ToolSilences)
	}
	if with.Interruptions > without.Interruptions+opts.Turns/10 {
		t.Errorf("interruptions %d with the tool call, %d without: the pause counted as underrun", with.Interruptions, without.Interruptions)
	}
	for _, q := range [][2]float64{{with.TPOT.P50, without.TPOT.P50}, {with.TPOT.Max, without.TPOT.Max}, {with.ITL.Max, without.ITL.Max}, {with.ITL.P99, without.ITL.P99}} {
		if math.Abs(q[0]-q[1]) > 1e-6 {
			t.Errorf("TPOT/ITL with the tool call %v ms, without %v ms: the tool's time counted", q[0], q[1])
		}
	}
}
