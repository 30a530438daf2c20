package trace

import (
	"go/parser"
	"go/token"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// TestTraceImportsNoLivePart: the formats' room imports no client, server,
// monitor or simulator (DESIGN.md: arrows run from live parts to formats,
// never back); the SSE capture format is read and written here.
func TestTraceImportsNoLivePart(t *testing.T) {
	t.Parallel()
	files, err := filepath.Glob("*.go")
	if err != nil {
		t.Fatal(err)
	}
	fset := token.NewFileSet()
	for _, name := range files {
		if strings.HasSuffix(name, "_test.go") {
			continue
		}
		src, err := os.ReadFile(name)
		if err != nil {
			t.Fatal(err)
		}
		f, err := parser.ParseFile(fset, name, src, parser.ImportsOnly)
		if err != nil {
			t.Fatal(err)
		}
		for _, imp := range f.Imports {
			path, _ := strconv.Unquote(imp.Path.Value)
			for _, live := range []string{"/pipeline/openai", "/pipeline/monitor", "/sim", "/cmd/"} {
				if strings.Contains(path, "speech-pipeline/underrun"+live) {
					t.Errorf("%s imports %s", name, path)
				}
			}
		}
	}
	for _, f := range Formats {
		if f.Name == "sse" {
			return
		}
	}
	t.Error("no sse format registered in trace")
}
