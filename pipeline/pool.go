package pipeline

import (
	"math"
	"runtime"
	"slices"
	"time"
	"unsafe"
)

// Pool is a Sample that may grow as large as a benchmark file's every
// ITL. Past a small size its values live outside the Go heap where the
// system allows (an anonymous mapping on Linux, grown in place): growing
// copies nothing and never holds two copies, and the garbage collector,
// which lets the heap grow to twice what it holds, neither counts nor
// scans them. Its memory is then 8 bytes a value plus at most one page.
// Its Summary is Sample.Summary's, to the bit, sorted by radix.
// The zero Pool is empty and ready; Release gives its memory back.
type Pool struct {
	s   Sample
	mem poolMemory
}

// poolHeapBytes is how much a pool keeps on the Go heap before it moves
// its values out: a small pool costs no mapping.
const poolHeapBytes = 512 << 10

// Add appends one value.
func (p *Pool) Add(v float64) {
	if len(p.s.values) == cap(p.s.values) && len(p.s.values)*8 >= poolHeapBytes {
		p.s.values = growOutside(&p.mem, p.s.values)
	}
	p.s.Add(v)
}

// AddDuration appends a duration as milliseconds.
func (p *Pool) AddDuration(d time.Duration) { p.Add(Millis(d)) }

// Len returns the number of values.
func (p *Pool) Len() int { return p.s.Len() }

// Summary computes the summary, as Sample.Summary does.
func (p *Pool) Summary() Summary { return p.Sample().Summary() }

// Sample returns the pool as a Sample, its values sorted, valid until
// Release.
func (p *Pool) Sample() *Sample {
	if !p.s.sorted {
		sortFloats(p.s.values)
		p.s.sorted = true
	}
	return &p.s
}

// Release empties the pool and gives its memory back.
func (p *Pool) Release() {
	p.s = Sample{}
	p.mem.free()
}

// DurationPool collects durations for a Summary in milliseconds, equal to
// the bit to that of a Sample given each as AddDuration: the durations are
// kept as whole nanoseconds, in 4 bytes each when they are shorter than
// 4.29 s (the others, rare, in 8 bytes on the heap), outside the Go heap
// as a Pool's values are. The zero DurationPool is empty and ready.
type DurationPool struct {
	short []uint32 // durations of 0 to 2^32-1 ns
	other []int64  // the rest
	mem   poolMemory
}

// AddDuration appends one duration.
func (p *DurationPool) AddDuration(d time.Duration) {
	if d < 0 || d > math.MaxUint32 {
		p.other = append(p.other, int64(d))
		return
	}
	if len(p.short) == cap(p.short) && len(p.short)*4 >= poolHeapBytes {
		p.short = growOutside(&p.mem, p.short)
	}
	p.short = append(p.short, uint32(d))
}

// Len returns the number of durations.
func (p *DurationPool) Len() int { return len(p.short) + len(p.other) }

// Summary is the summary of the durations in milliseconds.
func (p *DurationPool) Summary() Summary { return mergedSummary(p.source()) }

// source returns the durations sorted, as milliseconds.
func (p *DurationPool) source() sortedSource {
	radixSort(p.short, 24)
	slices.Sort(p.other)
	neg, _ := slices.BinarySearch(p.other, 0)
	// ascending: the negative ones, the short ones, the long ones
	return sortedSource{n: p.Len(), at: func(k int) float64 {
		switch {
		case k < neg:
			return Millis(time.Duration(p.other[k]))
		case k < neg+len(p.short):
			return Millis(time.Duration(p.short[k-neg]))
		}
		return Millis(time.Duration(p.other[k-len(p.short)]))
	}}
}

// sortedSource is n values in ascending order, value k at(k).
type sortedSource struct {
	n  int
	at func(k int) float64
}

// mergedSummary is the Summary of the values of every source, to the bit
// that of one Sample holding them all: Sample.Summary sums them in
// ascending order, and so does this, merging the sources.
func mergedSummary(sources ...sortedSource) Summary {
	return summaryWithout(nil, sources...)
}

// summaryWithout is mergedSummary of the sources with one value left out
// for each of without (ascending; each among the sources' values).
func summaryWithout(without []float64, sources ...sortedSource) Summary {
	sources = slices.DeleteFunc(slices.Clone(sources), func(s sortedSource) bool { return s.n == 0 })
	n := -len(without)
	for _, s := range sources {
		n += s.n
	}
	if n <= 0 {
		return Summary{}
	}
	// the ranks the percentiles read (Percentile), and the extremes
	qs := [...]float64{50, 90, 95, 99, 99.9}
	var ranks []int
	for _, q := range qs {
		h := float64(n-1) * q / 100
		lo := max(0, min(int(math.Floor(h)), n-1))
		ranks = append(ranks, lo, min(lo+1, n-1))
	}
	ranks = append(ranks, 0, n-1)
	slices.Sort(ranks)
	ranks = slices.Compact(ranks)
	value := make(map[int]float64, len(ranks))
	// each walk visits the values in ascending order
	walk := func(visit func(k int, x float64)) {
		if len(sources) == 1 && len(without) == 0 {
			s := sources[0]
			for k := range s.n {
				visit(k, s.at(k))
			}
			return
		}
		next := make([]int, len(sources))
		w := 0
		for k := 0; k < n; {
			best := -1
			var bx float64
			for i, s := range sources {
				if next[i] < s.n {
					if x := s.at(next[i]); best < 0 || x < bx {
						best, bx = i, x
					}
				}
			}
			next[best]++
			if w < len(without) && bx == without[w] {
				w++ // left out
				continue
			}
			visit(k, bx)
			k++
		}
	}
	var sum float64
	r := 0
	walk(func(k int, x float64) {
		sum += x
		if r < len(ranks) && ranks[r] == k {
			value[k] = x
			r++
		}
	})
	mean := sum / float64(n)
	var ss float64
	walk(func(_ int, x float64) { ss += (x - mean) * (x - mean) })
	pct := func(q float64) float64 {
		return percentileOf(n, q, func(k int) float64 { return value[k] })
	}
	return Summary{
		Count: n, Mean: mean, Median: pct(50), Std: math.Sqrt(ss / float64(n)),
		Min: value[0], Max: value[n-1],
		P50: pct(50), P90: pct(90), P95: pct(95), P99: pct(99), P999: pct(99.9),
	}
}

// SharedITLs are ITLs a report does not pool itself, for it pools them
// elsewhere already (a benchmark tool's times at the file's precision,
// trace.Parity): a report's ITLs are those of Pool, value v being the ITL
// Duration(v) (which must not decrease where v grows), with those of Extra
// and without those of Missing, where the two differ.
type SharedITLs struct {
	Pool           *Pool
	Duration       func(v float64) time.Duration
	Extra, Missing []time.Duration
}

func (s *SharedITLs) sources() (sources []sortedSource, without []float64) {
	v := s.Pool.Sample().Values()
	slices.Sort(s.Extra)
	slices.Sort(s.Missing)
	without = make([]float64, len(s.Missing))
	for i, d := range s.Missing {
		without[i] = Millis(d)
	}
	return []sortedSource{
		{n: len(v), at: func(k int) float64 { return Millis(s.Duration(v[k])) }},
		{n: len(s.Extra), at: func(k int) float64 { return Millis(s.Extra[k]) }},
	}, without
}

// Release empties the pool and gives its memory back.
func (p *DurationPool) Release() {
	p.short, p.other = nil, nil
	p.mem.free()
}

// growOutside returns values with room for as many again, moved outside
// the heap into mem (or kept where they are, grown by append, when the
// system has no mapping to give).
func growOutside[T uint32 | float64](mem *poolMemory, values []T) []T {
	size := int(unsafe.Sizeof(values[0]))
	room := 2 * cap(values)
	b, ok := mem.grow(unsafe.Slice((*byte)(unsafe.Pointer(unsafe.SliceData(values))), len(values)*size), room*size)
	if !ok {
		return slices.Grow(values, room-len(values))
	}
	return unsafe.Slice((*T)(unsafe.Pointer(unsafe.SliceData(b))), room)[:len(values)]
}

// poolMemory is where a pool's values live once they left the heap: a
// region the pool owns, given back by free, or by a cleanup once the
// pool is dropped without Release.
type poolMemory struct{ r *poolRegion }

// grow moves the bytes used into a region of room bytes (the first time)
// or grows the region to room bytes, keeping its contents.
func (m *poolMemory) grow(used []byte, room int) ([]byte, bool) {
	if m.r == nil {
		r := &poolRegion{}
		b, ok := r.grow(used, room)
		if !ok {
			return nil, false
		}
		m.r = r
		// the cleanup holds the region, not the pool
		runtime.AddCleanup(m, func(r *poolRegion) { r.free() }, r)
		return b, true
	}
	return m.r.grow(used, room)
}

func (m *poolMemory) free() {
	if m.r != nil {
		m.r.free()
	}
}

// sortFloats sorts values ascending as slices.Sort does, by radix on
// their bits ordered as the numbers are (negative numbers flipped), or
// with slices.Sort when a NaN or a negative zero, which the bits order
// apart from slices.Sort, is among them.
func sortFloats(values []float64) {
	keys := unsafe.Slice((*uint64)(unsafe.Pointer(unsafe.SliceData(values))), len(values))
	odd := false
	for i, v := range values {
		b := math.Float64bits(v)
		if v != v || b == 1<<63 {
			odd = true
		}
		if b>>63 != 0 {
			keys[i] = ^b
		} else {
			keys[i] = b | 1<<63
		}
	}
	if !odd {
		radixSort(keys, 56)
	}
	for i, k := range keys {
		if k>>63 != 0 {
			keys[i] = k &^ (1 << 63)
		} else {
			keys[i] = ^k
		}
	}
	if odd {
		slices.Sort(values)
	}
}

// radixSort sorts keys in place by their bytes from the one at shift down
// (American flag sort: each level counts its byte, moves every key to its
// bucket by swaps, and sorts the buckets by the next byte); a level where
// every key has the same byte only counts.
func radixSort[T uint32 | uint64](keys []T, shift uint) {
	for {
		if len(keys) <= 64 {
			slices.Sort(keys)
			return
		}
		var count [256]int
		for _, k := range keys {
			count[byte(k>>shift)]++
		}
		if count[byte(keys[0]>>shift)] == len(keys) {
			// one bucket: on to the next byte
			if shift == 0 {
				return
			}
			shift -= 8
			continue
		}
		var next, end [256]int
		sum := 0
		for b, c := range count {
			next[b] = sum
			sum += c
			end[b] = sum
		}
		for b := range 256 {
			for next[b] < end[b] {
				k := keys[next[b]]
				d := byte(k >> shift)
				for int(d) != b {
					// k goes to bucket d; take the one there instead
					keys[next[d]], k = k, keys[next[d]]
					next[d]++
					d = byte(k >> shift)
				}
				keys[next[b]] = k
				next[b]++
			}
		}
		if shift == 0 {
			return
		}
		from := 0
		for _, c := range count {
			if c > 1 {
				radixSort(keys[from:from+c], shift-8)
			}
			from += c
		}
		return
	}
}
