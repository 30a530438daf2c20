package outfile

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

func TestClearStaleSocket(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	if err := ClearStaleSocket(filepath.Join(dir, "none.sock")); err != nil {
		t.Errorf("nothing there: %v", err)
	}
	file := filepath.Join(dir, "notes.txt")
	write(t, file, "keep me", 0o644)
	if err := ClearStaleSocket(file); err == nil || !strings.Contains(err.Error(), "not a socket") {
		t.Errorf("a regular file: %v, want a refusal", err)
	}
	if got := read(t, file); got != "keep me" {
		t.Errorf("the file now holds %q", got)
	}

	live := filepath.Join(dir, "live.sock")
	ln, err := net.Listen("unix", live)
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	defer ln.Close()
	if err := ClearStaleSocket(live); err == nil || !strings.Contains(err.Error(), "already listens") {
		t.Errorf("a live socket: %v, want a refusal", err)
	}
	if _, err := os.Lstat(live); err != nil {
		t.Errorf("the live socket is gone: %v", err)
	}

	stale := filepath.Join(dir, "stale.sock")
	old, err := net.Listen("unix", stale)
	if err != nil {
		t.Fatal(err)
	}
	old.(*net.UnixListener).SetUnlinkOnClose(false)
	old.Close()
	if err := ClearStaleSocket(stale); err != nil {
		t.Errorf("a stale socket: %v", err)
	}
	if _, err := os.Lstat(stale); !os.IsNotExist(err) {
		t.Errorf("the stale socket is still there: %v", err)
	}
}

func TestTempDir(t *testing.T) {
	t.Parallel()
	dir, remove, err := TempDir("underrun-test-")
	if err != nil {
		t.Fatal(err)
	}
	write(t, filepath.Join(dir, "a"), "x", 0o644)
	remove()
	if _, err := os.Lstat(dir); !os.IsNotExist(err) {
		t.Errorf("%s is still there: %v", dir, err)
	}
}
