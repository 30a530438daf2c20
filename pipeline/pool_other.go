//go:build !linux

package pipeline

// poolRegion has no mapping to give where mremap is not at hand: the
// values stay on the Go heap.
type poolRegion struct{}

func (r *poolRegion) grow(used []byte, room int) ([]byte, bool) { return nil, false }

func (r *poolRegion) free() {}
