package pipeline

import (
	"runtime"
	"time"
)

// Pool is a Sample that may grow as large as a benchmark file's every
// ITL. Past a small size its values live outside the Go heap where the
// system allows (an anonymous mapping on Linux, grown in place): growing
// copies nothing and never holds two copies, and the garbage collector,
// which lets the heap grow to twice what it holds, neither counts nor
// scans them. Its memory is then 8 bytes a value plus at most one page.
// The zero Pool is empty and ready; Release gives its memory back.
type Pool struct {
	s   Sample
	mem *poolMemory // nil while the values are on the heap
}

// poolHeapValues is how many values a Pool keeps on the Go heap before
// it moves them out: a small pool costs no mapping.
const poolHeapValues = 1 << 16

// Add appends one value.
func (p *Pool) Add(v float64) {
	if len(p.s.values) == cap(p.s.values) && len(p.s.values) >= poolHeapValues {
		p.grow()
	}
	p.s.Add(v)
}

// AddDuration appends a duration as milliseconds.
func (p *Pool) AddDuration(d time.Duration) { p.Add(Millis(d)) }

// Len returns the number of values.
func (p *Pool) Len() int { return p.s.Len() }

// Summary computes the summary, as Sample.Summary does.
func (p *Pool) Summary() Summary { return p.s.Summary() }

// Sample returns the pool as a Sample, valid until Release.
func (p *Pool) Sample() *Sample { return &p.s }

// Release empties the pool and gives its memory back.
func (p *Pool) Release() {
	p.s = Sample{}
	if p.mem != nil {
		p.mem.free()
		p.mem = nil
	}
}

// grow makes room for more values outside the heap, doubling the room.
func (p *Pool) grow() {
	if p.mem == nil {
		m := newPoolMemory()
		if m == nil {
			return // the system has none: the heap it is
		}
		p.mem = m
		// a pool dropped without Release gives its mapping back when
		// the collector finds it unreachable
		runtime.AddCleanup(p.mem, func(r *poolRegion) { r.free() }, m.r)
	}
	values, ok := p.mem.grow(p.s.values, 2*cap(p.s.values))
	if ok {
		p.s.values = values
	}
}
