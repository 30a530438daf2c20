package plot

import (
	"fmt"
	"math"
	"regexp"
	"strconv"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// hostile are the values an axis must survive: huge, tiny, subnormal,
// negative, infinite, NaN, and equal ones.
var hostile = []float64{0, 1, 1e16, -1e16, 1e300, -1e300, math.MaxFloat64, -math.MaxFloat64,
	5e-324, 1e-300, -5e-324, math.Inf(1), math.Inf(-1), math.NaN(), 1e16 + 2, 9.007199254740993e15}

// finishes runs f and fails the test if it has not returned when the
// test's deadline nears: the bugs this guards against never return.
func finishes(t *testing.T, what string, f func()) {
	t.Helper()
	done := make(chan struct{})
	go func() {
		defer close(done)
		f()
	}()
	deadline := time.After(20 * time.Second) // a guard against a hang, not a timing check
	select {
	case <-done:
	case <-deadline:
		t.Fatalf("%s never returned", what)
	}
}

// TestTicksHostile: tick functions return few, finite ticks inside the
// range for any range, and always return.
func TestTicksHostile(t *testing.T) {
	t.Parallel()
	for _, lo := range hostile {
		for _, hi := range hostile {
			for _, n := range []int{0, 1, 5, 10} {
				var lin, lg []float64
				var nm float64
				finishes(t, fmt.Sprintf("ticks(%v, %v, %d)", lo, hi, n), func() {
					lin, lg, nm = linTicks(lo, hi, n), logTicks(lo, hi), niceMax(hi, n)
				})
				// within the range but for float64 rounding
				slack := 1e-6 * max(hi/2-lo/2, math.Abs(lo), math.Abs(hi))
				for _, ts := range [][]float64{lin, lg} {
					if len(ts) > maxTicks {
						t.Errorf("(%v, %v, %d): %d ticks", lo, hi, n, len(ts))
					}
					for _, v := range ts {
						if !finite(v) || v < lo-slack || v > hi+slack {
							t.Errorf("(%v, %v, %d): tick %v outside the range", lo, hi, n, v)
						}
					}
				}
				if !finite(nm) || nm <= 0 || hi > 0 && finite(hi) && nm < hi {
					t.Errorf("niceMax(%v, %d) = %v", hi, n, nm)
				}
			}
		}
	}
}

// badCoordinates returns the first coordinate of an SVG that is not a
// finite number within reach of the figure, or "".
func badCoordinates(svg []byte) string {
	for _, m := range coordAttr.FindAllSubmatch(svg, -1) {
		for _, num := range number.FindAll(m[2], -1) {
			v, err := strconv.ParseFloat(string(num), 64)
			if err != nil || !finite(v) || math.Abs(v) > 1e5 {
				return string(m[0])
			}
		}
	}
	if m := nanOrInf.Find(svg); m != nil {
		return string(m)
	}
	return ""
}

var (
	coordAttr = regexp.MustCompile(`\b(x|y|x1|x2|y1|y2|cx|cy|r|width|height|d|points|transform)="([^"]*)"`)
	number    = regexp.MustCompile(`[-+]?(?:[0-9]*\.)?[0-9]+(?:[eE][-+]?[0-9]+)?|NaN|[-+]?Inf`)
	nanOrInf  = regexp.MustCompile(`NaN|[-+]Inf`)
)

// TestSweepHostile: the sweep fuzzer's 1e16 (whose axis looped for ever,
// memory growing) and every other hostile value draw a plot with finite
// coordinates, or are refused.
func TestSweepHostile(t *testing.T) {
	t.Parallel()
	for _, a := range hostile {
		for _, b := range append(hostile, math.NaN()) {
			for _, points := range [][]SweepPoint{{{Value: a}}, {{Value: a}, {Value: b, Goodput: 1, InterruptionsPerMinute: math.Abs(b)}}} {
				s := Sweep{Param: "x", Points: points, GoodputSLO: 0.9}
				var svg []byte
				var err error
				finishes(t, fmt.Sprintf("sweep %v", points), func() {
					var f *Figure
					if f, err = s.Figure(); err == nil {
						svg = svgOf(t, f)
					}
				})
				if err != nil {
					continue // refused: NaN, infinities
				}
				if m := badCoordinates(svg); m != "" {
					t.Errorf("sweep %v: the SVG holds %s", points, m)
				}
			}
		}
	}
}

// TestTailHostile: ITLs of 0, subnormal, huge, infinite or NaN ms draw a
// tail plot with finite coordinates.
func TestTailHostile(t *testing.T) {
	t.Parallel()
	for _, v := range hostile {
		for _, w := range []float64{v, 20, 0} {
			tl := NewTail(0)
			tl.AddITL(v)
			tl.AddITL(w)
			tl.StartTolerance = append(tl.StartTolerance, v)
			var svg []byte
			finishes(t, fmt.Sprintf("tail of %v, %v", v, w), func() { svg = svgOf(t, tl.Figure()) })
			if m := badCoordinates(svg); m != "" {
				t.Errorf("tail of %v, %v: the SVG holds %s", v, w, m)
			}
		}
	}
}

// TestTimelineAndFleetHostile: turns with chunks at zero, at one instant,
// and at the largest time a duration holds draw with finite coordinates.
func TestTimelineAndFleetHostile(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	turns := []*pipeline.Turn{
		{ID: "zero", Chunks: []pipeline.Chunk{{At: 0, Text: "a"}, {At: 0, Text: " b"}}},
		{ID: "late", Chunks: []pipeline.Chunk{{At: time.Duration(math.MaxInt64 / 4), Text: "late"}}},
		{ID: "spread", Chunks: []pipeline.Chunk{{At: 1, Text: "a"}, {At: time.Duration(math.MaxInt64 / 4), Text: " b"}}},
	}
	c := NewCollector(0, 0)
	for _, turn := range turns {
		p, err := pipeline.Play(cfg, turn)
		if err != nil {
			continue // refused by the engine: nothing to draw
		}
		c.Add(turn, p)
		tl := NewTimeline(turn, p)
		var svg []byte
		finishes(t, "timeline "+turn.ID, func() { svg = svgOf(t, tl.Figure()) })
		if m := badCoordinates(svg); m != "" {
			t.Errorf("timeline %s: the SVG holds %s", turn.ID, m)
		}
	}
	for _, f := range []*Figure{c.Fleet.Figure(), c.Tail.Figure()} {
		if m := badCoordinates(svgOf(t, f)); m != "" {
			t.Errorf("%s: the SVG holds %s", f.Title, m)
		}
	}
}

// TestBadCoordinates checks the checker.
func TestBadCoordinates(t *testing.T) {
	t.Parallel()
	for svg, bad := range map[string]bool{
		`<line x1="1" y1="2.5" x2="3e2" y2="-4"/><text x="5" y="6">1e+300</text>`: false,
		`<line x1="NaN" y1="2"/>`:          true,
		`<path d="M1 2 L 3e9 4"/>`:         true,
		`<rect x="1" y="2" width="+Inf"/>`: true,
		`<text x="1" y="2">NaN ms</text>`:  true,
	} {
		if got := badCoordinates([]byte(svg)) != ""; got != bad {
			t.Errorf("badCoordinates(%s) = %v, want %v", svg, got, bad)
		}
	}
}

// FuzzTicks: any range gets few finite ticks, and returns.
func FuzzTicks(f *testing.F) {
	for _, v := range hostile {
		f.Add(v, v, 10)
		f.Add(-v, v, 5)
	}
	f.Fuzz(func(t *testing.T, lo, hi float64, n int) {
		n = n % 100
		for _, ts := range [][]float64{linTicks(lo, hi, n), logTicks(lo, hi)} {
			if len(ts) > maxTicks {
				t.Fatalf("(%v, %v, %d): %d ticks", lo, hi, n, len(ts))
			}
			for _, v := range ts {
				if !finite(v) {
					t.Fatalf("(%v, %v, %d): tick %v", lo, hi, n, v)
				}
			}
		}
		if m := niceMax(hi, n); !finite(m) || m <= 0 {
			t.Fatalf("niceMax(%v, %d) = %v", hi, n, m)
		}
		lo2, hi2 := linRange(lo, hi, 0.03)
		if !finite(lo2, hi2) || !(hi2 > lo2) {
			t.Fatalf("linRange(%v, %v) = %v, %v", lo, hi, lo2, hi2)
		}
	})
}
