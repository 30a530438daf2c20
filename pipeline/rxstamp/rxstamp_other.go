//go:build !linux

package rxstamp

import (
	"net"
	"sync/atomic"
)

const supported = false

// reader is never used here: Wrap fails in init.
type reader struct{}

func (r *reader) init(*net.TCPConn, *atomic.Int64) error {
	return errUnsupported
}

func (r *reader) read([]byte) (int, error) { panic("rxstamp: read without init") }
