package testkit

import (
	"errors"
	"sync"
)

// ErrDeviceFull is the error a FailWriter's writes fail with once it is
// full, as a disk out of space fails them.
var ErrDeviceFull = errors.New("no space left on device (testkit.FailWriter)")

// FailWriter keeps the first N bytes written to it, then fails: the write
// that would pass N keeps what fits and returns ErrDeviceFull, as does
// every write after it. It counts the writes that failed. It is safe for
// concurrent use.
type FailWriter struct {
	N      int
	mu     sync.Mutex
	kept   []byte
	failed int
}

// Write keeps p, or what of it fits in N.
func (w *FailWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	room := max(w.N-len(w.kept), 0)
	if len(p) <= room {
		w.kept = append(w.kept, p...)
		return len(p), nil
	}
	w.kept = append(w.kept, p[:room]...)
	w.failed++
	return room, ErrDeviceFull
}

// Bytes returns a copy of what was kept.
func (w *FailWriter) Bytes() []byte {
	w.mu.Lock()
	defer w.mu.Unlock()
	return append([]byte(nil), w.kept...)
}

// Failed returns how many writes failed.
func (w *FailWriter) Failed() int {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.failed
}
