package main

import (
	"go/ast"
	"go/parser"
	"go/token"
	"io"
	"io/fs"
	"net"
	"net/http"
	"path/filepath"
	"strings"
	"testing"
)

// TestServersRefuseRebinding: the mock, the proxy and the monitor answer
// loopback hosts and refuse another name (DNS rebinding) unless
// --allow-host names it.
func TestServersRefuseRebinding(t *testing.T) {
	t.Parallel()
	mock := startServer(t, "mock", "--listen", "127.0.0.1:0")
	defer mock.stop(t)
	allowing := startServer(t, "mock", "--listen", "127.0.0.1:0", "--allow-host", "rebind.example")
	defer allowing.stop(t)
	proxy := startServer(t, "proxy", "--listen", "127.0.0.1:0", "--url", mock.url, "--events", "")
	defer proxy.stop(t)
	mon := startServer(t, "monitor", "--listen", "127.0.0.1:0", "--events", "")
	defer mon.stop(t)
	for _, tc := range []struct {
		name, url, path, host string
		want                  int
	}{
		{"mock", mock.url, "/v1/models", "", http.StatusOK},
		{"mock", mock.url, "/v1/models", "localhost", http.StatusOK},
		{"mock", mock.url, "/v1/models", "rebind.example", http.StatusForbidden},
		{"mock --allow-host", allowing.url, "/v1/models", "rebind.example", http.StatusOK},
		{"proxy", proxy.url, "/v1/models", "", http.StatusOK},
		{"proxy", proxy.url, "/v1/models", "rebind.example", http.StatusForbidden},
		{"monitor", mon.url, "/api/sessions", "", http.StatusOK},
		{"monitor", mon.url, "/api/sessions", "rebind.example", http.StatusForbidden},
	} {
		req, _ := http.NewRequest("GET", tc.url+tc.path, nil)
		if tc.host != "" {
			req.Host = tc.host
		}
		resp, err := http.DefaultClient.Do(req)
		if err != nil {
			t.Fatalf("%s: %v", tc.name, err)
		}
		io.Copy(io.Discard, resp.Body)
		resp.Body.Close()
		if resp.StatusCode != tc.want {
			t.Errorf("%s, Host %q: %d, want %d", tc.name, tc.host, resp.StatusCode, tc.want)
		}
	}
}

// TestEveryServerHasTimeouts: every http.Server in the module is made by
// pipeline/httpserver, which sets the read-header and idle timeouts (a
// server without them keeps idle keep-alive connections for ever).
func TestEveryServerHasTimeouts(t *testing.T) {
	t.Parallel()
	eachSource(t, "../../pipeline/httpserver", func(fset *token.FileSet, n ast.Node) {
		if lit, ok := n.(*ast.CompositeLit); ok && isSelector(lit.Type, "http", "Server") {
			t.Errorf("%s: an http.Server made here, not by httpserver.New (no idle timeout)", fset.Position(lit.Pos()))
		}
	})
}

// TestEveryFileGoesThroughOutfile: no code but cmd/underrun/internal/outfile creates,
// truncates or removes a file by itself (os.Create removed a user's file
// on an error; a symlink's target was truncated).
func TestEveryFileGoesThroughOutfile(t *testing.T) {
	t.Parallel()
	eachSource(t, "../../cmd/underrun/internal/outfile", func(fset *token.FileSet, n ast.Node) {
		call, ok := n.(*ast.CallExpr)
		if !ok {
			return
		}
		for _, fn := range []string{"Create", "OpenFile", "WriteFile", "Remove", "RemoveAll", "Rename", "Truncate"} {
			if isSelector(call.Fun, "os", fn) {
				pos := fset.Position(call.Pos())
				// the vLLM reader's own temporary copy of its input
				if filepath.Base(pos.Filename) == "vllm.go" && fn == "Remove" {
					continue
				}
				// the OTLP exporter's own temporary file of the turns
				// without start times, removed once they are sent
				if filepath.Base(pos.Filename) == "spill.go" && fn == "Remove" {
					continue
				}
				// heard's evaluation corpus, a package only its tests
				// import, writes and removes its own temporary files
				if strings.HasSuffix(filepath.ToSlash(filepath.Dir(pos.Filename)), "pipeline/heard/internal/corpus") {
					continue
				}
				t.Errorf("%s: os.%s outside cmd/underrun/internal/outfile (use createOutput or openRecording)", pos, fn)
			}
		}
	})
}

// eachSource calls visit with every node of every non-test Go file of the
// module but those in skip.
func eachSource(t *testing.T, skip string, visit func(*token.FileSet, ast.Node)) {
	t.Helper()
	root := "../.."
	fset := token.NewFileSet()
	err := filepath.WalkDir(root, func(path string, d fs.DirEntry, err error) error {
		if err != nil {
			return err
		}
		if d.IsDir() && (d.Name() == "testdata" || strings.HasPrefix(d.Name(), ".") && path != root) {
			return filepath.SkipDir
		}
		if d.IsDir() || !strings.HasSuffix(path, ".go") || strings.HasSuffix(path, "_test.go") ||
			filepath.ToSlash(filepath.Dir(path)) == skip {
			return nil
		}
		f, err := parser.ParseFile(fset, path, nil, 0)
		if err != nil {
			return err
		}
		ast.Inspect(f, func(n ast.Node) bool {
			visit(fset, n)
			return true
		})
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

// isSelector reports whether e is pkg.name.
func isSelector(e ast.Expr, pkg, name string) bool {
	sel, ok := e.(*ast.SelectorExpr)
	if !ok || sel.Sel.Name != name {
		return false
	}
	id, ok := sel.X.(*ast.Ident)
	return ok && id.Name == pkg
}

// TestCaptureStopsAtDeadHost: a capture whose first requests all get no
// response stops at once with exit 2, naming the server, instead of firing
// at it for the whole --duration; the progress bar counts the failures.
func TestCaptureStopsAtDeadHost(t *testing.T) {
	t.Parallel()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	dead := "http://" + ln.Addr().String()
	ln.Close() // nothing listens there now: connections are refused
	code, _, stderr := runCLI(t, "", "capture", "--url", dead, "--model", "m", "--rate", "50", "--duration", "1m", "--progress", "always")
	if code != exitUsage || !strings.Contains(stderr, "none of the first 5 requests got a response") || !strings.Contains(stderr, dead) {
		t.Errorf("exit %d: %s", code, stderr)
	}
	if !strings.Contains(stderr, "failed)") {
		t.Errorf("the progress bar shows no failure count: %s", stderr)
	}
}
