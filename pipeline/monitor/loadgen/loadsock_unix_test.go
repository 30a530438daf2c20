//go:build unix

package loadgen

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"path/filepath"
	"testing"
	"time"
)

// TestLoadSocket: a load session's socket outside the poller writes and
// reads as a connection does, honours deadlines, paces its reads once told,
// and reports the peer's close and its own.
func TestLoadSocket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "s.sock")
	ln, err := net.Listen("unix", path)
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err == nil {
			accepted <- c
		}
	}()
	s, err := dialLoadSocket(context.Background(), path)
	if err != nil {
		t.Fatal(err)
	}
	peer := <-accepted
	defer peer.Close()

	if _, err := s.Write([]byte("hello")); err != nil {
		t.Fatal(err)
	}
	buf := make([]byte, 64)
	if n, err := io.ReadFull(peer, buf[:5]); err != nil || string(buf[:n]) != "hello" {
		t.Fatalf("peer read %q, %v", buf[:n], err)
	}

	// nothing to read: the read waits, and gives up at its deadline
	s.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	if _, err := s.Read(buf); !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Fatalf("read with nothing there: %v, want the deadline", err)
	}
	s.SetReadDeadline(time.Time{})

	// unpaced, a read takes what comes as it comes
	peer.Write([]byte("one"))
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "one" {
		t.Fatalf("read %q, %v", buf[:n], err)
	}
	// paced, the next read waits out loadReadEvery since the last
	s.startPacing()
	t0 := time.Now()
	peer.Write([]byte("two"))
	if n, err := s.Read(buf); err != nil || string(buf[:n]) != "two" {
		t.Fatalf("paced read %q, %v", buf[:n], err)
	}
	if waited := time.Since(t0); waited < loadReadEvery/2 {
		t.Errorf("a paced read came %v after the one before, want about %v", waited, loadReadEvery)
	}

	// the peer closes: end of file
	peer.Close()
	if _, err := s.Read(buf); err != io.EOF {
		t.Errorf("read after the peer closed: %v, want EOF", err)
	}
	if err := s.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := s.Write([]byte("x")); !errors.Is(err, net.ErrClosed) {
		t.Errorf("write after close: %v, want net.ErrClosed", err)
	}
	if err := s.Close(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("second close: %v, want net.ErrClosed", err)
	}
}

// TestLoadSocketRefused: dialing a path nobody listens on fails at once
// with the path in the error.
func TestLoadSocketRefused(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "none.sock")
	_, err := dialLoadSocket(context.Background(), path)
	if err == nil || !errors.Is(err, os.ErrNotExist) {
		t.Fatalf("dial %s: %v, want no such file", path, err)
	}
}
