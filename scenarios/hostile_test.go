package scenarios

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline/memtest"
)

// hostileDir holds the hostile YAML documents shared by every decoder's
// tests; each file's first line says what its error must say.
const hostileDir = "../tts/yamlguard/testdata/hostile"

func hostileFiles(t testing.TB) []string {
	files, err := filepath.Glob(filepath.Join(hostileDir, "*.yaml"))
	if err != nil || len(files) == 0 {
		t.Fatalf("no hostile documents in %s: %v", hostileDir, err)
	}
	return files
}

// TestLoadHostile: alias bombs (in corpus: and in expect:, which took sim
// and mock past 6 GB), deep nesting (quadratic memory in the parser) and a
// huge file are refused with the file, line and field, within bounded
// memory (not parallel: it measures allocation).
func TestLoadHostile(t *testing.T) {
	huge := filepath.Join(t.TempDir(), "huge.yaml")
	if err := os.WriteFile(huge, []byte("# want: larger than 262144 bytes\ntext: \""+strings.Repeat("a", 300<<10)+"\"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, f := range append(hostileFiles(t), huge) {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		first, _, _ := strings.Cut(string(b), "\n")
		want := strings.TrimPrefix(first, "# want: ")
		mem := memtest.Allocated(func() { _, err = Load(f) })
		if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), want) || !strings.Contains(err.Error(), f) {
			t.Errorf("%s: %v, want ErrScenario naming the file and saying %q", f, err, want)
		}
		if mem > 64<<20 {
			t.Errorf("%s: refusing it allocated %d MB", f, mem>>20)
		}
	}
}

// TestPrintedScenariosRun: every built-in scenario, printed as
// `underrun scenarios NAME` prints it into a folder of its own, loads and
// runs as it is (its corpus is a built-in file, named so).
func TestPrintedScenariosRun(t *testing.T) {
	t.Parallel()
	for _, name := range Names() {
		t.Run(name, func(t *testing.T) {
			t.Parallel()
			src, err := Source(name)
			if err != nil {
				t.Fatal(err)
			}
			mine := filepath.Join(t.TempDir(), "mine.yaml")
			if err := os.WriteFile(mine, src, 0o644); err != nil {
				t.Fatal(err)
			}
			s, err := Load(mine)
			if err != nil {
				t.Fatalf("the printed scenario does not load: %v (a built-in scenario names its files builtin:texts/NAME.txt)", err)
			}
			b, err := Builtin(name)
			if err != nil {
				t.Fatal(err)
			}
			if len(s.Setup.Gen.Texts) != len(b.Setup.Gen.Texts) || s.Turns != b.Turns {
				t.Errorf("printed: %d texts, %d turns; built in: %d texts, %d turns", len(s.Setup.Gen.Texts), s.Turns, len(b.Setup.Gen.Texts), b.Turns)
			}
			if _, err := s.Evaluate(context.Background(), RunOptions{Turns: 1, MonteCarlo: 1, Workers: 1}); err != nil {
				t.Errorf("the printed scenario does not run: %v", err)
			}
		})
	}
}

// TestBuiltinFile: builtin: names only files built in.
func TestBuiltinFile(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"builtin:texts/nope.txt", "builtin:../scenario.go", "builtin:/etc/passwd"} {
		_, err := Parse([]byte("corpus_file: "+name+"\n"), "x.yaml", nil, "")
		if !errors.Is(err, ErrScenario) || !strings.Contains(err.Error(), "corpus_file") {
			t.Errorf("%s: %v", name, err)
		}
	}
}

// FuzzRun parses any document and runs what parses for one turn and a
// one-turn Monte Carlo: no panic, and bounded memory.
func FuzzRun(f *testing.F) {
	for _, n := range Names() {
		src, err := Source(n)
		if err != nil {
			f.Fatal(err)
		}
		f.Add(src)
	}
	for _, file := range hostileFiles(f) {
		if b, err := os.ReadFile(file); err == nil && len(b) < 4096 {
			f.Add(b)
		}
	}
	for _, c := range overflowCases {
		f.Add([]byte(c.src))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		mem := memtest.Allocated(func() {
			s, err := Parse(data, "fuzz.yaml", nil, "")
			if err != nil {
				return
			}
			if _, err := s.Evaluate(context.Background(), RunOptions{Turns: 1, MonteCarlo: 1, Workers: 1}); err != nil && !errors.Is(err, ErrScenario) {
				t.Logf("run: %v", err)
			}
		})
		if mem > 1<<30 {
			t.Fatalf("%d bytes of scenario cost %d MB", len(data), mem>>20)
		}
	})
}
