//go:build !linux

package rxstamp

import (
	"errors"
	"net"
	"sync/atomic"
)

const supported = false

var errNotTCP = errors.New("rxstamp: not a TCP connection")

// reader is never used here: Wrap fails in init.
type reader struct{}

func (r *reader) init(*net.TCPConn, *atomic.Int64) error {
	return errors.New("rxstamp: this system gives no receive stamps")
}

func (r *reader) read([]byte) (int, error) { panic("rxstamp: read without init") }
