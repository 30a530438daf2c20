//go:build linux

package rxstamp

import (
	"encoding/binary"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"unsafe"

	"golang.org/x/sys/unix"
)

const supported = true

// reader reads a socket with recvmsg and picks the SO_TIMESTAMPNS stamp
// out of the control messages. Its fields are the arguments and results of
// fn, which is made once so that a read allocates nothing; mu makes reads
// take turns, as they must for those fields.
type reader struct {
	mu    sync.Mutex
	raw   syscall.RawConn
	last  *atomic.Int64
	fn    func(fd uintptr) bool
	p     []byte
	msg   unix.Msghdr
	iov   unix.Iovec
	oob   [64]byte
	n     int
	stamp int64
	err   error
}

func (r *reader) init(c *net.TCPConn, last *atomic.Int64) error {
	raw, err := c.SyscallConn()
	if err != nil {
		return err
	}
	var serr error
	if err := raw.Control(func(fd uintptr) {
		serr = unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_TIMESTAMPNS, 1)
	}); err != nil {
		return err
	}
	if serr != nil {
		return os.NewSyscallError("setsockopt SO_TIMESTAMPNS", serr)
	}
	r.raw, r.last = raw, last
	r.msg.Iov = &r.iov
	r.msg.SetIovlen(1)
	r.fn = r.readBurst
	return nil
}

// readBurst reads what is queued on fd; false means nothing is (the
// poller then waits for more).
func (r *reader) readBurst(fd uintptr) bool { return r.recv(fd, len(r.p), 0) }

// recv calls recvmsg(2) for up to n bytes into r.p, by hand (unix.Recvmsg
// allocates on every call); false means nothing was queued.
func (r *reader) recv(fd uintptr, n int, flags int) bool {
	r.iov.Base = &r.p[0]
	r.iov.SetLen(n)
	r.msg.Control = &r.oob[0]
	r.msg.SetControllen(len(r.oob))
	for {
		got, _, errno := unix.Syscall(unix.SYS_RECVMSG, fd, uintptr(unsafe.Pointer(&r.msg)), uintptr(flags))
		r.n, r.err, r.stamp = int(got), nil, 0
		if errno == 0 {
			r.stamp = stampOf(r.oob[:r.msg.Controllen])
			return true
		}
		if errno == unix.EAGAIN {
			return false
		}
		if errno != unix.EINTR {
			r.n, r.err = 0, errno
			return true
		}
	}
}

func (r *reader) read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.p = p
	err := r.raw.Read(r.fn)
	r.p, r.iov.Base = nil, nil
	if err != nil { // closed, or a deadline passed
		return 0, err
	}
	if r.err != nil {
		return 0, os.NewSyscallError("recvmsg", r.err)
	}
	if r.n == 0 {
		return 0, io.EOF
	}
	r.last.Store(r.stamp)
	return r.n, nil
}

// stampOf returns the SCM_TIMESTAMPNS time in oob as Unix nanoseconds, or
// 0 where there is none.
func stampOf(oob []byte) int64 {
	for len(oob) > 0 {
		h, data, rest, err := unix.ParseOneSocketControlMessage(oob)
		if err != nil {
			return 0
		}
		if h.Level == unix.SOL_SOCKET && h.Type == unix.SCM_TIMESTAMPNS && len(data) >= 16 {
			sec := int64(binary.NativeEndian.Uint64(data[0:8]))
			nsec := int64(binary.NativeEndian.Uint64(data[8:16]))
			return sec*1e9 + nsec
		}
		oob = rest
	}
	return 0
}
