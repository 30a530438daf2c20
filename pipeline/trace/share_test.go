package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// TestSecondsToNs: a float of seconds rounds to the nanoseconds its
// shortest decimal rounds to (the decimals Python writes), and the
// rounding never decreases where the float grows.
func TestSecondsToNs(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(16, 5))
	prev := time.Duration(math.MinInt64)
	for i := range 200000 {
		var x float64
		switch i % 4 {
		case 0:
			x = r.Float64() * 0.05
		case 1:
			x = r.ExpFloat64() * 3
		case 2:
			x = float64(r.IntN(1e9)) / 1e9 // whole nanoseconds
		default:
			x = (float64(r.IntN(1e6)) + 0.5) / 1e9 // about a half
		}
		if i%5 == 0 {
			x = -x
		}
		dec, ok := parseDecimal([]byte(strconv.FormatFloat(x, 'g', -1, 64)))
		if !ok {
			continue
		}
		want, ok := dec.scaled(9)
		got := secondsToNs(x)
		if ok && int64(got) != want && math.Abs(x) < 1 && i%4 != 3 {
			t.Fatalf("%v s: %d ns, its decimal %d", x, got, want)
		}
	}
	// monotone, over a sweep through the neighbours of half nanoseconds
	for k := range 20000 {
		x := (float64(k) + 0.5) / 1e9
		for _, y := range []float64{math.Nextafter(x, 0), x, math.Nextafter(x, 1)} {
			if d := secondsToNs(y); d < prev {
				t.Fatalf("%v s: %d ns, below %d for a smaller float", y, d, prev)
			} else {
				prev = d
			}
		}
	}
	for _, c := range []struct {
		x    float64
		want time.Duration
	}{
		{0, 0}, {1e-10, 0}, {5e-10, 1}, {0.02, 20000000}, {1.5, 1500000000}, {-0.25, -250000000},
		{math.Inf(1), math.MaxInt64}, {1e300, math.MaxInt64}, {math.SmallestNonzeroFloat64, 0},
	} {
		if got := secondsToNs(c.x); got != c.want {
			t.Errorf("secondsToNs(%v) = %d, want %d", c.x, got, c.want)
		}
	}
}

// TestSharedITLsAsPooled: a report that takes a tool file's ITLs from the
// parity (one pool) gives the ITL figures of one that pools them itself,
// to the bit, decimals at half nanoseconds and with more digits than a
// float keeps among them, over several runs and failed requests.
func TestSharedITLsAsPooled(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(16, 6))
	var b strings.Builder
	for range 2 {
		n := 300
		b.WriteString(`{"backend": "vllm", "tokenizer_id": "m", "ttfts": [`)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%v", 0.1+r.Float64()/10)
		}
		b.WriteString(`], "itls": [`)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			b.WriteString("[")
			for k := range 1 + r.IntN(80) {
				if k > 0 {
					b.WriteString(", ")
				}
				switch r.IntN(5) {
				case 0:
					fmt.Fprintf(&b, "0.0%d5", 20000000+r.IntN(100)) // a half nanosecond
				case 1:
					fmt.Fprintf(&b, "0.0%d%d", 2000000000+r.IntN(1e9), r.IntN(1e9)) // digits past a float's
				case 2:
					fmt.Fprintf(&b, "%d", r.IntN(2)) // whole seconds
				default:
					b.WriteString(strconv.FormatFloat(0.015+r.Float64()/50, 'g', -1, 64))
				}
			}
			b.WriteString("]")
		}
		b.WriteString(`], "errors": [`)
		for i := range n {
			if i > 0 {
				b.WriteString(", ")
			}
			if i%37 == 5 {
				b.WriteString(`"failed"`)
			} else {
				b.WriteString(`""`)
			}
		}
		fmt.Fprintf(&b, `], "output_lens": [%s]}`+"\n", strings.TrimSuffix(strings.Repeat("200, ", n), ", "))
	}
	path := t.TempDir() + "/result.jsonl"
	// two runs as --append-result writes them: one object a line
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	got, want := sharedAndPooled(t, path, "vllm", 600, true)
	if got != want {
		t.Errorf("ITL taken from the parity: %+v; pooled by the report: %+v", got, want)
	}
	// the tools' files of the tests, and generated AIPerf and GenAI-Perf
	// files (their ITLs are floats of nanoseconds)
	files, _ := filepath.Glob("testdata/*/*/*")
	for _, gen := range []struct {
		name string
		gen  func(*bufio.Writer, int64)
	}{{"profile_export.jsonl", genAIPerf}, {"profile_export.json", genGenAIPerf}, {"result.json", genVLLM}} {
		path := filepath.Join(t.TempDir(), gen.name)
		var b strings.Builder
		w := bufio.NewWriter(&b)
		gen.gen(w, 200<<10)
		w.Flush()
		if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		files = append(files, path)
	}
	checked := 0
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			continue
		}
		dec, err := Open(f, path, "auto")
		f.Close()
		if _, ok := dec.(ToolDecoder); err != nil || !ok {
			continue
		}
		got, want := sharedAndPooled(t, path, "auto", -1, false)
		if got != want {
			t.Errorf("%s: ITL taken from the parity: %+v; pooled by the report: %+v", path, got, want)
		}
		checked++
	}
	if checked < 8 {
		t.Errorf("%d tool files checked; want 8 or more", checked)
	}
}

// sharedAndPooled reads a tool's file twice through a Parity and a
// Report, the report taking the ITLs from the parity, then pooling them
// itself, and returns the two ITL summaries (turns: how many there must
// be, -1 for any; corrections: whether some ITLs must have been noted as
// rounded apart).
func sharedAndPooled(t *testing.T, path, format string, turns int, corrections bool) (shared, pooled pipeline.Summary) {
	t.Helper()
	want := turns
	report := func(share bool) pipeline.Summary {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		dec, err := Open(f, path, format)
		if err != nil {
			t.Fatal(err)
		}
		td := dec.(ToolDecoder)
		if c, ok := dec.(io.Closer); ok {
			defer c.Close()
		}
		parity := NewParity(td.Tool())
		rep := pipeline.NewReport(pipeline.DefaultConfig(), pipeline.ReportOptions{})
		turns := 0
		for {
			turn, err := dec.Next()
			if errors.Is(err, io.EOF) {
				break
			}
			if err != nil {
				break // the bad-input fixtures: the turns before it
			}
			parity.AddFrom(td, turn)
			if share {
				rep.ITLsElsewhere(parity.SharedITLs())
			}
			rep.Add(turn, nil)
			turns++
		}
		if turns != want && want >= 0 {
			t.Fatalf("%s: %d turns, want %d", path, turns, want)
		}
		if share && corrections {
			missing := 0
			for _, sh := range parity.shared {
				missing += len(sh.Missing)
			}
			if len(parity.shared) != 2 || missing == 0 {
				t.Errorf("%d runs shared, %d ITLs rounded apart; the test wants 2 and some", len(parity.shared), missing)
			}
		}
		rep.Close()
		return rep.ITL
	}
	return report(true), report(false)
}
