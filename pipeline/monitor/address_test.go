package monitor

import (
	"context"
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"
)

// TestMonitorOverUnixSocket serves a monitor on a Unix socket and drives
// it as a client does with unix:PATH: ingest, events and /metrics.
func TestMonitorOverUnixSocket(t *testing.T) {
	t.Parallel()
	path := filepath.Join(t.TempDir(), "m.sock")
	ln, err := Listen(UnixPrefix + path)
	if err != nil {
		t.Fatal(err)
	}
	base := BaseURL(ln)
	if base != UnixPrefix+path {
		t.Errorf("BaseURL = %q, want %q", base, UnixPrefix+path)
	}
	srv, err := New(Options{Config: LoadConfig(), Logger: zerolog.Nop()})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() { done <- srv.Serve(ctx, ln, 5*time.Second) }()

	if _, err := Listen(base); err == nil || !strings.Contains(err.Error(), "not replacing") {
		t.Errorf("a second Listen on a live socket: %v, want a refusal", err)
	}
	res, err := Load(context.Background(), LoadOptions{URL: base, Sessions: 5, Rate: 50, Duration: 500 * time.Millisecond,
		TurnChunks: 10, StallAfter: 4, Stall: 200 * time.Millisecond,
		Received: func() int64 {
			n, err := ScrapeReceived(context.Background(), base, "")
			if err != nil {
				t.Errorf("metrics over the socket: %v", err)
				return -1
			}
			return n
		}})
	if err != nil {
		t.Fatal(err)
	}
	if res.Sent == 0 || res.Lost != 0 || res.Received != res.Sent || res.Drains == 0 {
		t.Errorf("over the socket: sent %d, received %d, lost %d, drains %d; want all received and some drains",
			res.Sent, res.Received, res.Lost, res.Drains)
	}
	cancel()
	if err := <-done; err != nil {
		t.Fatal(err)
	}
	if _, err := os.Lstat(path); !os.IsNotExist(err) {
		t.Errorf("the socket is still there after the monitor stopped: %v", err)
	}
}

// TestListenUnixKeepsFiles: Listen never replaces a file at the socket's
// path.
func TestListenUnixKeepsFiles(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	file := filepath.Join(dir, "notes.txt")
	if err := os.WriteFile(file, []byte("keep me"), 0o644); err != nil {
		t.Fatal(err)
	}
	if _, err := Listen(UnixPrefix + file); err == nil || !strings.Contains(err.Error(), "not replacing") {
		t.Errorf("Listen over a regular file: %v, want a refusal", err)
	}
	if b, _ := os.ReadFile(file); string(b) != "keep me" {
		t.Errorf("the file now holds %q", b)
	}
	if _, err := Listen(UnixPrefix); err == nil {
		t.Error("unix: with no path accepted")
	}
}

func TestUnixEndpoints(t *testing.T) {
	t.Parallel()
	for base, want := range map[string]string{
		"unix:/run/underrun.sock":   "ws://localhost/ingest?session=s1",
		"unix:///run/underrun.sock": "ws://localhost/ingest?session=s1",
	} {
		if got, err := IngestURL(base, "s1"); err != nil || got != want {
			t.Errorf("IngestURL(%q) = %q, %v; want %q", base, got, err, want)
		}
		if p, _ := socketPath(base); p != "/run/underrun.sock" {
			t.Errorf("socketPath(%q) = %q", base, p)
		}
	}
	if _, err := IngestURL("unix:", "s"); err == nil {
		t.Error("unix: with no path accepted")
	}
}

// TestMerge: a merged listener accepts on each of its listeners, and
// closing it closes them all.
func TestMerge(t *testing.T) {
	t.Parallel()
	tcp, err := Listen("127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	unix, err := Listen(UnixPrefix + filepath.Join(t.TempDir(), "m.sock"))
	if err != nil {
		t.Fatal(err)
	}
	m := Merge(unix, tcp)
	if m.Addr() != unix.Addr() {
		t.Errorf("address %v, want the first listener's %v", m.Addr(), unix.Addr())
	}
	for _, a := range []struct{ network, addr string }{{"tcp", tcp.Addr().String()}, {"unix", unix.Addr().String()}} {
		c, err := net.Dial(a.network, a.addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		got, err := m.Accept()
		if err != nil {
			t.Fatalf("accept over %s: %v", a.network, err)
		}
		if got.LocalAddr().Network() != a.network {
			t.Errorf("accepted a %s connection, want %s", got.LocalAddr().Network(), a.network)
		}
		got.Close()
	}
	if err := m.Close(); err != nil {
		t.Errorf("close: %v", err)
	}
	if _, err := m.Accept(); !errors.Is(err, net.ErrClosed) {
		t.Errorf("accept after close: %v, want net.ErrClosed", err)
	}
	if _, err := net.Dial("tcp", tcp.Addr().String()); err == nil {
		t.Error("the TCP listener still accepts after the merged one closed")
	}
}
