package yamlguard

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline/memtest"
)

// billionLaughs is a 9-level alias bomb: 9^9 (387 million) strings.
func billionLaughs() string {
	var b strings.Builder
	b.WriteString("a0: &a0 [\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\",\"lol\"]\n")
	for i := 1; i <= 8; i++ {
		fmt.Fprintf(&b, "a%d: &a%d [", i, i)
		for j := range 9 {
			if j > 0 {
				b.WriteString(",")
			}
			fmt.Fprintf(&b, "*a%d", i-1)
		}
		b.WriteString("]\n")
	}
	b.WriteString("corpus: *a8\n")
	return b.String()
}

func blockNesting(n int) string {
	var b strings.Builder
	for i := range n {
		b.WriteString(strings.Repeat(" ", i) + "k:\n")
	}
	return b.String() + strings.Repeat(" ", n) + "v: 1\n"
}

// hostile are documents too large to keep in testdata/hostile: each is
// refused over a limit, naming where.
var hostile = []struct {
	name, doc, want string
}{
	{"alias bomb", billionLaughs(), "alias *a"},
	{"flow nesting", "corpus: " + strings.Repeat("[", 40000) + strings.Repeat("]", 40000), "line 1: nested more than 64 levels"},
	{"huge document", "text: \"" + strings.Repeat("a", 300<<10) + "\"\n", "more than 262144"},
	{"too many values", "itls: [" + strings.Repeat("1,", 110_000) + "1]\n", "more than 200000 tokens"},
	{"alias past the depth", "a: &a " + strings.Repeat("[", 40) + strings.Repeat("]", 40) + "\nb: " + strings.Repeat("[", 30) + "*a" + strings.Repeat("]", 30) + "\n", "line 2: b"},
}

// HostileFiles are the hostile documents of testdata/hostile (the
// scenario and voice profile tests read them too): each file's first line
// says what its error must say ("# want: ...").
func hostileFiles(t testing.TB) map[string]string {
	files, err := filepath.Glob("testdata/hostile/*.yaml")
	if err != nil || len(files) == 0 {
		t.Fatalf("no hostile documents: %v", err)
	}
	out := map[string]string{}
	for _, f := range files {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		out[f] = string(b)
	}
	return out
}

// Want returns what the error about a hostile file must say.
func want(doc string) string {
	first, _, _ := strings.Cut(doc, "\n")
	return strings.TrimPrefix(first, "# want: ")
}

// TestHostile: every hostile document is refused with its line, costing
// a bounded amount of memory (not parallel: it measures allocation).
func TestHostile(t *testing.T) {
	cases := hostile
	for f, doc := range hostileFiles(t) {
		cases = append(cases, struct{ name, doc, want string }{f, doc, want(doc)})
	}
	for _, tc := range cases {
		var err error
		var v any
		mem := memtest.Allocated(func() { err = Default.Unmarshal([]byte(tc.doc), &v) })
		if !errors.Is(err, ErrLimit) || !strings.Contains(err.Error(), tc.want) {
			t.Errorf("%s: %v, want ErrLimit saying %q", tc.name, err, tc.want)
		}
		if mem > 100<<20 {
			t.Errorf("%s: refusing it allocated %d MB", tc.name, mem>>20)
		}
		t.Logf("%s (%d bytes): %v; %.1f MB", tc.name, len(tc.doc), err, float64(mem)/(1<<20))
	}
}

// TestWithinLimits: ordinary documents, aliases and all, decode.
func TestWithinLimits(t *testing.T) {
	t.Parallel()
	for _, doc := range []string{
		"",
		"name: x\ncorpus: [a, b]\n",
		"base: &b {tpot: 20ms}\ngenerator:\n  <<: *b\n  kind: constant\n",
		"itls: [" + strings.Repeat("1,", 20_000) + "1]\n",
		blockNesting(60),
		"a: &a [x, y]\nb: [*a, *a, *a]\n",
		"corpus:\n  - |\n    one\n      indented more\n        and more\n",
	} {
		var v any
		if err := Default.Unmarshal([]byte(doc), &v); err != nil {
			t.Errorf("%.60q: %v", doc, err)
		}
	}
}

func TestReadAll(t *testing.T) {
	t.Parallel()
	l := Limits{MaxBytes: 10}
	if b, err := l.ReadAll(strings.NewReader("0123456789")); err != nil || len(b) != 10 {
		t.Errorf("10 bytes: %q, %v", b, err)
	}
	if _, err := l.ReadAll(strings.NewReader("0123456789x")); !errors.Is(err, ErrLimit) {
		t.Errorf("11 bytes: %v", err)
	}
}

// FuzzCheck: any document is checked within bounded memory, and one that
// passes decodes within bounded memory too.
func FuzzCheck(f *testing.F) {
	for _, tc := range hostile {
		if len(tc.doc) < 4096 {
			f.Add([]byte(tc.doc))
		}
	}
	for _, doc := range hostileFiles(f) {
		f.Add([]byte(doc))
	}
	f.Add([]byte("a: &a [x, y]\nb: [*a, *a, *a]\n"))
	f.Add([]byte(blockNesting(20)))
	f.Fuzz(func(t *testing.T, data []byte) {
		var v any
		if mem := memtest.Allocated(func() { _ = Default.Unmarshal(data, &v) }); mem > 256<<20 {
			t.Fatalf("%d bytes of YAML cost %d MB", len(data), mem>>20)
		}
	})
}
