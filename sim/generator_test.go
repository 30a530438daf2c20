package sim

import (
	"context"
	"encoding/json"
	"math"
	"math/rand/v2"
	"reflect"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

func TestDistMoments(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name string
		d    Dist
	}{
		{"lognormal", Dist{Shape: ShapeLognormal, Mean: 0.04, CV: 0.5}},
		{"lognormal wide", Dist{Shape: ShapeLognormal, Mean: 0.05, CV: 1.5}},
		{"gamma", Dist{Shape: ShapeGamma, Mean: 0.04, CV: 0.5}},
		{"gamma shape below 1", Dist{Shape: ShapeGamma, Mean: 0.03, CV: 2}},
		{"exponential", Dist{Shape: ShapeGamma, Mean: 1, CV: 1}},
		{"constant", Dist{Mean: 7}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			if err := tt.d.Validate(); err != nil {
				t.Fatal(err)
			}
			d := tt.d
			d.prepare()
			rng := rand.New(rand.NewPCG(1, 2))
			const n = 400000
			var sum, sum2 float64
			for range n {
				x := d.Draw(rng)
				if x < 0 {
					t.Fatalf("negative draw %v", x)
				}
				sum += x
				sum2 += x * x
			}
			mean := sum / n
			cv := math.Sqrt(max(0, sum2/n-mean*mean)) / mean
			if got, want := mean, tt.d.Mean; math.Abs(got-want) > 0.01*want {
				t.Errorf("mean = %v, want %v within 1%%", got, want)
			}
			if got, want := cv, tt.d.CV; math.Abs(got-want) > 0.05*max(want, 0.01) {
				t.Errorf("cv = %v, want %v within 5%%", got, want)
			}
		})
	}
}

func TestDistValidate(t *testing.T) {
	t.Parallel()
	for _, d := range []Dist{{Shape: "weibull", Mean: 1}, {Mean: -1}, {Mean: math.NaN()}, {Mean: 1, CV: -1}, {Shape: ShapeConstant, Mean: 1, CV: 1}} {
		if err := d.Validate(); err == nil {
			t.Errorf("%+v: no error", d)
		}
	}
}

// turnStats returns the steps' ITLs of a generator's turns.
func genTurns(t *testing.T, g *Generator, n int) []*pipeline.Turn {
	t.Helper()
	if err := g.Validate(); err != nil {
		t.Fatal(err)
	}
	s := g.NewStream(7)
	var out []*pipeline.Turn
	for i := range n {
		tr := *s.Turn(i)
		tr.Chunks = append([]pipeline.Chunk(nil), tr.Chunks...)
		if err := tr.Validate(); err != nil {
			t.Fatal(err)
		}
		out = append(out, &tr)
	}
	return out
}

func TestConstantMatchesConstantTurn(t *testing.T) {
	t.Parallel()
	stalls := []Stall{{Token: 3, Delay: 700 * time.Millisecond}, {Token: 60, Delay: 700 * time.Millisecond}}
	g := &Generator{Timing: Constant{TTFT: 250 * time.Millisecond, TPOT: 37 * time.Millisecond, Stalls: stalls}, Texts: []string{benchText}}
	got := genTurns(t, g, 1)[0]
	want := ConstantTurn("", benchText, 250*time.Millisecond, 37*time.Millisecond, stalls)
	if !reflect.DeepEqual(got.Chunks, want.Chunks) {
		t.Errorf("constant generator differs from ConstantTurn")
	}
	if got.Text() != benchText {
		t.Errorf("text not kept")
	}
}

func TestSampledMeanTPOT(t *testing.T) {
	t.Parallel()
	for _, shape := range []string{ShapeLognormal, ShapeGamma} {
		g := &Generator{Timing: Sampled{TTFT: 200 * time.Millisecond, ITL: Dist{Shape: shape, Mean: 0.045, CV: 0.8}}, Tokens: 500}
		var sum float64
		var n int
		for _, tr := range genTurns(t, g, 400) {
			for k := 1; k < len(tr.Chunks); k++ {
				sum += (tr.Chunks[k].At - tr.Chunks[k-1].At).Seconds()
				n++
			}
			if tr.Chunks[0].At != 200*time.Millisecond {
				t.Fatalf("ttft %v", tr.Chunks[0].At)
			}
		}
		if got, want := sum/float64(n), 0.045; math.Abs(got-want) > 0.01*want {
			t.Errorf("%s: mean ITL %v, want %v within 1%%", shape, got, want)
		}
	}
}

func TestEmpiricalResamples(t *testing.T) {
	t.Parallel()
	itls := []time.Duration{10 * time.Millisecond, 20 * time.Millisecond, 90 * time.Millisecond}
	e := Empirical{ITLs: itls, TTFTs: []time.Duration{time.Second}}
	g := &Generator{Timing: e, Tokens: 300}
	counts := map[time.Duration]int{}
	for _, tr := range genTurns(t, g, 100) {
		for k := 1; k < len(tr.Chunks); k++ {
			counts[tr.Chunks[k].At-tr.Chunks[k-1].At]++
		}
	}
	if len(counts) != 3 {
		t.Fatalf("ITLs seen: %v", counts)
	}
	for _, d := range itls {
		if c := counts[d]; math.Abs(float64(c)-29900/3.0) > 400 {
			t.Errorf("ITL %v drawn %d times, want about %d", d, c, 29900/3)
		}
	}
	scaled, err := e.With(ParamTPOT, float64(80*time.Millisecond))
	if err != nil {
		t.Fatal(err)
	}
	if got := scaled.(Empirical).MeanITL(); got != 80*time.Millisecond {
		t.Errorf("scaled mean %v, want 80ms", got)
	}
}

func TestSpeculative(t *testing.T) {
	t.Parallel()
	spec := Speculative{Draft: 4, Acceptance: 0.6, Cost: 0.1}
	g := &Generator{Timing: Constant{TTFT: 100 * time.Millisecond, TPOT: 10 * time.Millisecond}, Texts: []string{benchText}, Speculative: spec}
	var tokens, chunks int
	for _, tr := range genTurns(t, g, 300) {
		if tr.Text() != benchText {
			t.Fatal("speculative chunks lose text")
		}
		for k := 1; k < len(tr.Chunks); k++ {
			if itl := tr.Chunks[k].At - tr.Chunks[k-1].At; itl != 14*time.Millisecond {
				t.Fatalf("step %v, want 14ms (10ms + 4 x 10%%)", itl)
			}
			if n := tr.Chunks[k].Tokens; n < 1 || n > 5 {
				t.Fatalf("chunk of %d tokens", n)
			}
			if k < len(tr.Chunks)-1 {
				tokens += tr.Chunks[k].Tokens
				chunks++
			}
		}
	}
	if got, want := float64(tokens)/float64(chunks), spec.TokensPerStep(); math.Abs(got-want) > 0.02*want {
		t.Errorf("tokens per step %.3f, want %.3f", got, want)
	}
}

func TestReasoning(t *testing.T) {
	t.Parallel()
	g := &Generator{Timing: Constant{TTFT: 100 * time.Millisecond, TPOT: 10 * time.Millisecond}, Texts: []string{benchText},
		Reasoning: Lengths{Dist: Dist{Shape: ShapeGamma, Mean: 200, CV: 0.3}, Min: 1}, Speculative: Speculative{Draft: 2, Acceptance: 0.5}}
	var thought float64
	turns := genTurns(t, g, 300)
	for _, tr := range turns {
		spoken := false
		for _, c := range tr.Chunks {
			if c.Reasoning {
				if spoken {
					t.Fatal("reasoning after the answer started")
				}
				if c.Text != "" {
					t.Fatal("reasoning chunk carries spoken text")
				}
				thought += float64(c.Tokens)
			} else {
				spoken = true
			}
		}
		if tr.Text() != benchText {
			t.Fatal("answer text changed")
		}
		tm, _ := tr.Timing()
		if tm.TTFST <= tm.TTFT {
			t.Fatal("first spoken token not after the thinking")
		}
	}
	if got := thought / float64(len(turns)); math.Abs(got-200) > 6 {
		t.Errorf("mean reasoning tokens %.1f, want 200", got)
	}
}

// TestStreamIndependence: turn i is the same whatever stream made it and
// whatever came before.
func TestStreamIndependence(t *testing.T) {
	t.Parallel()
	g := &Generator{Timing: testRoofline(false), Texts: []string{benchText, "Short answer."}}
	a, b := g.NewStream(3), g.NewStream(3)
	want := append([]pipeline.Chunk(nil), a.Turn(4).Chunks...)
	b.Turn(9)
	b.Turn(2)
	if got := b.Turn(4).Chunks; !reflect.DeepEqual(got, want) {
		t.Errorf("turn 4 depends on the stream's history")
	}
	if reflect.DeepEqual(g.NewStream(4).Turn(4).Chunks, want) {
		t.Errorf("seed does not change the turn")
	}
}

func TestRunDeterministic(t *testing.T) {
	t.Parallel()
	g := &Generator{Timing: testRoofline(false), Texts: []string{benchText}}
	cfg := pipeline.DefaultConfig()
	var outs [][]byte
	for _, workers := range []int{1, 2, 5} {
		r, err := Run(context.Background(), g, cfg, Options{Turns: 300, Seed: 9, Workers: workers})
		if err != nil {
			t.Fatal(err)
		}
		b, err := json.Marshal(r)
		if err != nil {
			t.Fatal(err)
		}
		outs = append(outs, b)
	}
	for i := 1; i < len(outs); i++ {
		if string(outs[i]) != string(outs[0]) {
			t.Errorf("result differs with the number of workers:\n%s\n%s", outs[0], outs[i])
		}
	}
}

func TestRunCounts(t *testing.T) {
	t.Parallel()
	// a turn whose one stall interrupts: every turn is interrupted once
	g := &Generator{Timing: Constant{TTFT: 100 * time.Millisecond, TPOT: 20 * time.Millisecond,
		Stalls: []Stall{{Token: 3, Delay: 5 * time.Second}}}, Texts: []string{benchText}}
	r, err := Run(context.Background(), g, pipeline.DefaultConfig(), Options{Turns: 130, Seed: 1})
	if err != nil {
		t.Fatal(err)
	}
	if r.Goodput != 0 || r.Interrupted != 130 || r.Interruptions != 130 || r.Counts[1] != 130 {
		t.Errorf("goodput %v, interrupted %d, interruptions %d, counts %v", r.Goodput, r.Interrupted, r.Interruptions, r.Counts)
	}
	if r.ITL.Max < 5000 || r.ITL.P50 < 19.9 || r.ITL.P50 > 20.1 {
		t.Errorf("ITL %+v", r.ITL)
	}
	if _, err := Run(context.Background(), g, pipeline.DefaultConfig(), Options{}); err == nil {
		t.Errorf("zero turns accepted")
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if _, err := Run(ctx, g, pipeline.DefaultConfig(), Options{Turns: 10}); err == nil {
		t.Errorf("cancelled context ignored")
	}
}

func TestWilson(t *testing.T) {
	t.Parallel()
	tests := []struct {
		k, n   int
		lo, hi float64
	}{
		{0, 10, 0, 0.2775},
		{10, 10, 0.7225, 1},
		{50, 100, 0.4038, 0.5962},
		{990, 1000, 0.9817, 0.9946},
	}
	for _, tt := range tests {
		lo, hi := Wilson(tt.k, tt.n, 1.959963984540054)
		if math.Abs(lo-tt.lo) > 1e-4 || math.Abs(hi-tt.hi) > 1e-4 {
			t.Errorf("Wilson(%d, %d) = %.4f-%.4f, want %.4f-%.4f", tt.k, tt.n, lo, hi, tt.lo, tt.hi)
		}
	}
}
