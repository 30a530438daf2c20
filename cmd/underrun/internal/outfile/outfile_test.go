//go:build unix

package outfile

import (
	"errors"
	"io"
	"io/fs"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"
	"testing"

	"golang.org/x/sys/unix"
)

// asRoot says whether these tests run with root's power over files (the
// suite runs them again as another user when it does).
var asRoot = os.Geteuid() == 0

const old = "what the user had\n"

// setup makes what a case finds at its path and returns the path; kept
// returns the name whose content must be old after an abort (the file a
// link names, or the path itself).
type setup func(t *testing.T, dir string) (path, kept string)

func newFile(_ *testing.T, dir string) (string, string) { return filepath.Join(dir, "out"), "" }

func oldFile(perm fs.FileMode) setup {
	return func(t *testing.T, dir string) (string, string) {
		p := filepath.Join(dir, "out")
		write(t, p, old, perm)
		return p, p
	}
}

func linkToOld(t *testing.T, dir string) (string, string) {
	target := filepath.Join(dir, "target")
	write(t, target, old, 0o644)
	p := filepath.Join(dir, "out")
	if err := os.Symlink("target", p); err != nil {
		t.Fatal(err)
	}
	return p, target
}

func danglingLink(t *testing.T, dir string) (string, string) {
	p := filepath.Join(dir, "out")
	if err := os.Symlink("target", p); err != nil {
		t.Fatal(err)
	}
	return p, ""
}

func hardLinked(t *testing.T, dir string) (string, string) {
	other := filepath.Join(dir, "other-name")
	write(t, other, old, 0o644)
	p := filepath.Join(dir, "out")
	if err := os.Link(other, p); err != nil {
		t.Fatal(err)
	}
	return p, other
}

// nullDevice is a character device that discards what it is sent: a node
// of our own as root (so a bug cannot remove the system's /dev/null), else
// /dev/null, which a user cannot remove anyway.
func nullDevice(t *testing.T, dir string) (string, string) {
	if !asRoot {
		return "/dev/null", ""
	}
	p := filepath.Join(dir, "null")
	if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
		t.Skipf("mknod: %v", err)
	}
	return p, ""
}

func linkToNull(t *testing.T, dir string) (string, string) {
	dev, _ := nullDevice(t, dir)
	p := filepath.Join(dir, "out")
	if err := os.Symlink(dev, p); err != nil {
		t.Fatal(err)
	}
	return p, ""
}

func directory(t *testing.T, dir string) (string, string) {
	p := filepath.Join(dir, "out")
	if err := os.Mkdir(p, 0o755); err != nil {
		t.Fatal(err)
	}
	return p, ""
}

func socket(t *testing.T, dir string) (string, string) {
	p := filepath.Join(dir, "sock")
	ln, err := net.Listen("unix", p)
	if err != nil {
		t.Skipf("unix socket: %v", err)
	}
	t.Cleanup(func() { ln.Close() })
	return p, ""
}

// lockedFolder is a writable file in a folder the caller may not create
// files in (root may; a user's Create stages the content elsewhere).
func lockedFolder(t *testing.T, dir string) (string, string) {
	sub := filepath.Join(dir, "locked")
	if err := os.Mkdir(sub, 0o755); err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(sub, "out")
	write(t, p, old, 0o644)
	if err := os.Chmod(sub, 0o555); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.Chmod(sub, 0o755) })
	return p, p
}

func missingFolder(_ *testing.T, dir string) (string, string) {
	return filepath.Join(dir, "no", "such", "folder", "out"), ""
}

func write(t *testing.T, path, content string, perm fs.FileMode) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), perm); err != nil {
		t.Fatal(err)
	}
	if err := os.Chmod(path, perm); err != nil {
		t.Fatal(err)
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("read %s: %v", path, err)
	}
	return string(b)
}

// noLitter fails when a temporary file was left in dir.
func noLitter(t *testing.T, dir string) {
	t.Helper()
	filepath.WalkDir(dir, func(p string, d fs.DirEntry, err error) error {
		if err == nil && strings.Contains(d.Name(), tempSuffix) {
			t.Errorf("left behind: %s", p)
		}
		return nil
	})
}

// noStagedLitter fails when a file staged in the system's temporary
// folder was left there.
func noStagedLitter(t *testing.T) {
	t.Helper()
	entries, _ := os.ReadDir(os.TempDir())
	for _, e := range entries {
		if strings.Contains(e.Name(), tempSuffix) {
			t.Errorf("left behind: %s", filepath.Join(os.TempDir(), e.Name()))
		}
	}
}

// before records what a path is, to check it is still that afterwards.
func lstat(t *testing.T, path string) fs.FileInfo {
	t.Helper()
	fi, err := os.Lstat(path)
	if err != nil {
		return nil
	}
	return fi
}

func TestCreate(t *testing.T) {
	t.Parallel()
	t.Logf("running as uid %d", os.Geteuid())
	umask := newFilePerm(t)
	t.Cleanup(func() { noStagedLitter(t) }) // after every case
	cases := []struct {
		name    string
		setup   setup
		refused bool // Create fails, and the path is left alone
		perm    fs.FileMode
	}{
		{name: "new file", setup: newFile, perm: umask},
		{name: "existing file", setup: oldFile(0o640), perm: 0o640},
		{name: "read-only file", setup: oldFile(0o444), refused: !asRoot, perm: 0o444},
		{name: "symlink to a file", setup: linkToOld, perm: 0o644},
		{name: "dangling symlink", setup: danglingLink, perm: umask},
		{name: "hard link", setup: hardLinked, perm: 0o644},
		{name: "file in a locked folder", setup: lockedFolder, perm: 0o644},
		{name: "character device", setup: nullDevice},
		{name: "symlink to a device", setup: linkToNull},
		{name: "directory", setup: directory, refused: true},
		{name: "socket", setup: socket, refused: true},
		{name: "missing folder", setup: missingFolder, refused: true},
	}
	for _, tc := range cases {
		for _, commit := range []bool{false, true} {
			name := tc.name + "/abort"
			if commit {
				name = tc.name + "/commit"
			}
			t.Run(name, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path, kept := tc.setup(t, dir)
				was := lstat(t, path)
				f, err := Create(path)
				if tc.refused {
					if err == nil {
						f.Abort()
						t.Fatalf("Create(%s) succeeded, want an error", path)
					}
					t.Logf("refused: %v", err)
					if kept != "" && read(t, kept) != old {
						t.Errorf("%s changed", kept)
					}
					if got := lstat(t, path); (was == nil) != (got == nil) || was != nil && got.Mode() != was.Mode() {
						t.Errorf("%s changed from %v to %v", path, was, got)
					}
					noLitter(t, dir)
					return
				}
				if err != nil {
					t.Fatalf("Create(%s): %v", path, err)
				}
				const content = "new content\n"
				if _, err := f.Write([]byte(content)); err != nil {
					t.Fatal(err)
				}
				if commit {
					if err := f.Commit(); err != nil {
						t.Fatalf("Commit: %v", err)
					}
				} else {
					f.Abort()
				}
				f.Abort() // harmless after either
				got := lstat(t, path)
				switch {
				case was != nil && was.Mode().Type() != got.Mode().Type():
					t.Errorf("%s was %v, now %v", path, was.Mode().Type(), got.Mode().Type())
				case was != nil && !was.Mode().IsRegular() && !os.SameFile(was, got):
					t.Errorf("%s was replaced", path)
				}
				if was != nil && was.Mode()&fs.ModeSymlink != 0 {
					if _, err := os.Readlink(path); err != nil {
						t.Errorf("%s is no longer a link: %v", path, err)
					}
				}
				if fi, err := os.Stat(path); err == nil && fi.Mode().IsRegular() {
					want := old
					if commit {
						want = content
					} else if kept == "" {
						t.Errorf("abort left %s behind", path)
					}
					if s := read(t, path); s != want {
						t.Errorf("%s holds %q, want %q", path, s, want)
					}
					if commit && fi.Mode().Perm() != tc.perm {
						t.Errorf("%s: mode %v, want %v", path, fi.Mode().Perm(), tc.perm)
					}
				} else if err == nil && got.Mode()&fs.ModeCharDevice == 0 && got.Mode()&fs.ModeSymlink == 0 {
					t.Errorf("%s is now %v", path, got.Mode())
				} else if err != nil && (commit || kept != "") {
					t.Errorf("%s: %v", path, err)
				}
				if kept != "" && kept != path {
					want := old
					if commit {
						want = content
					}
					if s := read(t, kept); s != want {
						t.Errorf("%s holds %q, want %q", kept, s, want)
					}
				}
				noLitter(t, dir)
			})
		}
	}
}

// newFilePerm returns the permissions a file made by os.Create gets here.
func newFilePerm(t *testing.T) fs.FileMode {
	p := filepath.Join(t.TempDir(), "probe")
	f, err := os.Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Close()
	fi, err := os.Stat(p)
	if err != nil {
		t.Fatal(err)
	}
	return fi.Mode().Perm()
}

// TestCreateFIFO writes through a named pipe to its reader; the pipe is
// still a pipe afterwards.
func TestCreateFIFO(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "fifo")
	if err := unix.Mkfifo(p, 0o644); err != nil {
		t.Skipf("mkfifo: %v", err)
	}
	got := make(chan string, 1)
	go func() {
		r, err := os.Open(p)
		if err != nil {
			got <- err.Error()
			return
		}
		b, _ := io.ReadAll(r)
		r.Close()
		got <- string(b)
	}()
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	f.Write([]byte("through"))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if s := <-got; s != "through" {
		t.Errorf("reader got %q", s)
	}
	if fi, err := os.Lstat(p); err != nil || fi.Mode()&fs.ModeNamedPipe == 0 {
		t.Errorf("the pipe is gone: %v %v", fi, err)
	}
}

// TestCreateOverItsInput: a command may write to the file it reads; the
// old content stays readable until the new one is complete.
func TestCreateOverItsInput(t *testing.T) {
	t.Parallel()
	p := filepath.Join(t.TempDir(), "trace")
	write(t, p, old, 0o644)
	in, err := os.Open(p)
	if err != nil {
		t.Fatal(err)
	}
	defer in.Close()
	f, err := Create(p)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := io.ReadAll(in)
	f.Write([]byte(strings.ToUpper(string(b))))
	if err := f.Commit(); err != nil {
		t.Fatal(err)
	}
	if s := read(t, p); s != strings.ToUpper(old) {
		t.Errorf("got %q", s)
	}
}

func TestOpenStream(t *testing.T) {
	t.Parallel()
	empty := func(t *testing.T, dir string) (string, string) {
		p := filepath.Join(dir, "out")
		write(t, p, "", 0o644)
		return p, ""
	}
	cases := []struct {
		name    string
		setup   setup
		replace bool
		err     error // nil: opened; else errors.Is this, and the path is left alone
	}{
		{name: "new file", setup: newFile},
		{name: "dangling symlink", setup: danglingLink},
		{name: "empty file", setup: empty},
		{name: "non-empty file", setup: oldFile(0o644), err: ErrExists},
		{name: "non-empty file, replace", setup: oldFile(0o644), replace: true},
		{name: "symlink to a non-empty file", setup: linkToOld, err: ErrExists},
		{name: "symlink to a non-empty file, replace", setup: linkToOld, replace: true},
		{name: "character device", setup: nullDevice},
		{name: "symlink to a device", setup: linkToNull},
		{name: "directory", setup: directory, err: ErrNotWritable},
		{name: "socket", setup: socket, err: ErrNotWritable},
		{name: "missing folder", setup: missingFolder, err: fs.ErrNotExist},
	}
	if !asRoot {
		cases = append(cases, struct {
			name    string
			setup   setup
			replace bool
			err     error
		}{name: "read-only file, replace", setup: oldFile(0o444), replace: true, err: fs.ErrPermission})
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			path, kept := tc.setup(t, dir)
			was := lstat(t, path)
			f, err := OpenStream(path, tc.replace)
			if tc.err != nil {
				if !errors.Is(err, tc.err) {
					t.Fatalf("OpenStream(%s): %v, want %v", path, err, tc.err)
				}
				if kept != "" && read(t, kept) != old {
					t.Errorf("%s changed", kept)
				}
				if got := lstat(t, path); (was == nil) != (got == nil) || was != nil && got.Mode() != was.Mode() {
					t.Errorf("%s changed from %v to %v", path, was, got)
				}
				return
			}
			if err != nil {
				t.Fatalf("OpenStream(%s): %v", path, err)
			}
			if _, err := f.Write([]byte("recorded\n")); err != nil {
				t.Fatal(err)
			}
			f.Close()
			fi, err := os.Stat(path)
			if err != nil {
				t.Fatal(err)
			}
			if fi.Mode().IsRegular() && read(t, path) != "recorded\n" {
				t.Errorf("%s holds %q", path, read(t, path))
			}
			if got := lstat(t, path); was != nil && got.Mode().Type() != was.Mode().Type() {
				t.Errorf("%s was %v, now %v", path, was.Mode().Type(), got.Mode().Type())
			}
		})
	}
}

// TestAsUser runs this package's tests again as an unprivileged user when
// the suite runs as root, so both sides of every permission are checked.
func TestAsUser(t *testing.T) {
	t.Parallel()
	if !asRoot {
		t.Skip("already running as a user")
	}
	if os.Getenv("UNDERRUN_OUTFILE_CHILD") != "" {
		t.Skip("the child")
	}
	const nobody = 65534
	dir, err := os.MkdirTemp("", "outfile-as-user-")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { os.RemoveAll(dir) })
	bin := filepath.Join(dir, "outfile.test")
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(self)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(bin, b, 0o755); err != nil {
		t.Fatal(err)
	}
	tmp := filepath.Join(dir, "tmp")
	for _, p := range []string{dir, tmp} {
		os.Mkdir(p, 0o755)
		if err := os.Chown(p, nobody, nobody); err != nil {
			t.Fatal(err)
		}
		os.Chmod(p, 0o755)
	}
	cmd := exec.Command(bin, "-test.run", "^(TestCreate|TestCreateFIFO|TestCreateOverItsInput|TestOpenStream)$", "-test.v")
	cmd.Dir = dir
	cmd.Env = []string{"TMPDIR=" + tmp, "HOME=" + tmp, "UNDERRUN_OUTFILE_CHILD=1", "PATH=" + os.Getenv("PATH")}
	cmd.SysProcAttr = &syscall.SysProcAttr{Credential: &syscall.Credential{Uid: nobody, Gid: nobody}}
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("as uid %d: %v\n%s", nobody, err, out)
	}
	for _, want := range []string{"running as uid 65534", "--- PASS: TestCreate ", "--- PASS: TestOpenStream "} {
		if !strings.Contains(string(out), want) {
			t.Fatalf("the run as a user shows no %q:\n%s", want, out)
		}
	}
}
