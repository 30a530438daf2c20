package pipeline

import "golang.org/x/sys/unix"

// poolRegion is an anonymous mapping grown by mremap: the kernel moves
// the pages, nothing is copied, and only the pages written count.
type poolRegion struct{ b []byte }

// grow returns the region grown to room bytes, holding used first when it
// is new; ok is false when the system refused.
func (r *poolRegion) grow(used []byte, room int) (b []byte, ok bool) {
	var err error
	if r.b == nil {
		b, err = unix.Mmap(-1, 0, room, unix.PROT_READ|unix.PROT_WRITE, unix.MAP_PRIVATE|unix.MAP_ANONYMOUS)
		if err == nil {
			copy(b, used)
		}
	} else {
		b, err = unix.Mremap(r.b, room, unix.MREMAP_MAYMOVE)
	}
	if err != nil {
		return nil, false
	}
	r.b = b
	return b, true
}

func (r *poolRegion) free() {
	if r.b != nil {
		unix.Munmap(r.b)
		r.b = nil
	}
}
