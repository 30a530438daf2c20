package rxstamp

import (
	"context"
	"errors"
	"io"
	"net"
	"os"
	"testing"
	"time"
)

// pair returns a stamping client connection, whose reads are stamped
// already, and the server's end.
func pair(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	c, srv := connect(t)
	warmUp(t, c, srv)
	return c, srv
}

// connect returns a stamping client connection, not read yet, and the
// server's end.
func connect(t *testing.T) (*Conn, net.Conn) {
	t.Helper()
	if !Supported() {
		t.Skip("this system gives no kernel receive stamps")
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer ln.Close()
	accepted := make(chan net.Conn, 1)
	go func() {
		c, err := ln.Accept()
		if err != nil {
			close(accepted)
			return
		}
		accepted <- c
	}()
	c, err := Dialer((&net.Dialer{}).DialContext)(context.Background(), "tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	srv, ok := <-accepted
	if !ok {
		t.Fatal("accept failed")
	}
	t.Cleanup(func() { c.Close(); srv.Close() })
	sc, ok := c.(*Conn)
	if !ok {
		t.Fatalf("Dialer gave a %T, want *rxstamp.Conn", c)
	}
	return sc, srv
}

// warmUp exchanges bytes until they come stamped: the kernel turns its
// stamping on a moment after the first socket of the system asks for it.
func warmUp(t *testing.T, c *Conn, srv net.Conn) {
	t.Helper()
	buf := make([]byte, 1)
	for range 100 {
		srv.Write([]byte("w"))
		if _, err := c.Read(buf); err != nil {
			t.Fatal(err)
		}
		if _, ok := c.Last(); ok {
			return
		}
		time.Sleep(10 * time.Millisecond)
	}
	t.Fatal("no kernel stamp after 100 reads")
}

// TestStampIsArrivalNotRead: bytes read long after they arrived carry the
// time they arrived.
func TestStampIsArrivalNotRead(t *testing.T) {
	t.Parallel()
	c, srv := pair(t)
	for range 3 {
		before := time.Now()
		if _, err := srv.Write([]byte("chunk")); err != nil {
			t.Fatal(err)
		}
		after := time.Now()
		time.Sleep(40 * time.Millisecond) // the reader is late
		buf := make([]byte, 64)
		n, err := c.Read(buf)
		read := time.Now()
		if err != nil || string(buf[:n]) != "chunk" {
			t.Fatalf("read %q, %v", buf[:n], err)
		}
		got, ok := c.Last()
		if !ok {
			t.Fatal("no stamp for a read of TCP bytes")
		}
		got2, _ := Stamp(c)
		// both conversions land within a clock tick of each other
		if d := got2.Sub(got).Abs(); d > time.Millisecond {
			t.Errorf("two readings of one stamp differ by %v", d)
		}
		// the wall and monotonic clocks may tick a little apart
		const slack = 2 * time.Millisecond
		if got.Before(before.Add(-slack)) || got.After(after.Add(slack)) {
			t.Errorf("stamp %v after the write began, want within [0, %v] (+-%v)", got.Sub(before), after.Sub(before), slack)
		}
		if lag := read.Sub(got); lag < 30*time.Millisecond {
			t.Errorf("stamp only %v before the read, want about 40ms", lag)
		}
	}
}

// TestReadsLikeTheConnection: EOF, deadlines and closing behave as on the
// plain connection, and data round trips unchanged.
func TestReadsLikeTheConnection(t *testing.T) {
	t.Parallel()
	c, srv := pair(t)
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Errorf("empty read = %d, %v", n, err)
	}
	c.SetReadDeadline(time.Now().Add(20 * time.Millisecond))
	_, err := c.Read(make([]byte, 8))
	var ne net.Error
	if !errors.Is(err, os.ErrDeadlineExceeded) || !errors.As(err, &ne) || !ne.Timeout() {
		t.Fatalf("read past the deadline: %v, want a timeout", err)
	}
	c.SetReadDeadline(time.Time{})
	want := make([]byte, 1<<20)
	for i := range want {
		want[i] = byte(i * 7)
	}
	go func() {
		srv.Write(want)
		srv.Close()
	}()
	got, err := io.ReadAll(c)
	if err != nil {
		t.Fatal(err)
	}
	if string(got) != string(want) {
		t.Fatalf("read %d bytes, not the %d written", len(got), len(want))
	}
	if _, err := c.Read(make([]byte, 8)); err != io.EOF {
		t.Errorf("read after the peer closed: %v, want io.EOF", err)
	}
	c.Close()
	if _, err := c.Read(make([]byte, 8)); !errors.Is(err, net.ErrClosed) {
		t.Errorf("read after Close: %v, want net.ErrClosed", err)
	}
}

// TestNotTCP: what cannot be stamped is handed back as it is.
func TestNotTCP(t *testing.T) {
	t.Parallel()
	a, b := net.Pipe()
	defer a.Close()
	defer b.Close()
	w, err := Wrap(a)
	if err == nil || w != a {
		t.Fatalf("Wrap(pipe) = %T, %v; want the pipe and an error", w, err)
	}
	if _, ok := Stamp(a); ok {
		t.Error("a stamp on a pipe")
	}
}

// BenchmarkRead compares a stamped read with a plain one of the same bytes.
func BenchmarkRead(b *testing.B) {
	for _, stamped := range []bool{false, true} {
		name := "plain"
		if stamped {
			name = "stamped"
		}
		b.Run(name, func(b *testing.B) {
			ln, err := net.Listen("tcp", "127.0.0.1:0")
			if err != nil {
				b.Fatal(err)
			}
			defer ln.Close()
			go func() {
				s, err := ln.Accept()
				if err != nil {
					return
				}
				defer s.Close()
				io.Copy(s, s)
			}()
			c, err := net.Dial("tcp", ln.Addr().String())
			if err != nil {
				b.Fatal(err)
			}
			if stamped {
				if c, err = Wrap(c); err != nil {
					b.Skip(err)
				}
			}
			defer c.Close()
			msg := make([]byte, 200)
			buf := make([]byte, 4096)
			b.ReportAllocs()
			for b.Loop() {
				c.Write(msg)
				for n := 0; n < len(msg); {
					k, err := c.Read(buf)
					if err != nil {
						b.Fatal(err)
					}
					n += k
				}
			}
		})
	}
}

// TestNoStampBeforeRead: a fresh connection has no stamp to give.
func TestNoStampBeforeRead(t *testing.T) {
	t.Parallel()
	c, _ := connect(t)
	if _, ok := Stamp(c); ok {
		t.Error("a stamp before any read")
	}
}

// TestCloseWakesBlockedRead: closing a connection ends a read that waits
// for data; a deadline ends it too.
func TestCloseWakesBlockedRead(t *testing.T) {
	t.Parallel()
	c, _ := pair(t)
	done := make(chan error, 1)
	go func() {
		_, err := c.Read(make([]byte, 8))
		done <- err
	}()
	time.Sleep(30 * time.Millisecond) // let it block
	c.Close()
	select {
	case err := <-done:
		if err == nil {
			t.Error("a read ended by Close returned no error")
		}
	case <-time.After(5 * time.Second):
		t.Fatal("Close did not wake the blocked read")
	}

	c2, _ := pair(t)
	c2.SetReadDeadline(time.Now().Add(50 * time.Millisecond))
	start := time.Now()
	_, err := c2.Read(make([]byte, 8))
	if !errors.Is(err, os.ErrDeadlineExceeded) {
		t.Errorf("read past the deadline: %v", err)
	}
	if d := time.Since(start); d < 40*time.Millisecond || d > 5*time.Second {
		t.Errorf("deadline read took %v, want about 50ms", d)
	}
	// a deadline removed: reads block again until data comes
	c2.SetReadDeadline(time.Time{})
}

// TestWarm: Warm's exchange (over a stamping listener's accepted
// connection) ends with stamped reads.
func TestWarm(t *testing.T) {
	t.Parallel()
	if !Supported() {
		t.Skip("this system gives no kernel receive stamps")
	}
	if err := Warm(context.Background()); err != nil {
		t.Fatal(err)
	}
}
