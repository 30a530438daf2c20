package monitor

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"os"
	"strings"
	"sync"
	"syscall"
	"time"
)

// UnixPrefix marks a monitor address that is a Unix socket: unix:PATH,
// for --listen as for a client's --to. Over the socket the monitor speaks
// the same HTTP and websockets as over TCP, addressed to host localhost.
const UnixPrefix = "unix:"

// socketPath returns the path of a unix:PATH address.
func socketPath(addr string) (string, bool) {
	p, ok := strings.CutPrefix(addr, UnixPrefix)
	if !ok {
		return "", false
	}
	return strings.TrimPrefix(p, "//"), true // unix:///run/x.sock too
}

// IsUnix reports whether addr is a Unix socket address (unix:PATH).
func IsUnix(addr string) bool {
	_, ok := socketPath(addr)
	return ok
}

// Listen listens on addr: host:port for TCP, or unix:PATH for a Unix
// socket, which must not exist yet (Listen never replaces a file; clear a
// stale socket first) and is removed when the listener closes.
func Listen(addr string) (net.Listener, error) {
	path, ok := socketPath(addr)
	if !ok {
		return net.Listen("tcp", addr)
	}
	if path == "" {
		return nil, fmt.Errorf("%q: want unix:PATH, the socket's path", addr)
	}
	if _, err := os.Lstat(path); err == nil {
		return nil, fmt.Errorf("%s exists: not replacing it", path)
	}
	return net.Listen("unix", path)
}

// SocketPath returns the path of a unix:PATH address ("" for any other).
func SocketPath(addr string) string {
	p, _ := socketPath(addr)
	return p
}

// BaseURL is the address a client gives for a monitor listening on ln:
// http://host:port, or unix:PATH.
func BaseURL(ln net.Listener) string {
	if a, ok := ln.Addr().(*net.UnixAddr); ok {
		return UnixPrefix + a.Name
	}
	return "http://" + ln.Addr().String()
}

// netDial dials a monitor's address: its Unix socket for unix:PATH, the
// host in the URL otherwise.
func netDial(base string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	var d net.Dialer
	if path, ok := socketPath(base); ok {
		return func(ctx context.Context, _, _ string) (net.Conn, error) {
			// a Unix socket whose backlog is full refuses at once (EAGAIN)
			// where TCP would wait: wait a little, as TCP would
			for wait := time.Millisecond; ; wait = min(2*wait, 100*time.Millisecond) {
				c, err := d.DialContext(ctx, "unix", path)
				if !errors.Is(err, syscall.EAGAIN) {
					return c, err
				}
				select {
				case <-ctx.Done():
					return nil, err
				case <-time.After(wait):
				}
			}
		}
	}
	return d.DialContext
}

// httpClient is the HTTP client for a monitor's address.
func httpClient(base string) *http.Client {
	if !IsUnix(base) {
		return http.DefaultClient
	}
	return &http.Client{Transport: &http.Transport{DialContext: netDial(base)}, Timeout: 30 * time.Second}
}

// Merge is one listener that accepts on every one of lns (a monitor on a
// Unix socket and on loopback TCP at once); its address is the first's,
// and closing it closes them all. A listener that fails to accept ends
// the merged one (and closes the others) with its error.
func Merge(lns ...net.Listener) net.Listener {
	if len(lns) == 1 {
		return lns[0]
	}
	m := &merged{lns: lns, conns: make(chan net.Conn), done: make(chan struct{})}
	for _, ln := range lns {
		go m.accept(ln)
	}
	return m
}

type merged struct {
	lns   []net.Listener
	conns chan net.Conn
	done  chan struct{}
	once  sync.Once
	mu    sync.Mutex
	err   error
}

func (m *merged) accept(ln net.Listener) {
	for {
		c, err := ln.Accept()
		if err != nil {
			m.fail(err)
			return
		}
		select {
		case m.conns <- c:
		case <-m.done:
			c.Close()
			return
		}
	}
}

// fail ends the merged listener with err (the first error wins).
func (m *merged) fail(err error) {
	m.mu.Lock()
	if m.err == nil {
		m.err = err
	}
	m.mu.Unlock()
	m.Close()
}

func (m *merged) Accept() (net.Conn, error) {
	select {
	case c := <-m.conns:
		return c, nil
	case <-m.done:
		m.mu.Lock()
		defer m.mu.Unlock()
		if m.err == nil {
			return nil, net.ErrClosed
		}
		return nil, m.err
	}
}

func (m *merged) Close() error {
	var err error
	m.once.Do(func() {
		close(m.done)
		for _, ln := range m.lns {
			if cerr := ln.Close(); err == nil {
				err = cerr
			}
		}
	})
	return err
}

func (m *merged) Addr() net.Addr { return m.lns[0].Addr() }
