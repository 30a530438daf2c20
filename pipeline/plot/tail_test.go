package plot

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/scenarios"
)

// plottedFraction reads the tail figure's CCDF curve at pixel column px:
// the highest point of the path there (at an ITL the curve drops, and the
// fraction at or above that ITL is the top of the drop), as a fraction.
func plottedFraction(t *testing.T, path []float64, y scale, px float64) float64 {
	t.Helper()
	top := math.Inf(1)
	for i := 0; i+3 < len(path); i += 2 {
		x0, x1 := path[i], path[i+2]
		if px < min(x0, x1) || px > max(x0, x1) {
			continue
		}
		top = min(top, path[i+1], path[i+3])
	}
	if math.IsInf(top, 1) && len(path) >= 2 && px > path[len(path)-2] {
		return 0 // right of the largest ITL
	}
	if math.IsInf(top, 1) {
		t.Fatalf("the curve does not reach pixel column %.2f", px)
	}
	if top >= y.p0 {
		return 0
	}
	return math.Pow(10, math.Log10(y.lo)+(y.p0-top)/(y.p0-y.p1)*(math.Log10(y.hi)-math.Log10(y.lo)))
}

// ccdfOf returns the path of the figure's CCDF curve.
func ccdfOf(t *testing.T, f *Figure) []float64 {
	t.Helper()
	for _, el := range f.els {
		if el.kind == kindPath && el.meta != nil && el.meta.Class == "ccdf" {
			return el.pts
		}
	}
	t.Fatal("the tail figure has no CCDF curve")
	return nil
}

// TestTailCurveMatchesCounts reads the plotted complementary CDF back at
// every ITL and checks it against the fraction of ITLs at or above that
// ITL, counted, and against what the tolerance annotations say.
func TestTailCurveMatchesCounts(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 5))
	var lognormal, many []float64
	for range 400 {
		lognormal = append(lognormal, math.Round(math.Exp(rng.NormFloat64()*0.8)*60))
	}
	for range exactLimit + 3000 {
		many = append(many, math.Exp(rng.NormFloat64())*40)
	}
	def := scenarios.DefaultTurn()
	var defITLs []float64
	for i := 1; i < len(def.Chunks); i++ {
		defITLs = append(defITLs, pipeline.Millis(def.Chunks[i].At-def.Chunks[i-1].At))
	}
	for _, tc := range []struct {
		name string
		itls []float64
		// binned: counts are to the bin (1/50 of a decade), as Exceeding
		// counts them
		binned bool
	}{
		{"default turn", defITLs, false},
		{"lognormal, rounded to the ms", lognormal, false},
		{"binned", many, true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			tail := NewTail(0)
			for _, v := range tc.itls {
				tail.AddITL(v)
			}
			if got := tail.bins != nil; got != tc.binned {
				t.Fatalf("binned = %v, want %v", got, tc.binned)
			}
			// No tolerances were added, so the figure's axes are those of
			// its points alone.
			x, y := tail.scales(tail.CCDF())
			path := ccdfOf(t, tail.Figure())
			atOrAbove := func(ms float64) float64 {
				if tc.binned {
					return tail.Exceeding(ms)
				}
				n := 0
				for _, v := range tc.itls {
					if v >= ms {
						n++
					}
				}
				return float64(n) / float64(len(tc.itls))
			}
			distinct := slices.Clone(tc.itls)
			if tc.binned {
				distinct = distinct[:0]
				for i := 0; i+1 < len(tail.CCDF()); i += 2 {
					distinct = append(distinct, tail.CCDF()[i])
				}
			}
			slices.Sort(distinct)
			distinct = slices.Compact(distinct)
			checked, prevCol := 0, math.Inf(-1)
			for _, v := range distinct {
				px := x.at(v)
				col := math.Floor(px)
				// Values that share a pixel column with a smaller one are
				// drawn as one drop at the column's last value.
				first := col != prevCol
				prevCol = col
				if v <= 0 || !first {
					continue
				}
				got, want := plottedFraction(t, path, y, px), atOrAbove(v)
				if math.Abs(got-want) > 1e-9*want {
					t.Errorf("at %.3g ms the curve shows %.4g%% of ITLs at or above, counted %.4g%%", v, 100*got, 100*want)
				}
				// Between this value and the next, the curve shows the
				// next value's fraction: just right of this one, ITLs at
				// or above are those above it.
				if next, ok := nextAfter(distinct, v); ok && math.Floor(x.at(next)) > col+1 {
					mid := (px + x.at(next)) / 2
					if got, want := plottedFraction(t, path, y, mid), atOrAbove(next); math.Abs(got-want) > 1e-9*want {
						t.Errorf("between %.3g and %.3g ms the curve shows %.4g%%, counted %.4g%%", v, next, 100*got, 100*want)
					}
				}
				checked++
			}
			if checked < len(distinct)/4 || checked < 2 {
				t.Fatalf("checked only %d of %d distinct ITLs", checked, len(distinct))
			}
			// At the largest ITL the curve drops to the bottom and ends:
			// no ITL is above it.
			last := slices.Max(distinct)
			if n := len(path); path[n-2] != x.at(last) || path[n-1] != y.p0 {
				t.Errorf("the curve ends at (%.1f, %.1f), want the bottom at the largest ITL (%.1f, %.1f)", path[n-2], path[n-1], x.at(last), y.p0)
			}
			// The annotation's count and the curve agree wherever a
			// tolerance line may fall (in a pixel column of its own).
			cols := map[float64]bool{}
			for _, v := range distinct {
				cols[math.Floor(x.at(v))] = true
			}
			for _, ms := range []float64{distinct[0] * 1.5, 100, 146, 500, 700} {
				px := x.at(ms)
				if px < x.p0 || px > x.p1 || cols[math.Floor(px)] {
					continue
				}
				if got, want := plottedFraction(t, path, y, px), tail.Exceeding(ms); math.Abs(got-want) > 1e-9 {
					t.Errorf("at %v ms the curve shows %.4g%%, the annotation %.4g%%", ms, 100*got, 100*want)
				}
			}
		})
	}
}

// nextAfter returns the first value of the sorted v above x.
func nextAfter(v []float64, x float64) (float64, bool) {
	i, _ := slices.BinarySearch(v, x)
	for ; i < len(v); i++ {
		if v[i] > x {
			return v[i], true
		}
	}
	return 0, false
}
