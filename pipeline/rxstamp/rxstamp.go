package rxstamp

import (
	"context"
	"crypto/tls"
	"errors"
	"io"
	"net"
	"sync/atomic"
	"time"
)

// Conn is a TCP connection whose reads carry the kernel's receive time of
// their newest bytes. Only the methods of net.Conn are exposed (not, say,
// WriteTo, which would read around Read).
type Conn struct {
	net.Conn
	r reader
	// last is the kernel's wall-clock time, in Unix nanoseconds, of the
	// newest bytes of the last read; 0 when that read came without one.
	last atomic.Int64
}

// Last returns the kernel's receive time of the newest bytes of the last
// read, on the monotonic clock, and whether that read had one.
func (c *Conn) Last() (time.Time, bool) {
	ns := c.last.Load()
	if ns == 0 {
		return time.Time{}, false
	}
	now := time.Now()
	// now carries both clocks; step back from it by how long ago, on the
	// wall clock, the kernel stamped the bytes
	ago := now.UnixNano() - ns
	if ago < 0 { // the wall clock was stepped back since
		ago = 0
	}
	return now.Add(-time.Duration(ago)), true
}

var (
	errNotTCP      = errors.New("rxstamp: not a TCP connection")
	errUnsupported = errors.New("rxstamp: this system gives no receive stamps")
)

// Stamp returns the kernel receive time of the newest bytes read last from
// c, or false where there is none: c is not (and does not wrap) a Conn,
// or its last read came without a stamp. It sees through *tls.Conn.
func Stamp(c net.Conn) (time.Time, bool) {
	if t, ok := c.(*tls.Conn); ok {
		c = t.NetConn()
	}
	if s, ok := c.(*Conn); ok {
		return s.Last()
	}
	return time.Time{}, false
}

// Wrap turns on kernel receive stamps for c and returns the stamping
// connection. Where that cannot be done (c is not a *net.TCPConn, or the
// system has no such stamps) it returns c itself and the reason.
func Wrap(c net.Conn) (net.Conn, error) {
	tc, ok := c.(*net.TCPConn)
	if !ok {
		return c, errNotTCP
	}
	s := &Conn{Conn: c}
	if err := s.r.init(tc, &s.last); err != nil {
		return c, err
	}
	return s, nil
}

// Read reads into p like the connection it wraps, and keeps the kernel
// receive time of the bytes it returns for Last.
func (c *Conn) Read(p []byte) (int, error) {
	n, err := c.r.read(p)
	if err != nil && err != io.EOF {
		err = &net.OpError{Op: "read", Net: "tcp", Source: c.LocalAddr(), Addr: c.RemoteAddr(), Err: err}
	}
	return n, err
}

// Listener wraps ln so that every TCP connection it accepts stamps its
// reads (see Wrap). A connection that cannot be stamped is returned as it
// is: an accept never fails for want of stamps.
func Listener(ln net.Listener) net.Listener { return listener{ln} }

type listener struct{ net.Listener }

func (l listener) Accept() (net.Conn, error) {
	c, err := l.Listener.Accept()
	if err != nil {
		return nil, err
	}
	s, _ := Wrap(c)
	return s, nil
}

// Warm waits, at most a second, until this system stamps received bytes,
// exchanging bytes with itself over loopback: the kernel turns its
// stamping on a moment after the first socket asks for it, so a process's
// first reads may come unstamped. It fails where no stamp comes.
func Warm(ctx context.Context) error {
	if !Supported() {
		return errUnsupported
	}
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ln := Listener(plain)
	defer ln.Close()
	client, err := (&net.Dialer{}).DialContext(ctx, "tcp", ln.Addr().String())
	if err != nil {
		return err
	}
	defer client.Close()
	srv, err := ln.Accept()
	if err != nil {
		return err
	}
	defer srv.Close()
	buf := make([]byte, 1)
	for range 100 {
		if _, err := client.Write([]byte("w")); err != nil {
			return err
		}
		if _, err := srv.Read(buf); err != nil {
			return err
		}
		if _, ok := Stamp(srv); ok {
			return nil
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(10 * time.Millisecond):
		}
	}
	return errors.New("rxstamp: no receive stamp after 100 reads")
}

// DialFunc is the shape of net.Dialer.DialContext.
type DialFunc func(ctx context.Context, network, addr string) (net.Conn, error)

// Dialer wraps dial so that every TCP connection it makes stamps its
// reads (see Wrap). A connection that cannot be stamped is returned as it
// is: a dial never fails for want of stamps.
func Dialer(dial DialFunc) DialFunc {
	return func(ctx context.Context, network, addr string) (net.Conn, error) {
		c, err := dial(ctx, network, addr)
		if err != nil {
			return nil, err
		}
		w, _ := Wrap(c)
		return w, nil
	}
}

// Supported reports whether this system stamps received bytes.
func Supported() bool { return supported }
