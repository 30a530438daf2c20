//go:build !linux

package pipeline

// poolMemory keeps a Pool's values on the Go heap where no mapping that
// grows in place is at hand.
type poolMemory struct{ r *poolRegion }

type poolRegion struct{}

func newPoolMemory() *poolMemory { return nil }

func (m *poolMemory) grow(values []float64, room int) ([]float64, bool) { return values, false }

func (m *poolMemory) free() {}

func (r *poolRegion) free() {}
