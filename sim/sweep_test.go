package sim

import (
	"context"
	"errors"
	"math"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

func TestParseSweep(t *testing.T) {
	t.Parallel()
	tests := []struct {
		in   string
		want []float64
		err  bool
	}{
		{"tpot=20ms:50ms:10ms", []float64{20e6, 30e6, 40e6, 50e6}, false},
		{"batch=8:32:8", []float64{8, 16, 24, 32}, false},
		{"rate=0.1:0.3:0.1", []float64{0.1, 0.2, 0.30000000000000004}, false},
		{"ttfa=0s:200ms:100ms", []float64{0, 100e6, 200e6}, false},
		{"preroll=1s:1s:1s", []float64{1e9}, false},
		{"TPOT = 20ms:30ms:10ms", []float64{20e6, 30e6}, false},
		{"tpot=20:30:10", nil, true},
		{"tpot=20ms:10ms:1ms", nil, true},
		{"tpot=20ms:30ms:0s", nil, true},
		{"batch=1:100000:1", nil, true},
		{"speed=1:2:1", nil, true},
		{"batch", nil, true},
		{"batch=1:2", nil, true},
	}
	for _, tt := range tests {
		sw, err := ParseSweep(tt.in)
		if (err != nil) != tt.err {
			t.Errorf("ParseSweep(%q) error %v, want error %v", tt.in, err, tt.err)
			continue
		}
		if err != nil {
			if !errors.Is(err, ErrParam) {
				t.Errorf("ParseSweep(%q): %v is not ErrParam", tt.in, err)
			}
			continue
		}
		got := sw.Values()
		if len(got) != len(tt.want) {
			t.Errorf("ParseSweep(%q) values %v, want %v", tt.in, got, tt.want)
			continue
		}
		for i := range got {
			if math.Abs(got[i]-tt.want[i]) > 1e-9*max(1, tt.want[i]) {
				t.Errorf("ParseSweep(%q) values %v, want %v", tt.in, got, tt.want)
			}
		}
	}
}

func FuzzParseSweep(f *testing.F) {
	for _, s := range []string{"tpot=20ms:120ms:10ms", "batch=8:128:8", "rate=0:1:0.1", "x", "prompt=1e3:1e4:1e3"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		sw, err := ParseSweep(s)
		if err != nil {
			return
		}
		v := sw.Values()
		if len(v) == 0 || len(v) > maxSweepPoints+1 || v[0] != sw.From {
			t.Fatalf("%q: %d values from %v", s, len(v), sw.From)
		}
	})
}

// TestSolveTPOT: the largest TPOT found by Monte Carlo for a constant
// generator is the engine's own MaxTPOT inversion for that turn.
func TestSolveTPOT(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	p, err := tts.ParsePolicy("sentence")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy = p
	cfg.Synth.TTFA = 300 * time.Millisecond
	set := Setup{Gen: Generator{Timing: Constant{TTFT: 300 * time.Millisecond, TPOT: 40 * time.Millisecond}, Texts: []string{benchText}}, Config: cfg}
	a, err := Solve(context.Background(), set, ParamTPOT, float64(time.Millisecond), float64(time.Second), 1, Options{Turns: 2, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	turn := ConstantTurn("t", benchText, 300*time.Millisecond, 40*time.Millisecond, nil)
	want, ok, err := pipeline.MaxTPOT(cfg, turn, nil)
	if err != nil || !ok {
		t.Fatal(ok, err)
	}
	if !a.Found || math.Abs(a.Value-float64(want)) > float64(ParamTPOT.Resolution())+float64(10*time.Microsecond) {
		t.Errorf("Solve = %s, want %v", a, want)
	}
}

func TestSolveBatchAndPreroll(t *testing.T) {
	t.Parallel()
	h100, _ := LookupGPU("h100")
	m, _ := LookupModel("llama-3.1-70b")
	r := Roofline{GPU: h100, GPUs: 4, Model: m, Weights: "bf16", Prompt: 1000}
	set := Setup{Gen: Generator{Timing: r, Texts: []string{benchText}}, Config: pipeline.DefaultConfig()}
	opts := Options{Turns: 4, Seed: 1}
	lo, hi, err := set.Range(ParamBatch)
	if err != nil || lo != 1 || hi != float64(r.MaxBatch()) {
		t.Fatalf("range %v..%v, %v", lo, hi, err)
	}
	a, err := Solve(context.Background(), set, ParamBatch, lo, hi, 1, opts)
	if err != nil {
		t.Fatal(err)
	}
	if !a.Found || a.Value != math.Floor(a.Value) {
		t.Fatalf("batch answer %s", a)
	}
	// the answer is an edge: it passes, one more fails (or it is the max)
	check := func(batch float64) float64 {
		s, _ := set.With(ParamBatch, batch)
		res, err := s.Run(context.Background(), opts)
		if err != nil {
			t.Fatal(err)
		}
		return res.Goodput
	}
	if check(a.Value) < 1 || (!a.AtBound && check(a.Value+1) >= 1) {
		t.Errorf("batch %v is not the largest with goodput 1", a.Value)
	}
	// a slow pace needs a pre-roll; the smallest one found removes the gaps
	slow := Setup{Gen: Generator{Timing: Constant{TTFT: 200 * time.Millisecond, TPOT: 350 * time.Millisecond}, Texts: []string{benchText}}, Config: pipeline.DefaultConfig()}
	pa, err := Solve(context.Background(), slow, ParamPreroll, 0, float64(60*time.Second), 1, Options{Turns: 1, Seed: 1})
	if err != nil || !pa.Found || pa.AtBound {
		t.Fatalf("preroll answer %s, %v", pa, err)
	}
	if pa.Value <= 0 {
		t.Errorf("pre-roll %v", pa.Value)
	}
	if _, err := slow.With(ParamBatch, 3); !errors.Is(err, ErrParam) {
		t.Errorf("batch on a constant generator: %v", err)
	}
}

func TestRangeKeepsLoadBelowOne(t *testing.T) {
	t.Parallel()
	r := testRoofline(false)
	set := Setup{Gen: Generator{Timing: r, Texts: []string{benchText}}, Config: pipeline.DefaultConfig()}
	for _, p := range []Param{ParamRate, ParamPrompt} {
		lo, hi, err := set.Range(p)
		if err != nil {
			t.Fatal(err)
		}
		at, err := set.With(p, hi)
		if err != nil {
			t.Fatal(err)
		}
		if l := at.Gen.Timing.(Roofline).Load(); l > 0.99+1e-9 || l < 0.9 || lo > hi {
			t.Errorf("%s range %v..%v: load at the top %v", p, lo, hi, l)
		}
		if err := at.Gen.Validate(); err != nil {
			t.Errorf("%s at the top of its range: %v", p, err)
		}
	}
	if _, _, err := set.Range(ParamTPOT); !errors.Is(err, ErrParam) {
		t.Errorf("tpot range of a roofline: %v", err)
	}
}

func TestHistQuantiles(t *testing.T) {
	t.Parallel()
	var h hist
	for i := range 1000 {
		h.add(time.Duration(i+1) * time.Millisecond)
	}
	h.add(40 * time.Millisecond)
	q := h.quantiles()
	if q.Min != 1 || q.Max != 1000 {
		t.Errorf("min %v max %v, want 1 and 1000", q.Min, q.Max)
	}
	// 1/16-octave bins: a quantile is within 4.5% of the exact one
	for _, c := range []struct{ got, want float64 }{{q.P50, 500}, {q.P90, 900}, {q.P99, 990}, {q.P10, 100}} {
		if math.Abs(c.got-c.want) > 0.045*c.want {
			t.Errorf("quantile %v, want %v within 4.5%%", c.got, c.want)
		}
	}
	if got := h.below(500 * time.Millisecond); math.Abs(got-500) > 25 {
		t.Errorf("below(500ms) = %v, want about 500", got)
	}
}

// TestFindNamesTheLimit: when every batch up to the memory limit meets the
// target, the answer is the limit itself, said so ("217 or above" claimed
// batches that do not fit); a pre-roll of 0 is "no pre-roll at all".
func TestFindNamesTheLimit(t *testing.T) {
	t.Parallel()
	h100, _ := LookupGPU("h100")
	m, _ := LookupModel("llama-3.1-8b")
	r := Roofline{GPU: h100, Model: m, Weights: "fp8", Prompt: 1000}
	set := Setup{Gen: Generator{Timing: r, Texts: []string{benchText}}, Config: pipeline.DefaultConfig()}
	a, err := Find(context.Background(), set, ParamBatch, 0, Options{Turns: 2, Seed: 1})
	if err != nil || !a.AtBound || a.Value != float64(r.MaxBatch()) {
		t.Fatalf("batch answer %+v, %v", a, err)
	}
	if s := a.String(); !strings.Contains(s, "the most that fits in memory") || strings.Contains(s, "or above") {
		t.Errorf("answer %q", s)
	}
	fast := Setup{Gen: Generator{Timing: Constant{TTFT: 200 * time.Millisecond, TPOT: 10 * time.Millisecond}, Texts: []string{benchText}}, Config: pipeline.DefaultConfig()}
	pa, err := Find(context.Background(), fast, ParamPreroll, 1, Options{Turns: 1, Seed: 1})
	if err != nil || !pa.AtBound || pa.Value != 0 || !strings.Contains(pa.String(), "no pre-roll at all") || strings.Contains(pa.String(), "or below") {
		t.Errorf("pre-roll answer %q, %v", pa, err)
	}
}
