//go:build unix

package main

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"
)

// The README walk: TestREADME runs every ```sh block of README.md and
// then of each reference file under cmd/underrun/docs/, the files in the
// order of readmeFiles and each file's blocks in order, as a new user
// following them would, and fails on the first command that ends otherwise
// than the file says. These are the rules for writing a block (README.md
// and each docs file point here in a comment of their own):
//
//   - each block runs in a bash script of its own (set -o pipefail), in one
//     scratch directory shared by all blocks of all the files, holding links to the
//     repository's top-level files, with `underrun` on PATH (this test
//     binary) and `go run ./cmd/underrun` read as `underrun`; write each
//     block so that it runs on a fresh machine after the blocks above it
//     and in the files before it;
//   - every command must exit 0, unless its comment says
//     `readme-test: exit N`;
//   - a command ending in `&` runs in the background: it starts once every
//     127.0.0.1:PORT it listens on (`--listen 127.0.0.1:PORT`, or any
//     flag ending in listen or listen-address) is free (a server of the block that is
//     still stopping is waited for; another program's is a failure), the
//     next line runs once they all accept connections (a failure if the
//     command exits first), and what still runs when the block ends is
//     stopped (SIGTERM, then SIGKILL for the whole group); a block that
//     reuses a port kills its server first, as a reader would;
//   - `readme-test: needs PROG...` runs the line only where every PROG is
//     installed (a PROG with a slash: where that path of the repository
//     exists, such as a package's node_modules), and says so when one is
//     missing;
//   - `readme-test: network` (the command needs the outside network) and
//     `readme-test: suite` (it runs the test suite, which runs this test)
//     skip the line; no other skip exists.
//
// The walk runs in a network namespace of its own where the system allows
// (unshare -rn): the README's fixed ports cannot meet another process's,
// and nothing outside the machine can be reached, as on a fresh machine
// without network. Elsewhere walks on one machine take turns (a lock file).
// Keep the commands quick: the whole walk takes about a minute.

// readmeFiles are the files the walk runs, in the order it runs them,
// relative to the repository's root: the front page, then the reference.
// A block may use what a block of a file before it made (trace.jsonl from
// analyze.md, capture.jsonl from live.md for monitor.md, ...). Every .md
// file under cmd/underrun/docs must be listed.
var readmeFiles = []string{
	"README.md",
	"cmd/underrun/docs/analyze.md",
	"cmd/underrun/docs/formats.md",
	"cmd/underrun/docs/synthesis.md",
	"cmd/underrun/docs/simulate.md",
	"cmd/underrun/docs/speak.md",
	"cmd/underrun/docs/live.md",
	"cmd/underrun/docs/monitor.md",
	"cmd/underrun/docs/livekit.md",
	"cmd/underrun/docs/livekit-python.md",
	"cmd/underrun/docs/pipecat.md",
	"cmd/underrun/docs/plots.md",
	"cmd/underrun/docs/numbers.md",
}

// readmeLine is one command line of a README block, with its markers.
type readmeLine struct {
	n          int    // line number in the file
	code       string // the command, without its comment
	heredoc    []string
	exit       int
	background bool
	needs      []string
	skip       string // why the line is not run
	ports      []string
}

// readmeBlock is one ```sh block.
type readmeBlock struct {
	file  string // the file it is in, as readmeFiles names it
	start int    // line number of the opening fence
	lines []readmeLine
}

var (
	markerRe = regexp.MustCompile(`readme-test:\s*([a-z]+)((?:\s+[^\s#()]+)*)`)
	// the address a server listens on: --listen 127.0.0.1:PORT,
	// --web.listen-address=127.0.0.1:PORT
	portRe    = regexp.MustCompile(`listen[a-z.-]*[= ]127\.0\.0\.1:(\d+)`)
	heredocRe = regexp.MustCompile(`<<-?\s*'?"?([A-Za-z_]+)'?"?`)
)

// splitComment splits a shell line into its code and its comment: the
// first # outside quotes that starts a word.
func splitComment(line string) (code, comment string) {
	var quote byte
	for i := 0; i < len(line); i++ {
		c := line[i]
		switch {
		case quote != 0:
			if c == quote {
				quote = 0
			} else if c == '\\' && quote == '"' {
				i++
			}
		case c == '\\':
			i++
		case c == '\'' || c == '"':
			quote = c
		case c == '#' && (i == 0 || line[i-1] == ' ' || line[i-1] == '\t'):
			return strings.TrimRight(line[:i], " \t"), line[i+1:]
		}
	}
	return strings.TrimRight(line, " \t"), ""
}

// parseREADME returns the ```sh blocks of readme, the text of the file
// name; a marker it does not know is an error, so that a misspelt one
// cannot skip a command quietly.
func parseREADME(name, readme string) ([]readmeBlock, error) {
	var blocks []readmeBlock
	var cur *readmeBlock
	var heredocEnd string
	for i, line := range strings.Split(readme, "\n") {
		n := i + 1
		switch {
		case cur == nil:
			if strings.TrimSpace(line) == "```sh" {
				blocks = append(blocks, readmeBlock{file: name, start: n})
				cur = &blocks[len(blocks)-1]
			}
			continue
		case heredocEnd != "":
			last := &cur.lines[len(cur.lines)-1]
			last.heredoc = append(last.heredoc, line)
			if strings.TrimSpace(line) == heredocEnd {
				heredocEnd = ""
			}
			continue
		case strings.TrimSpace(line) == "```":
			cur = nil
			continue
		}
		code, comment := splitComment(line)
		if strings.TrimSpace(code) == "" {
			if markerRe.MatchString(comment) {
				return nil, fmt.Errorf("%s:%d: a marker on a line without a command", name, n)
			}
			continue
		}
		l := readmeLine{n: n, code: strings.ReplaceAll(code, "go run ./cmd/underrun", "underrun")}
		for _, m := range markerRe.FindAllStringSubmatch(comment, -1) {
			args := strings.Fields(m[2])
			switch m[1] {
			case "exit":
				if len(args) != 1 {
					return nil, fmt.Errorf("%s:%d: readme-test: exit takes one status", name, n)
				}
				code, err := strconv.Atoi(args[0])
				if err != nil {
					return nil, fmt.Errorf("%s:%d: readme-test: exit %q: %v", name, n, args[0], err)
				}
				l.exit = code
			case "needs":
				if len(args) == 0 {
					return nil, fmt.Errorf("%s:%d: readme-test: needs names no program", name, n)
				}
				l.needs = args
			case "network":
				l.skip = "needs the outside network"
			case "suite":
				l.skip = "runs the test suite, which runs this walk"
			default:
				return nil, fmt.Errorf("%s:%d: unknown marker readme-test: %s (want exit N, needs PROG..., network or suite)", name, n, m[1])
			}
		}
		if c, ok := strings.CutSuffix(l.code, "&"); ok && !strings.HasSuffix(c, "&") {
			l.background = true
			for _, m := range portRe.FindAllStringSubmatch(code, -1) {
				l.ports = append(l.ports, m[1])
			}
		}
		if m := heredocRe.FindStringSubmatch(code); m != nil {
			heredocEnd = m[1]
		}
		cur.lines = append(cur.lines, l)
	}
	if cur != nil {
		return nil, fmt.Errorf("%s:%d: a ```sh block that never ends", name, cur.start)
	}
	return blocks, nil
}

// readmePrelude is the start of every block's script: the checks the
// commands are followed by.
const readmePrelude = `set -o pipefail
__check() { # FILE:LINE, status wanted, status got
	if [ "$3" != "$2" ]; then
		echo "readme-test: $1: exit status $3, want $2" >&2
		exit 1
	fi
}
__ready() { # FILE:LINE, pid, ports: wait until every port accepts
	local line=$1 pid=$2 port
	shift 2
	for port in "$@"; do
		until (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do
			if ! kill -0 "$pid" 2>/dev/null; then
				echo "readme-test: $line: the command ended before 127.0.0.1:$port accepted connections" >&2
				exit 1
			fi
			sleep 0.01
		done
	done
}
__free() { # FILE:LINE, ports: wait until no server listens on them
	local line=$1 port
	shift
	for port in "$@"; do
		while (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; do
			# a server of this block may still be stopping; what
			# listens once none runs is another program's
			if [ -z "$(jobs -rp)" ] && (exec 3<>/dev/tcp/127.0.0.1/$port) 2>/dev/null; then
				echo "readme-test: $line: 127.0.0.1:$port is taken by another program" >&2
				exit 1
			fi
			sleep 0.01
		done
	done
}
__stop() { # what still runs in the background when the block ends
	local pids
	pids=$(jobs -p)
	[ -n "$pids" ] && kill $pids 2>/dev/null
	wait
}
trap __stop EXIT
`

// haveProgram reports whether prog is installed, or, for a path (one with
// a slash, from the repository root), whether it exists: a package's
// installed dependencies (node_modules after npm ci) are needed as
// programs are.
func haveProgram(prog string) bool {
	if strings.Contains(prog, "/") {
		_, err := os.Stat(filepath.Join("../..", prog))
		return err == nil
	}
	_, err := exec.LookPath(prog)
	return err == nil
}

// script returns the bash script of block b, and the lines it leaves out
// with why.
func (b readmeBlock) script(have func(string) bool) (string, []string) {
	var s strings.Builder
	var skipped []string
	s.WriteString(readmePrelude)
	for _, l := range b.lines {
		why := l.skip
		for _, p := range l.needs {
			if why == "" && !have(p) {
				why = p + " is not installed"
				if strings.Contains(p, "/") {
					why = p + " is missing"
				}
			}
		}
		if why != "" {
			skipped = append(skipped, fmt.Sprintf("%s:%d: %s: %s", b.file, l.n, why, l.code))
			if len(l.heredoc) > 0 {
				return "", append(skipped, fmt.Sprintf("%s:%d: a here-document cannot be skipped", b.file, l.n))
			}
			continue
		}
		at := fmt.Sprintf("%s:%d", b.file, l.n)
		fmt.Fprintf(&s, "echo '+ %s' >&2\n", at)
		if l.background && len(l.ports) > 0 {
			fmt.Fprintf(&s, "__free %s %s\n", at, strings.Join(l.ports, " "))
		}
		s.WriteString(l.code + "\n")
		for _, h := range l.heredoc {
			s.WriteString(h + "\n")
		}
		switch {
		case l.background:
			fmt.Fprintf(&s, "__ready %s $! %s\n", at, strings.Join(l.ports, " "))
		default:
			fmt.Fprintf(&s, "__check %s %d $?\n", at, l.exit)
		}
	}
	return s.String(), skipped
}

// readmeWalk is where and how README blocks run.
type readmeWalk struct {
	dir, walk string   // scratch directory; the walk's working directory in it
	env       []string // the commands' environment
	wrap      []string // the shell, in a network of its own where there is one
	have      func(prog string) bool
}

// newREADMEWalk makes a scratch directory with links to the repository's
// top-level files in it, and this test binary on PATH as underrun.
func newREADMEWalk(t *testing.T) *readmeWalk {
	t.Helper()
	bash, err := exec.LookPath("bash")
	if err != nil {
		t.Skip("the README's commands are bash: no bash here")
	}
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	root, err := filepath.Abs("../..")
	if err != nil {
		t.Fatal(err)
	}
	w := &readmeWalk{dir: t.TempDir(), have: haveProgram}
	w.walk = filepath.Join(w.dir, "walk")
	bin, home := filepath.Join(w.dir, "bin"), filepath.Join(w.dir, "home")
	for _, d := range []string{w.walk, bin, home} {
		if err := os.Mkdir(d, 0o755); err != nil {
			t.Fatal(err)
		}
	}
	entries, err := os.ReadDir(root)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		if strings.HasPrefix(e.Name(), ".") {
			continue
		}
		if err := os.Symlink(filepath.Join(root, e.Name()), filepath.Join(w.walk, e.Name())); err != nil {
			t.Fatal(err)
		}
	}
	if err := os.Symlink(self, filepath.Join(bin, "underrun")); err != nil {
		t.Fatal(err)
	}
	w.env = []string{"PATH=" + bin + string(os.PathListSeparator) + os.Getenv("PATH"), "HOME=" + home,
		"UNDERRUN_TEST_EXEC=1", "LANG=C.UTF-8", "TMPDIR=" + w.dir}
	for _, kv := range os.Environ() {
		// the Go toolchain's and the race detector's settings carry over
		// (not GOGC: TestMain sets it for this process alone)
		if k, _, _ := strings.Cut(kv, "="); strings.HasPrefix(k, "GO") && k != "GOGC" {
			w.env = append(w.env, kv)
		}
	}
	w.wrap = []string{bash}
	if w.have("unshare") && w.have("ip") && exec.Command("unshare", "-rn", "true").Run() == nil {
		w.wrap = []string{"unshare", "-rn", bash, "-c", `ip link set lo up && exec "$0" "$@"`, bash}
	} else {
		t.Log("no network namespace here (unshare -rn): walks on this machine take turns")
		unlock := lockREADMEWalk(t)
		t.Cleanup(unlock)
	}
	return w
}

// run runs block b and returns its output; the error says which command
// failed.
func (w *readmeWalk) run(ctx context.Context, t *testing.T, b readmeBlock) (string, error) {
	t.Helper()
	script, skipped := b.script(w.have)
	for _, s := range skipped {
		t.Logf("skipped %s", s)
	}
	if script == "" {
		return "", fmt.Errorf("block at %s:%d cannot run", b.file, b.start)
	}
	base := strings.TrimSuffix(filepath.Base(b.file), ".md")
	path := filepath.Join(w.dir, fmt.Sprintf("block-%s-%d.sh", base, b.start))
	if err := os.WriteFile(path, []byte(script), 0o644); err != nil {
		t.Fatal(err)
	}
	// the output goes to a file, not a pipe: a program the block left
	// behind would hold a pipe open, and the wait for it with it
	out, err := os.Create(path + ".out")
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	cmd := exec.CommandContext(ctx, w.wrap[0], append(w.wrap[1:], path)...)
	cmd.Dir, cmd.Env, cmd.Stdout, cmd.Stderr = w.walk, w.env, out, out
	cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true}
	cmd.Cancel = func() error { return syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) }
	err = cmd.Run()
	if cmd.Process != nil {
		syscall.Kill(-cmd.Process.Pid, syscall.SIGKILL) // anything the block left behind
	}
	got, rerr := os.ReadFile(out.Name())
	if rerr != nil {
		t.Fatal(rerr)
	}
	return string(got), err
}

// TestREADME walks the README and then the docs files: see the
// conventions above.
func TestREADME(t *testing.T) {
	t.Parallel()
	if testing.Short() {
		t.Skip("the README walk runs servers and simulations for a minute")
	}
	blocks := readmeBlocks(t)
	w := newREADMEWalk(t)
	ctx := context.Background()
	if deadline, ok := t.Deadline(); ok {
		var cancel context.CancelFunc
		// time to show what the walk did before go test gives up on it
		ctx, cancel = context.WithDeadline(ctx, deadline.Add(-5*time.Second))
		defer cancel()
	}
	started := time.Now()
	for _, b := range blocks {
		blockStart := time.Now()
		out, err := w.run(ctx, t, b)
		t.Logf("block at %s:%d: %v", b.file, b.start, time.Since(blockStart).Round(time.Millisecond))
		if err != nil {
			t.Fatalf("block at %s:%d: %v\n%s", b.file, b.start, err, tail(out, 60))
		}
	}
	t.Logf("the README walk took %v", time.Since(started).Round(time.Millisecond))
}

// readmeBlocks returns the blocks of every file of readmeFiles, in the
// walk's order; a docs file the list lacks fails the test, so that none
// is left unwalked.
func readmeBlocks(t *testing.T) []readmeBlock {
	t.Helper()
	docs, err := filepath.Glob("docs/*.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, d := range docs {
		if !slices.Contains(readmeFiles, "cmd/underrun/"+filepath.ToSlash(d)) {
			t.Errorf("cmd/underrun/%s is not in readmeFiles (readme_test.go): the walk would not run it", filepath.ToSlash(d))
		}
	}
	var blocks []readmeBlock
	for _, name := range readmeFiles {
		text, err := os.ReadFile(filepath.Join("..", "..", filepath.FromSlash(name)))
		if err != nil {
			t.Fatal(err)
		}
		bs, err := parseREADME(name, string(text))
		if err != nil {
			t.Fatal(err)
		}
		blocks = append(blocks, bs...)
	}
	if len(blocks) == 0 {
		t.Fatal("README.md and the docs files have no ```sh block")
	}
	return blocks
}

// TestREADMEConventions: the walk's markers do what the README's comment
// says, and a block fails on the first command that ends otherwise.
func TestREADMEConventions(t *testing.T) {
	t.Parallel()
	w := newREADMEWalk(t)
	w.have = func(prog string) bool { return prog != "no-such-program" }
	tests := []struct {
		name, block string
		fail        string // in the output; "" for a block that runs
	}{
		{"exit 0", "true\nunderrun stacks > stacks.txt\ntest -s stacks.txt", ""},
		{"a status not marked", "true\nsh -c 'exit 1'   # a comment\ntouch never", "README.md:4: exit status 1, want 0"},
		{"a status marked", "sh -c 'exit 3'   # (readme-test: exit 3)\necho '# not a comment' | grep -q '#'", ""},
		{"a marked status not met", "true   # readme-test: exit 1", "README.md:3: exit status 0, want 1"},
		{"go run", "go run ./cmd/underrun stacks pipecat-cartesia | grep -q Cartesia", ""},
		{"skips", "false # readme-test: network\nfalse # readme-test: suite\nfalse # (readme-test: needs no-such-program) (readme-test: exit 1)", ""},
		{"needs what is here", "false # (readme-test: needs sh) (readme-test: exit 3)", "README.md:3: exit status 1, want 3"},
		{"a pipeline fails", "false | true", "README.md:3: exit status 1, want 0"},
		{"here-document", "cat > x.yaml <<'EOF'\na: 1 # not a marker: readme-test: exit 5\nEOF\ngrep -q 'a: 1' x.yaml", ""},
		{"background, ready", "underrun mock --listen 127.0.0.1:18431 --scenario default &   # a server\n" +
			"curl -sf http://127.0.0.1:18431/v1/models > /dev/null   # (readme-test: needs curl)", ""},
		{"background, ended before it listened", "underrun mock --listen 127.0.0.1:18432 --scenario no-such &\ntouch never",
			"README.md:3: the command ended before 127.0.0.1:18432 accepted connections"},
		{"background, stopped at the end", "sleep 600 &\necho $! > sleeper.pid", ""},
		{"background, a port reused", "underrun mock --listen 127.0.0.1:18433 --scenario default &\nkill %1\n" +
			"underrun mock --listen 127.0.0.1:18433 --scenario default &", ""},
		{"background, an upstream named", "underrun mock --listen 127.0.0.1:18435 --scenario default &\n" +
			"underrun proxy --listen 127.0.0.1:18436 --url http://127.0.0.1:18435 &\n" +
			"curl -sf http://127.0.0.1:18436/v1/models > /dev/null   # (readme-test: needs curl)", ""},
		{"background, a port taken", "(underrun mock --listen 127.0.0.1:18434 --scenario default &)\n" +
			"until (exec 3<>/dev/tcp/127.0.0.1/18434) 2>/dev/null; do sleep 0.01; done\n" +
			"underrun mock --listen 127.0.0.1:18434 --scenario default &", "README.md:5: 127.0.0.1:18434 is taken by another program"},
	}
	for _, tt := range tests {
		blocks, err := parseREADME("README.md", "text\n```sh\n"+tt.block+"\n```\n")
		if err != nil || len(blocks) != 1 {
			t.Fatalf("%s: %v, %d blocks", tt.name, err, len(blocks))
		}
		blocks[0].start = len(tt.name) // a script file of its own
		out, err := w.run(context.Background(), t, blocks[0])
		switch {
		case tt.fail == "" && err != nil:
			t.Errorf("%s: %v\n%s", tt.name, err, out)
		case tt.fail != "" && (err == nil || !strings.Contains(out, tt.fail)):
			t.Errorf("%s: %v, want a failure saying %q:\n%s", tt.name, err, tt.fail, out)
		}
	}
	if _, err := os.Stat(filepath.Join(w.walk, "never")); err == nil {
		t.Error("a block went on after a command failed")
	}
	if b, err := os.ReadFile(filepath.Join(w.walk, "sleeper.pid")); err != nil {
		t.Error(err)
	} else if pid, _ := strconv.Atoi(strings.TrimSpace(string(b))); pid <= 0 || syscall.Kill(pid, 0) == nil {
		t.Errorf("the background command %q still runs after its block", b)
	}
	for _, bad := range []string{"true # readme-test: skip", "true # readme-test: exit one", "# readme-test: network"} {
		if _, err := parseREADME("README.md", "```sh\n"+bad+"\n```\n"); err == nil {
			t.Errorf("%q: no error", bad)
		}
	}
}

// lockREADMEWalk makes README walks on this machine take turns, where
// they share one network: the README's ports are fixed.
func lockREADMEWalk(t *testing.T) func() {
	t.Helper()
	f, err := os.OpenFile(filepath.Join(os.TempDir(), "underrun-readme-walk.lock"), os.O_CREATE|os.O_RDWR, 0o666)
	if err != nil {
		t.Fatal(err)
	}
	if err := syscall.Flock(int(f.Fd()), syscall.LOCK_EX); err != nil {
		t.Fatal(err)
	}
	return func() { f.Close() }
}

// tail returns the last n lines of s.
func tail(s string, n int) string {
	var lines []string
	sc := bufio.NewScanner(strings.NewReader(s))
	sc.Buffer(nil, 1<<20)
	for sc.Scan() {
		lines = append(lines, sc.Text())
		if len(lines) > n {
			lines = lines[1:]
		}
	}
	return strings.Join(lines, "\n")
}
