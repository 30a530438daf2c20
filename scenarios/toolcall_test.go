package scenarios

import (
	"context"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
)

func TestToolCallsField(t *testing.T) {
	t.Parallel()
	const head = "generator:\n  kind: constant\n  tpot: 40ms\n"
	checkParseErrors(t, []parseErrorCase{
		{"zero duration", head + "tool_calls:\n  - after_tokens: 3\n    duration: 0s\n", []string{"line 5", "tool_calls", "tool call 1: duration 0s"}},
		{"negative after", head + "tool_calls:\n  - after_tokens: -1\n    duration: 1s\n", []string{"tool_calls", "after_tokens -1"}},
		{"out of order", head + "tool_calls:\n  - after_tokens: 5\n    duration: 1s\n  - after_tokens: 2\n    duration: 1s\n", []string{"tool call 2: after_tokens 2, before tool call 1's 5"}},
		{"too long", head + "tool_calls:\n  - after_tokens: 5\n    duration: 2h\n", []string{"duration 2h0m0s; want a positive duration up to 1h0m0s"}},
	})
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
		s.Setup.Config.Filler = fl
		ev, err := s.Evaluate(context.Background(), RunOptions{MonteCarlo: 10})
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
