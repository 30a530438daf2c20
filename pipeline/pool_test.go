package pipeline

import (
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/memtest"
)

// TestPoolAsSample: a Pool sums up its values exactly as a Sample of the
// same values does, on the heap and past it.
func TestPoolAsSample(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(16, 2))
	for _, n := range []int{0, 1, 2, 1000, poolHeapBytes / 8, poolHeapBytes/8 + 1, 5*poolHeapBytes/8 + 17} {
		var p Pool
		var s Sample
		for range n {
			v := r.ExpFloat64() * 20
			p.Add(v)
			s.Add(v)
		}
		if p.Len() != n {
			t.Errorf("%d values: Len %d", n, p.Len())
		}
		if got, want := p.Summary(), s.Summary(); got != want {
			t.Errorf("%d values: pool %+v, sample %+v", n, got, want)
		}
		p.Release()
		if p.Len() != 0 || p.Summary() != (Summary{}) {
			t.Errorf("%d values: after Release, %d left", n, p.Len())
		}
	}
}

// TestDurationPoolAsSample: a DurationPool sums up its durations exactly
// as a Sample of them in milliseconds does, the long and negative ones
// among them.
func TestDurationPoolAsSample(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(16, 3))
	for _, n := range []int{0, 1, 2, 63, 64, 65, 1000, poolHeapBytes / 4, poolHeapBytes/4 + 1, 3*poolHeapBytes/4 + 5} {
		for _, spread := range []time.Duration{0, time.Nanosecond, time.Microsecond, 40 * time.Millisecond, 20 * time.Second} {
			var p DurationPool
			var s Sample
			for i := range n {
				d := time.Duration(r.Int64N(int64(spread) + 1))
				switch i % 997 {
				case 5:
					d = -d // a clock that went back
				case 7:
					d += 1 << 32
				}
				p.AddDuration(d)
				s.AddDuration(d)
			}
			if got, want := p.Summary(), s.Summary(); got != want {
				t.Errorf("%d durations up to %v: pool %+v, sample %+v", n, spread, got, want)
			}
			p.Release()
		}
	}
}

// TestSortFloats: the radix sort orders floats as slices.Sort does,
// infinities and subnormal numbers too, NaN and negative zero by
// slices.Sort itself.
func TestSortFloats(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(16, 4))
	for _, n := range []int{0, 1, 64, 65, 300, 100000} {
		for _, kind := range []string{"normal", "narrow", "mixed", "nan", "zeros"} {
			v := make([]float64, n)
			for i := range v {
				switch kind {
				case "normal":
					v[i] = r.NormFloat64() * 1e3
				case "narrow":
					v[i] = 0.02 + float64(r.IntN(100))*1e-9
				case "mixed":
					v[i] = []float64{math.Inf(1), math.Inf(-1), 5e-324, -5e-324, 0, 1, -1, math.MaxFloat64}[r.IntN(8)] * float64(1+r.IntN(2))
				case "nan":
					v[i] = []float64{math.NaN(), 1, -2, 0}[r.IntN(4)]
				case "zeros":
					v[i] = []float64{math.Copysign(0, -1), 0, 3}[r.IntN(3)]
				}
			}
			want := slices.Clone(v)
			slices.Sort(want)
			sortFloats(v)
			for i := range v {
				if math.Float64bits(v[i]) != math.Float64bits(want[i]) && !(v[i] == 0 && want[i] == 0) && !(v[i] != v[i] && want[i] != want[i]) {
					t.Fatalf("%s, %d values: at %d %v, slices.Sort %v", kind, n, i, v[i], want[i])
				}
			}
		}
	}
}

// TestPoolHeapBounded: past its first poolHeapBytes/8 values a Pool takes
// no more of the Go heap (on Linux, where its values move to a mapping):
// a million values or four cost the heap the same.
func TestPoolHeapBounded(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("the values stay on the heap here")
	}
	heap := func(n int) uint64 {
		var p Pool
		defer p.Release()
		return memtest.Allocated(func() {
			for i := range n {
				p.Add(float64(i))
			}
		})
	}
	small, large := heap(1<<20), heap(4<<20)
	// the heap part: poolHeapBytes/8 values grown by append, ~2.5 MB in
	// all; the three million values more, none
	if bound := uint64(8 * poolHeapBytes / 8 * 8); small > bound || large > small+64<<10 {
		t.Errorf("heap allocated for 1 M values %d B, for 4 M %d B; want under %d B, and no more for 4 M", small, large, bound)
	}
}
