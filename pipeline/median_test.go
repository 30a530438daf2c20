package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"
)

// referenceMedianITL is the median ITL as medianITL defines it, by a sort
// of its own: the ITLs of the first n streamed chunks but the one before
// chunk skip.
func referenceMedianITL(at []time.Duration, n, skip int) time.Duration {
	var v []time.Duration
	for k := 1; k < n; k++ {
		if k != skip {
			v = append(v, at[k]-at[k-1])
		}
	}
	if len(v) == 0 {
		return 0
	}
	slices.Sort(v)
	m := len(v)
	if m%2 == 1 {
		return v[m/2]
	}
	return (v[m/2-1] + v[m/2]) / 2
}

// TestMedianITL: medianITL gives the reference's median for every turn,
// as its chunks come (n growing, any skip), turn after turn on one
// Playout, whatever the ties.
func TestMedianITL(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(16, 7))
	p, err := NewPlayout(DefaultConfig(), "")
	if err != nil {
		t.Fatal(err)
	}
	for turn := range 300 {
		p.Reset("t")
		size := 1 + r.IntN(400)
		spread := []int64{1, 3, 1000, 1e9}[turn%4] // ties, few values, many
		at := time.Duration(r.Int64N(1e8))
		for k := range size {
			if k > 0 {
				at += time.Duration(r.Int64N(spread) + 1)
			}
			p.at = append(p.at, at)
			// the calls classify makes: n grows, skip anywhere
			for range 1 + r.IntN(3) {
				n := len(p.at)
				skip := r.IntN(n + 2)
				if got, want := p.medianITL(n, skip), referenceMedianITL(p.at, n, skip); got != want {
					t.Fatalf("turn %d: medianITL(%d, %d) = %v, want %v", turn, n, skip, got, want)
				}
			}
		}
		// and again at the end, as End classifies every underrun
		for skip := range len(p.at) + 1 {
			n := len(p.at)
			if got, want := p.medianITL(n, skip), referenceMedianITL(p.at, n, skip); got != want {
				t.Fatalf("turn %d at End: medianITL(%d, %d) = %v, want %v", turn, n, skip, got, want)
			}
		}
	}
}
