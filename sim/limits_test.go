package sim

import (
	"errors"
	"math/rand/v2"
	"testing"
	"time"
)

// TestTimingsRefuseOverflows: the steps that overflowed a turn's
// nanoseconds (issue 45: tpot 2562047h; a gamma of cv 1e-300, whose shape
// 1/cv² is infinite) are refused by Validate.
func TestTimingsRefuseOverflows(t *testing.T) {
	t.Parallel()
	for _, tm := range []Timing{
		Constant{TPOT: 2562047 * time.Hour},
		Constant{TTFT: MaxDelay + 1, TPOT: time.Millisecond},
		Constant{TPOT: time.Millisecond, Stalls: []Stall{{Token: 1, Delay: 2562047 * time.Hour}}},
		Sampled{TTFT: 2562047 * time.Hour, ITL: Dist{Shape: ShapeGamma, Mean: 0.05, CV: 0.5}},
		Sampled{ITL: Dist{Shape: ShapeGamma, Mean: 0.05, CV: 1e-300}},
		Sampled{ITL: Dist{Shape: ShapeLognormal, Mean: 0.05, CV: 1e-300}},
		Sampled{ITL: Dist{Shape: ShapeLognormal, Mean: 1e9, CV: 0.5}},
	} {
		if err := tm.Validate(); !errors.Is(err, ErrModel) {
			t.Errorf("%v: %v, want ErrModel", tm, err)
		}
	}
}

// TestDrawsStayInRange: the far tail of the widest distribution allowed
// (a lognormal of cv 100 around an hour) is cut at MaxDelay, never a
// negative or wrapped Duration, on the general and the plain paths.
func TestDrawsStayInRange(t *testing.T) {
	t.Parallel()
	for _, shape := range []string{ShapeLognormal, ShapeGamma} {
		d := Dist{Shape: shape, Mean: MaxDelay.Seconds(), CV: 100}
		if err := d.Validate(); err != nil {
			t.Fatal(err)
		}
		d.prepare()
		rng := rand.New(rand.NewPCG(1, 2))
		for range 100_000 {
			if x := drawDuration(&d, rng); x < 0 || x > MaxDelay {
				t.Fatalf("%s: drew %v, want 0 to %v", shape, x, MaxDelay)
			}
		}
	}
	g := &Generator{Timing: Sampled{ITL: Dist{Shape: ShapeLognormal, Mean: MaxDelay.Seconds(), CV: 100}}, Tokens: 5000}
	for _, tr := range genTurns(t, g, 4) {
		for i := 1; i < len(tr.Chunks); i++ {
			if d := tr.Chunks[i].At - tr.Chunks[i-1].At; d < 0 || d > MaxDelay {
				t.Fatalf("turn %s chunk %d: step %v, want 0 to %v", tr.ID, i, d, MaxDelay)
			}
		}
	}
}
