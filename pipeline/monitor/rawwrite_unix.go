//go:build unix

package monitor

import (
	"net"
	"syscall"

	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
)

// rawWriter writes to a socket without waiting for it.
type rawWriter struct{ rc syscall.RawConn }

// newRawWriter returns a rawWriter for c, or nil where c has no file
// descriptor to write to.
func newRawWriter(c net.Conn) *rawWriter {
	if s, ok := c.(*rxstamp.Conn); ok { // stamps its reads; writes as it wraps
		c = s.Conn
	}
	sc, ok := c.(syscall.Conn)
	if !ok {
		return nil
	}
	rc, err := sc.SyscallConn()
	if err != nil {
		return nil
	}
	return &rawWriter{rc}
}

// tryWrite writes as much of p as the socket takes at once: 0 when it
// takes nothing now (it is full) or fails (the writer's blocking write
// then reports the failure).
func (w *rawWriter) tryWrite(p []byte) int {
	n := 0
	w.rc.Write(func(fd uintptr) bool {
		for {
			m, err := syscall.Write(int(fd), p)
			if err == syscall.EINTR {
				continue
			}
			if err == nil {
				n = m
			}
			return true
		}
	})
	return n
}
