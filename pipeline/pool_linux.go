package pipeline

import (
	"unsafe"

	"golang.org/x/sys/unix"
)

// poolMemory is a Pool's anonymous mapping, grown by mremap: the kernel
// moves the pages, nothing is copied, and only the pages written count.
type poolMemory struct{ r *poolRegion }

// poolRegion is the mapping itself, apart so that a cleanup can free it.
type poolRegion struct{ b []byte }

func newPoolMemory() *poolMemory { return &poolMemory{r: &poolRegion{}} }

// grow returns values moved to (or kept in) a mapping of room values;
// ok is false when the system refused, values then as they were.
func (m *poolMemory) grow(values []float64, room int) ([]float64, bool) {
	var b []byte
	var err error
	if m.r.b == nil {
		b, err = unix.Mmap(-1, 0, room*8, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err == nil {
			copy(unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), room), values)
		}
	} else {
		b, err = unix.Mremap(m.r.b, room*8, unix.MREMAP_MAYMOVE)
	}
	if err != nil {
		return values, false
	}
	m.r.b = b
	return unsafe.Slice((*float64)(unsafe.Pointer(&b[0])), room)[:len(values)], true
}

func (m *poolMemory) free() { m.r.free() }

func (r *poolRegion) free() {
	if r.b != nil {
		unix.Munmap(r.b)
		r.b = nil
	}
}
