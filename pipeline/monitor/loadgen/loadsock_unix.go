//go:build unix

package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"sync"
	"sync/atomic"
	"syscall"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

// loadSocket is a load session's connection to a Unix socket, kept out of
// Go's network poller: a non-blocking socket written and read by plain
// system calls. Registered with the poller, every message the target reads
// wakes the load's poller thread (a Unix socket signals its writer that
// space came free after every read of the other end; TCP only when a
// writer waited for space), and at 5,000 sessions taking those 100,000
// wake-ups a second cost the load generator a quarter of its CPU. A load
// session never waits to write (its socket's buffer holds seconds of its
// messages) and reads at most every loadReadEvery anyway, so it loses
// nothing by polling: a read that finds nothing sleeps until the next.
type loadSocket struct {
	mu   sync.RWMutex // held to close; the system calls hold it shared
	fd   int          // -1 once closed
	addr *net.UnixAddr
	// paced: the handshake is done, and reads come at most every
	// loadReadEvery (before it, a read that finds nothing retries within a
	// millisecond)
	paced                       atomic.Bool
	last                        time.Time // the last read that returned data
	readDeadline, writeDeadline atomic.Int64
}

// dialLoadSocket connects to the Unix socket at path, waiting a little
// while its listener's backlog is full.
func dialLoadSocket(ctx context.Context, path string) (*loadSocket, error) {
	for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
		syscall.ForkLock.RLock() // no child inherits it before it is marked
		fd, err := syscall.Socket(syscall.AF_UNIX, syscall.SOCK_STREAM, 0)
		if err == nil {
			syscall.CloseOnExec(fd)
		}
		syscall.ForkLock.RUnlock()
		if err != nil {
			return nil, &net.OpError{Op: "dial", Net: "unix", Err: os.NewSyscallError("socket", err)}
		}
		if err = syscall.Connect(fd, &syscall.SockaddrUnix{Name: path}); err == nil {
			if err = syscall.SetNonblock(fd, true); err == nil {
				return &loadSocket{fd: fd, addr: &net.UnixAddr{Name: path, Net: "unix"}}, nil
			}
		}
		syscall.Close(fd)
		addr := &net.UnixAddr{Name: path, Net: "unix"}
		if !errors.Is(err, syscall.EAGAIN) {
			return nil, &net.OpError{Op: "dial", Net: "unix", Addr: addr, Err: os.NewSyscallError("connect", err)}
		}
		select {
		case <-ctx.Done():
			return nil, &net.OpError{Op: "dial", Net: "unix", Addr: addr, Err: ctx.Err()}
		case <-time.After(wait):
		}
	}
}

// call runs one system call on the socket, unless it is closed.
func (s *loadSocket) call(f func(fd int) (int, error)) (int, error) {
	s.mu.RLock()
	defer s.mu.RUnlock()
	if s.fd < 0 {
		return 0, net.ErrClosed
	}
	for {
		n, err := f(s.fd)
		if err != syscall.EINTR {
			return n, err
		}
	}
}

// pollWait sleeps for d, or until deadline (unix nanoseconds, 0 none), and
// says whether the deadline has passed.
func pollWait(d time.Duration, deadline int64) bool {
	now := time.Now().UnixNano()
	if deadline != 0 && now >= deadline {
		return true
	}
	if deadline != 0 {
		d = min(d, time.Duration(deadline-now))
	}
	time.Sleep(d)
	return false
}

func (s *loadSocket) Read(p []byte) (int, error) {
	if len(p) == 0 {
		return 0, nil
	}
	if s.paced.Load() && !s.last.IsZero() {
		if d := loadReadEvery - time.Since(s.last); d > 0 && pollWait(d, s.readDeadline.Load()) {
			return 0, os.ErrDeadlineExceeded
		}
	}
	for {
		n, err := s.call(func(fd int) (int, error) { return syscall.Read(fd, p) })
		switch {
		case err == nil && n > 0:
			s.last = time.Now()
			return n, nil
		case err == nil:
			return 0, io.EOF
		case err != syscall.EAGAIN:
			return 0, s.opError("read", err)
		}
		poll := time.Millisecond
		if s.paced.Load() {
			poll = loadReadEvery
		}
		if pollWait(poll, s.readDeadline.Load()) {
			return 0, os.ErrDeadlineExceeded
		}
	}
}

func (s *loadSocket) Write(p []byte) (int, error) {
	written := 0
	for written < len(p) {
		n, err := s.call(func(fd int) (int, error) { return syscall.Write(fd, p[written:]) })
		if n > 0 {
			written += n
		}
		switch {
		case err == nil:
		case err != syscall.EAGAIN:
			return written, s.opError("write", err)
		case pollWait(time.Millisecond, s.writeDeadline.Load()):
			return written, os.ErrDeadlineExceeded
		}
	}
	return written, nil
}

func (s *loadSocket) opError(op string, err error) error {
	if err == net.ErrClosed {
		return &net.OpError{Op: op, Net: "unix", Addr: s.addr, Err: err}
	}
	return &net.OpError{Op: op, Net: "unix", Addr: s.addr, Err: os.NewSyscallError(op, err)}
}

func (s *loadSocket) Close() error {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.fd < 0 {
		return net.ErrClosed
	}
	err := syscall.Close(s.fd)
	s.fd = -1
	return err
}

func (s *loadSocket) LocalAddr() net.Addr  { return &net.UnixAddr{Net: "unix"} }
func (s *loadSocket) RemoteAddr() net.Addr { return s.addr }

func (s *loadSocket) SetDeadline(t time.Time) error {
	s.SetReadDeadline(t)
	return s.SetWriteDeadline(t)
}

func (s *loadSocket) SetReadDeadline(t time.Time) error {
	s.readDeadline.Store(unixNanos(t))
	return nil
}

func (s *loadSocket) SetWriteDeadline(t time.Time) error {
	s.writeDeadline.Store(unixNanos(t))
	return nil
}

// unixNanos is a deadline in unix nanoseconds, 0 for none.
func unixNanos(t time.Time) int64 {
	if t.IsZero() {
		return 0
	}
	return t.UnixNano()
}

// startPacing marks the handshake done: reads come at most every
// loadReadEvery from now on.
func (s *loadSocket) startPacing() { s.paced.Store(true) }

// loadDialer is how a load session connects to base: a loadSocket for a
// Unix socket, a paced connection through the poller otherwise.
func loadDialer(base string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	if path, ok := monitor.SocketPath(base), monitor.IsUnix(base); ok {
		return func(ctx context.Context, _, _ string) (net.Conn, error) {
			return dialLoadSocket(ctx, path)
		}
	}
	return pacedDialer(base)
}

// dialFloor connects WriteFloor to the Sink at addr as a load session
// would: a loadSocket for unix:PATH, through the poller over TCP.
func dialFloor(ctx context.Context, addr string) (net.Conn, error) {
	if path, ok := monitor.SocketPath(addr), monitor.IsUnix(addr); ok {
		return dialLoadSocket(ctx, path)
	}
	var d net.Dialer
	return d.DialContext(ctx, "tcp", addr)
}
