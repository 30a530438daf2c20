package pipeline

import (
	"math"
	"testing"
	"time"
)

func TestPercentileMatchesNumpyLinear(t *testing.T) {
	t.Parallel()
	// numpy.percentile(x, p) with the default (linear) method, by hand:
	// x = [1, 2, 4, 8, 16], h = (N-1)p/100.
	x := []float64{1, 2, 4, 8, 16}
	tests := []struct{ p, want float64 }{
		{0, 1}, {50, 4}, {90, 16 - 0.4*8}, {95, 16 - 0.2*8}, {99, 16 - 0.04*8}, {99.9, 16 - 0.004*8}, {100, 16},
		{25, 2}, {10, 1.4},
	}
	for _, tt := range tests {
		if got := Percentile(x, tt.p); math.Abs(got-tt.want) > 1e-12 {
			t.Errorf("p%v = %v, want %v", tt.p, got, tt.want)
		}
	}
	if got := Percentile(nil, 50); !math.IsNaN(got) {
		t.Errorf("empty percentile = %v, want NaN", got)
	}
}

func TestSummary(t *testing.T) {
	t.Parallel()
	var s Sample
	for _, v := range []float64{4, 1, 3, 2} {
		s.Add(v)
	}
	got := s.Summary()
	// population std of 1..4: sqrt(1.25)
	if got.Mean != 2.5 || got.Median != 2.5 || math.Abs(got.Std-math.Sqrt(1.25)) > 1e-12 || got.Min != 1 || got.Max != 4 || got.Count != 4 {
		t.Errorf("summary = %+v", got)
	}
	if got, want := got.P90, 3.7; math.Abs(got-want) > 1e-12 {
		t.Errorf("p90 = %v, want %v", got, want)
	}
	var empty Sample
	if got := empty.Summary(); got != (Summary{}) {
		t.Errorf("empty summary = %+v", got)
	}
}

func TestTimingDefinitions(t *testing.T) {
	t.Parallel()
	turn := &Turn{Chunks: []Chunk{
		{At: 100 * ms, Text: "think", Reasoning: true},
		{At: 300 * ms, Text: "Hi", Tokens: 2},
		{At: 400 * ms, Text: " there", Tokens: 1},
	}}
	tm, ok := turn.Timing()
	if !ok {
		t.Fatal("no timing")
	}
	// n = 4 tokens: TPOT = (400 - 100) / 3
	if tm.TTFT != 100*ms || tm.TTFST != 300*ms || tm.E2E != 400*ms || tm.TPOT != 100*ms || tm.Tokens != 4 {
		t.Errorf("timing = %+v", tm)
	}
	one := &Turn{Chunks: []Chunk{{At: 100 * ms, Text: "Hi"}}}
	if tm, _ := one.Timing(); tm.HasTPOT {
		t.Error("a one-token turn has a TPOT; it must be left out")
	}
	reported := &Turn{OutputTokens: 11, Chunks: []Chunk{{At: 0}, {At: time.Second}}}
	if s, _ := reported.TPOTSeconds(); s != 0.1 {
		t.Errorf("TPOT with reported output tokens = %v, want 0.1", s)
	}
}
