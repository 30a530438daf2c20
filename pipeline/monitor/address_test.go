package monitor

import (
	"errors"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

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
