package pipeline

import (
	"math/rand/v2"
	"runtime"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline/memtest"
)

// TestPoolAsSample: a Pool sums up its values exactly as a Sample of the
// same values does, on the heap and past it.
func TestPoolAsSample(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(16, 2))
	for _, n := range []int{0, 1, 2, 1000, poolHeapValues, poolHeapValues + 1, 5*poolHeapValues + 17} {
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

// TestPoolHeapBounded: past its first poolHeapValues values a Pool takes
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
	// the heap part: poolHeapValues values grown by append, ~2.5 MB in
	// all; the three million values more, none
	if bound := uint64(8 * poolHeapValues * 8); small > bound || large > small+64<<10 {
		t.Errorf("heap allocated for 1 M values %d B, for 4 M %d B; want under %d B, and no more for 4 M", small, large, bound)
	}
}
