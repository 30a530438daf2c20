//go:build unix

package main

import (
	"bytes"
	"context"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"golang.org/x/sys/unix"
)

const userData = "the user's own data\n"

// outputTargets are what a user may already have where a command writes:
// each returns the path to pass and the file whose content must survive.
var outputTargets = map[string]func(t *testing.T, dir, name string) (path, kept string){
	"existing file": func(t *testing.T, dir, name string) (string, string) {
		p := filepath.Join(dir, name)
		mustWrite(t, p, userData)
		return p, p
	},
	"symlink to a file": func(t *testing.T, dir, name string) (string, string) {
		target := filepath.Join(dir, "target")
		mustWrite(t, target, userData)
		p := filepath.Join(dir, name)
		if err := os.Symlink(target, p); err != nil {
			t.Fatal(err)
		}
		return p, target
	},
	"symlink to /dev/null": func(t *testing.T, dir, name string) (string, string) {
		p := filepath.Join(dir, name)
		if err := os.Symlink(os.DevNull, p); err != nil {
			t.Fatal(err)
		}
		return p, ""
	},
	"character device": func(t *testing.T, dir, name string) (string, string) {
		if os.Geteuid() != 0 {
			t.Skip("making a device node needs root")
		}
		p := filepath.Join(dir, name) // a null device of our own: never the system's
		if err := unix.Mknod(p, unix.S_IFCHR|0o666, int(unix.Mkdev(1, 3))); err != nil {
			t.Skipf("mknod: %v", err)
		}
		return p, ""
	},
	"directory": func(t *testing.T, dir, name string) (string, string) {
		p := filepath.Join(dir, name)
		if err := os.Mkdir(p, 0o755); err != nil {
			t.Fatal(err)
		}
		mustWrite(t, filepath.Join(p, "inside"), userData)
		return p, filepath.Join(p, "inside")
	},
}

func mustWrite(t *testing.T, path, content string) {
	t.Helper()
	if err := os.WriteFile(path, []byte(content), 0o644); err != nil {
		t.Fatal(err)
	}
}

// TestOutputsLeaveWhatWasThere runs every command that writes a file into
// a path that already holds something, on input that fails: the command
// exits 2 and the file, link, device or directory is as it was, with no
// temporary file left beside it.
func TestOutputsLeaveWhatWasThere(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	bad := filepath.Join(dir, "bad.jsonl")
	mustWrite(t, bad, "garbage\n")
	// a listen address in use: the servers fail after opening their files
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	inUse := busy.Addr().String()
	badYAML := filepath.Join(dir, "bad.yaml")
	mustWrite(t, badYAML, "generator: [\n")
	commands := []struct {
		name string
		file string // the output's name
		args func(out string) []string
	}{
		{"convert -o", "out.jsonl", func(o string) []string { return []string{"convert", bad, "-o", o} }},
		{"analyze --events", "ev.jsonl", func(o string) []string { return []string{"analyze", "--events", o, bad} }},
		{"analyze --wav", "out.wav", func(o string) []string { return []string{"analyze", "--audio-engine", "synthetic", "--wav", o, bad} }},
		{"analyze --plot", "out.html", func(o string) []string { return []string{"analyze", "--plot", o, bad} }},
		{"sim --events", "ev.jsonl", func(o string) []string { return []string{"sim", badYAML, "--events", o} }},
		{"plot -o", "out.svg", func(o string) []string { return []string{"plot", bad, "-o", o} }},
		{"plot --plot-kind sweep", "out.svg", func(o string) []string { return []string{"plot", "--plot-kind", "sweep", bad, "-o", o} }},
		{"voice calibrate -o", "voice.yaml", func(o string) []string { return []string{"voice", "calibrate", "--runs", "0", "-o", o} }},
		// recordings: an existing one is refused before anything runs
		{"capture -o", "run.jsonl", func(o string) []string {
			return []string{"capture", "--url", "http://127.0.0.1:1", "--model", "m", "-o", o}
		}},
		{"capture --sse", "raw.jsonl", func(o string) []string {
			return []string{"capture", "--url", "http://127.0.0.1:1", "--model", "m", "--sse", o}
		}},
		{"proxy -o", "live.jsonl", func(o string) []string {
			return []string{"proxy", "--url", "http://127.0.0.1:1", "--listen", inUse, "-o", o}
		}},
		{"monitor --record", "live.jsonl", func(o string) []string {
			return []string{"monitor", "--listen", inUse, "--record", o}
		}},
		{"mock --events", "ev.jsonl", func(o string) []string {
			return []string{"mock", "--listen", inUse, "--events", o}
		}},
	}
	for _, c := range commands {
		for target, setup := range outputTargets {
			t.Run(c.name+"/"+target, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path, kept := setup(t, dir, c.file)
				was, _ := os.Lstat(path)
				code, _, stderr := runCLI(t, "", c.args(path)...)
				// a capture into a device runs (against a dead host)
				if code != exitUsage && !(code == exitFail && kept == "") {
					t.Fatalf("exit %d, want %d; stderr %s", code, exitUsage, stderr)
				}
				now, err := os.Lstat(path)
				if err != nil {
					t.Fatalf("%s is gone: %v (stderr %s)", path, err, stderr)
				}
				if now.Mode() != was.Mode() || !os.SameFile(was, now) && !was.Mode().IsRegular() {
					t.Errorf("%s was %v, now %v", path, was.Mode(), now.Mode())
				}
				if kept != "" {
					if b, err := os.ReadFile(kept); err != nil || string(b) != userData {
						t.Errorf("%s now holds %q (%v), want the user's data", kept, b, err)
					}
				}
				entries, _ := os.ReadDir(dir)
				for _, e := range entries {
					if strings.Contains(e.Name(), "tmp") {
						t.Errorf("left behind: %s", e.Name())
					}
				}
			})
		}
	}
}

// TestOutputsWriteThroughLinks: a successful run writes the file a link
// names and leaves the link; a device stays a device.
func TestOutputsWriteThroughLinks(t *testing.T) {
	t.Parallel()
	in := "testdata/analyze/handcheck.jsonl"
	for _, target := range []string{"symlink to a file", "symlink to /dev/null", "character device", "existing file"} {
		for _, c := range []struct {
			name, file string
			args       func(out string) []string
			want       string // the new content starts so
		}{
			{"convert", "out.jsonl", func(o string) []string { return []string{"convert", in, "-o", o} }, `{"type":"header"`},
			{"wav", "out.wav", func(o string) []string {
				return []string{"analyze", "--audio-engine", "synthetic", "--wav", o, in}
			}, "RIFF"},
			{"plot", "out.svg", func(o string) []string { return []string{"plot", in, "-o", o} }, "<?xml"},
		} {
			t.Run(c.name+"/"+target, func(t *testing.T) {
				t.Parallel()
				dir := t.TempDir()
				path, kept := outputTargets[target](t, dir, c.file)
				was, _ := os.Lstat(path)
				code, _, stderr := runCLI(t, "", c.args(path)...)
				if code == exitUsage {
					t.Fatalf("exit %d; stderr %s", code, stderr)
				}
				now, err := os.Lstat(path)
				if err != nil || now.Mode().Type() != was.Mode().Type() {
					t.Fatalf("%s was %v, now %v (%v)", path, was.Mode(), now, err)
				}
				if kept != "" {
					b, _ := os.ReadFile(kept)
					if !strings.HasPrefix(string(b), c.want) {
						t.Errorf("%s starts %.20q, want %q", kept, b, c.want)
					}
				}
				if fi, err := os.Stat(path); err != nil || !fi.Mode().IsRegular() && fi.Mode()&fs.ModeCharDevice == 0 {
					t.Errorf("%s: %v %v", path, fi, err)
				}
			})
		}
	}
}

// TestConvertOverItsInput: converting a file onto itself works, reading
// the old content to the end before the new one replaces it.
func TestConvertOverItsInput(t *testing.T) {
	t.Parallel()
	src, err := os.ReadFile(filepath.Join(toolFixtures, "vllm/basic/result.json"))
	if err != nil {
		t.Fatal(err)
	}
	p := filepath.Join(t.TempDir(), "run.json")
	mustWrite(t, p, string(src))
	if code, _, stderr := runCLI(t, "", "convert", p, "-o", p); code != exitOK {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	b, _ := os.ReadFile(p)
	if !strings.HasPrefix(string(b), `{"type":"header"`) || strings.Count(string(b), `"type":"end"`) != 5 {
		t.Errorf("got:\n%s", b)
	}
}

// TestRecordingsNeedForce: a recording refuses a non-empty file, naming
// --force, and --force replaces it; an empty file is used as is.
func TestRecordingsNeedForce(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	p := filepath.Join(dir, "ev.jsonl")
	mustWrite(t, p, userData)
	code, _, stderr := runCLI(t, "", "mock", "--listen", "256.0.0.1:0", "--events", p)
	if code != exitUsage || !strings.Contains(stderr, "--force") {
		t.Fatalf("exit %d, stderr %s", code, stderr)
	}
	if b, _ := os.ReadFile(p); string(b) != userData {
		t.Errorf("the refused file now holds %q", b)
	}
	rec := filepath.Join(dir, "run.jsonl")
	for _, prior := range []string{"", userData} {
		mustWrite(t, rec, prior)
		args := []string{"capture", "--url", "http://127.0.0.1:1/v1", "--model", "m", "--requests", "1", "-o", rec, "--idle-timeout", "1s"}
		if prior != "" {
			args = append(args, "--force")
		}
		code, _, stderr = runCLI(t, "", args...)
		b, _ := os.ReadFile(rec)
		if code == exitUsage || !strings.HasPrefix(string(b), `{"type":"header"`) || strings.Contains(string(b), userData) {
			t.Errorf("prior %q: exit %d, the file holds %q; stderr %s", prior, code, b, stderr)
		}
	}
}

// readWatch is an input that records whether anyone read it.
type readWatch struct{ read bool }

func (r *readWatch) Read([]byte) (int, error) { r.read = true; return 0, io.EOF }

// TestWAVIntoMissingFolder: --wav into a folder that does not exist fails
// before any input is read (so before any synthesis), naming the folder.
func TestWAVIntoMissingFolder(t *testing.T) {
	t.Parallel()
	missing := filepath.Join(t.TempDir(), "no", "such")
	for _, args := range [][]string{
		{"analyze", "--wav", filepath.Join(missing, "x.wav"), "-"},
		{"analyze", "--plot", filepath.Join(missing, "x.html"), "-"},
		{"analyze", "--events", filepath.Join(missing, "x.jsonl"), "-"},
		{"plot", "-", "-o", filepath.Join(missing, "x.svg")},
		{"convert", "-", "-o", filepath.Join(missing, "x.jsonl")},
	} {
		in := &readWatch{}
		var out, errOut bytes.Buffer
		code := run(context.Background(), args, in, &out, &errOut)
		if code != exitUsage || in.read || !strings.Contains(errOut.String(), "folder "+missing+" does not exist") {
			t.Errorf("%v: exit %d, input read %v, stderr %s", args, code, in.read, errOut.String())
		}
	}
}
