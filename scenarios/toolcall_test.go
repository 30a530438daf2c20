package scenarios

import (
	"context"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

func TestToolCallsField(t *testing.T) {
	t.Parallel()
	const head = "generator:\n  kind: constant\n  tpot: 40ms\n"
	tests := []struct {
		name, src string
		want      []string
	}{
		{"zero duration", head + "tool_calls:\n  - after_tokens: 3\n    duration: 0s\n", []string{"line 5", "tool_calls", "tool call 1: duration 0s"}},
		{"negative after", head + "tool_calls:\n  - after_tokens: -1\n    duration: 1s\n", []string{"tool_calls", "after_tokens -1"}},
		{"out of order", head + "tool_calls:\n  - after_tokens: 5\n    duration: 1s\n  - after_tokens: 2\n    duration: 1s\n", []string{"tool call 2: after_tokens 2, before tool call 1's 5"}},
		{"too long", head + "tool_calls:\n  - after_tokens: 5\n    duration: 2h\n", []string{"duration 2h0m0s; want a positive duration up to 1h0m0s"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			checkParseError(t, tt.src, tt.want)
		})
	}
}

func TestInsertToolCalls(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name  string
		calls []ToolCallFile
		at    []time.Duration
		tools []pipeline.ToolCall
	}{
		{"after two tokens", []ToolCallFile{{AfterTokens: 2, Duration: time.Second, Name: "x"}},
			[]time.Duration{0, 10 * ms, 1020 * ms, 1030 * ms}, []pipeline.ToolCall{{At: 10 * ms, Duration: time.Second, Name: "x"}}},
		{"before any token", []ToolCallFile{{AfterTokens: 0, Duration: time.Second}},
			[]time.Duration{1000 * ms, 1010 * ms, 1020 * ms, 1030 * ms}, []pipeline.ToolCall{{At: 0, Duration: time.Second}}},
		{"past the turn", []ToolCallFile{{AfterTokens: 4, Duration: time.Second}},
			[]time.Duration{0, 10 * ms, 20 * ms, 30 * ms}, nil},
		{"two", []ToolCallFile{{AfterTokens: 1, Duration: 100 * ms}, {AfterTokens: 3, Duration: 200 * ms}},
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

// TestToolCallBuiltin: the built-in's pauses are reported as tool-call
// silences, not underruns, and a keep-alive covers more than a phrase.
func TestToolCallBuiltin(t *testing.T) {
	t.Parallel()
	s, err := Builtin("tool-call")
	if err != nil {
		t.Fatal(err)
	}
	covered := map[string]float64{}
	for _, f := range []string{"none", `after:800ms:"One moment."`, "keepalive:800ms"} {
		fl, err := pipeline.ParseFiller(f)
		if err != nil {
			t.Fatal(err)
		}
		ev, err := s.Evaluate(context.Background(), RunOptions{MonteCarlo: 10, Report: pipeline.ReportOptions{Filler: fl}})
		if err != nil {
			t.Fatal(err)
		}
		r := ev.Report
		if r.ToolSilences.Count != s.Turns || r.Underruns.Count != 0 || r.Causes[pipeline.CauseTool].Count != 0 {
			t.Fatalf("%s: tool silences %d of %d turns, underruns %d, causes %v", f, r.ToolSilences.Count, s.Turns, r.Underruns.Count, r.Causes)
		}
		covered[f] = r.FillerCover.TotalMs
		if r.FillerCover.TotalMs > r.ToolSilences.TotalMs {
			t.Errorf("%s covers %v ms of %v", f, r.FillerCover.TotalMs, r.ToolSilences.TotalMs)
		}
	}
	if !(covered["none"] == 0 && covered[`after:800ms:"One moment."`] > 0 && covered["keepalive:800ms"] > covered[`after:800ms:"One moment."`]) {
		t.Errorf("covered %v", covered)
	}
}
