package plot

import (
	"fmt"
	"math"
	"slices"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// DefaultStartWindow is how long after the player starts a turn's stall
// tolerance counts as "at the start of the turn", where the buffer is thin.
const DefaultStartWindow = 2 * time.Second

// Tail accumulates inter-token latencies and stall tolerances for the tail
// plot. It keeps every ITL up to exactLimit values, then folds them into
// fine logarithmic bins (binsPerDecade), so memory stays bounded for any
// number of turns. The zero Tail is not ready; use NewTail.
type Tail struct {
	// Window is how long after the player starts counts as the start of a
	// turn.
	Window time.Duration
	// StartTolerance and SteadyTolerance hold, per turn, the smallest
	// finite stall tolerance (ms) in the start window and after it.
	StartTolerance, SteadyTolerance []float64

	exact    []float64
	bins     []int64
	zero     int64
	n        int64
	min, max float64
}

// The tail figure's frame, in pixels.
const (
	tailWidth                = 1100
	tailLeft, tailRight      = 110.0, 40.0
	tailPanelTop, tailPanelH = 70.0, 330.0
)

const (
	exactLimit    = 20000
	binsPerDecade = 50
	binFloor      = -3 // 1 µs, in log10 ms
	binDecades    = 10 // up to 10^7 ms
)

// NewTail returns an empty Tail with the given start window (0:
// DefaultStartWindow).
func NewTail(window time.Duration) *Tail {
	if window <= 0 {
		window = DefaultStartWindow
	}
	return &Tail{Window: window, min: math.Inf(1)}
}

// Count returns the number of ITLs added.
func (t *Tail) Count() int64 { return t.n }

// AddITL adds one inter-token latency in milliseconds.
func (t *Tail) AddITL(ms float64) {
	if !(ms >= 0) || math.IsInf(ms, 1) {
		return // NaN, negative or infinite: not a latency
	}
	t.n++
	t.max = max(t.max, ms)
	if ms > 0 {
		t.min = min(t.min, ms)
	}
	if t.bins == nil {
		t.exact = append(t.exact, ms)
		if len(t.exact) > exactLimit {
			t.bins = make([]int64, binsPerDecade*binDecades)
			for _, v := range t.exact {
				t.bin(v)
			}
			t.exact = nil
		}
		return
	}
	t.bin(ms)
}

func (t *Tail) bin(ms float64) {
	if ms <= 0 {
		t.zero++
		return
	}
	i := int(math.Floor((math.Log10(ms) - binFloor) * binsPerDecade))
	t.bins[min(max(i, 0), len(t.bins)-1)]++
}

// Add accounts the ITLs of a turn and the stall tolerances of its playout
// (p may be nil).
func (t *Tail) Add(turn *pipeline.Turn, p *pipeline.Playout) {
	for i := 1; i < len(turn.Chunks); i++ {
		t.AddITL(pipeline.Millis(turn.Chunks[i].At - turn.Chunks[i-1].At))
	}
	if p == nil {
		return
	}
	start, ok := p.Started()
	if !ok {
		return
	}
	s, st := math.Inf(1), math.Inf(1)
	for k, tol := range p.Tolerance {
		if tol == pipeline.Unbounded || k >= len(turn.Chunks) || turn.Chunks[k].At < start {
			continue
		}
		if turn.Chunks[k].At < start+t.Window {
			s = min(s, pipeline.Millis(tol))
		} else {
			st = min(st, pipeline.Millis(tol))
		}
	}
	if !math.IsInf(s, 1) {
		t.StartTolerance = append(t.StartTolerance, s)
	}
	if !math.IsInf(st, 1) {
		t.SteadyTolerance = append(t.SteadyTolerance, st)
	}
}

// CCDF returns the points (ITL ms, fraction of ITLs >= it) of the
// empirical complementary CDF, for positive ITLs, in ascending ITL order.
// Past exactLimit ITLs a point stands for a bin (1/50 of a decade wide)
// and sits at its upper edge, the largest ITL exactly.
func (t *Tail) CCDF() []float64 {
	if t.n == 0 {
		return nil
	}
	n := float64(t.n)
	var out []float64
	if t.bins == nil {
		v := slices.Clone(t.exact)
		slices.Sort(v)
		for i := 0; i < len(v); i++ {
			if i > 0 && v[i] == v[i-1] {
				continue
			}
			if v[i] > 0 {
				out = append(out, v[i], float64(len(v)-i)/n)
			}
		}
		return out
	}
	above := t.n - t.zero
	for i, c := range t.bins {
		if c == 0 {
			continue
		}
		out = append(out, t.binValue(i), float64(above)/n)
		above -= c
	}
	return out
}

// binValue is the ITL that stands for every value in bin i: the bin's
// upper edge, or the largest ITL in the bin that holds it, so that
// Exceeding and CCDF count a bin alike.
func (t *Tail) binValue(i int) float64 {
	if i == len(t.bins)-1 {
		return t.max
	}
	return min(math.Pow(10, float64(i+1)/binsPerDecade+binFloor), t.max)
}

// Exceeding returns the fraction of ITLs at or above ms: the fraction the
// CCDF curve shows at ms (past exactLimit ITLs, to the bin).
func (t *Tail) Exceeding(ms float64) float64 {
	if t.n == 0 {
		return 0
	}
	var c int64
	if t.bins == nil {
		for _, v := range t.exact {
			if v >= ms {
				c++
			}
		}
		return float64(c) / float64(t.n)
	}
	if ms <= 0 {
		return 1
	}
	for i, b := range t.bins {
		if b > 0 && t.binValue(i) >= ms {
			c += b
		}
	}
	return float64(c) / float64(t.n)
}

// median returns the median of v (NaN when empty).
func median(v []float64) float64 {
	s := slices.Clone(v)
	slices.Sort(s)
	return pipeline.Percentile(s, 50)
}

// Figure draws the ITL distribution as a complementary CDF on log-log
// axes with the stall tolerance at the start of a turn and in steady state
// drawn on it: ITLs right of a tolerance line are long enough to be heard.
func (t *Tail) Figure() *Figure {
	const (
		W, left, panelTop, panelH = tailWidth, tailLeft, tailPanelTop, tailPanelH
	)
	f := NewFigure(W, 520, "ITL tail against the stall tolerance")
	f.Text(left, 24, "Inter-token latency tail and the stall tolerance", titleText)
	pts := t.CCDF()
	startTol, steadyTol := median(t.StartTolerance), median(t.SteadyTolerance)
	f.Text(left, 44, fmt.Sprintf("%s; an ITL beyond the tolerance where it happens becomes an audible gap (tolerances: median over turns of each turn's tightest point, often just after a gap; an underrun's own tolerance is the slack before it)", plural(int(t.n), "ITL")), noteText)
	x, y := t.scales(pts, startTol, steadyTol)
	panelBottom := y.p0
	type tolLine struct {
		name  string
		ms    float64
		count int
		c     Style
	}
	lines := []tolLine{
		{fmt.Sprintf("tightest stall tolerance in the first %v of audio", t.Window), startTol, len(t.StartTolerance), stroke(Vermillion, 2)},
		{"tightest stall tolerance after it", steadyTol, len(t.SteadyTolerance), stroke(Blue, 2, 7, 4)},
	}
	// audible region beyond the start-up tolerance
	for _, l := range lines[:1] {
		if l.count > 0 {
			px := x.clampPx(x.at(max(l.ms, x.lo)))
			f.Rect(px, panelTop, x.p1-px, panelH, Style{Fill: alpha(Vermillion, 0.08)},
				&Meta{Class: "audible", Title: "ITLs here are long enough to be heard if they fall at the start of a turn"})
		}
	}
	f.xAxis(x, panelBottom, panelTop, logTicks(x.lo, x.hi), tickLabel, "inter-token latency (ms, log scale)")
	f.yAxis(y, left, x.p1, logTicks(y.lo, 1), percentTick, "fraction of ITLs ≥ x (log scale)")

	if path := ccdfPath(pts, x, y); path != nil {
		f.Path(path, false, stroke(Black, 1.8), &Meta{Class: "ccdf", Title: "empirical complementary CDF of ITL"})
	}
	for i, l := range lines {
		if l.count == 0 {
			continue
		}
		px := x.clampPx(x.at(max(l.ms, x.lo)))
		f.Line(px, panelTop, px, panelBottom, l.c)
		share := t.Exceeding(l.ms)
		ts := TextStyle{Size: 11, Color: darker(l.c.Stroke), Bold: true}
		label := fmt.Sprintf("tightest %s %s: %.3g%% of ITLs reach it", []string{"at start", "in steady state"}[i], fmtDur(time.Duration(l.ms*float64(time.Millisecond))), 100*share)
		if l.ms <= 0 {
			label = fmt.Sprintf("%s 0 ms: the stream is already behind, every extra delay is heard", []string{"at start", "in steady state"}[i])
		}
		if px+8+textWidth(label, 11, true) > x.p1 {
			ts.Anchor = AnchorEnd
			f.Text(px-6, panelTop+16+float64(i)*16, label, ts)
		} else {
			f.Text(px+6, panelTop+16+float64(i)*16, label, ts)
		}
	}
	items := []legendItem{{label: "ITL complementary CDF", style: stroke(Black, 1.8), line: true}}
	for _, l := range lines {
		if l.count > 0 {
			items = append(items, legendItem{label: fmt.Sprintf("%s, %d turns", l.name, l.count), style: l.c, line: true})
		}
	}
	items = append(items, legendItem{label: "audible if at turn start", style: solid(alpha(Vermillion, 0.15))})
	top := panelBottom + 46
	f.Height = top + f.legend(left, top, x.p1-left, items) + 10
	return f
}

// scales returns the tail figure's axes for its CCDF points pts: ITL (ms)
// across, from the decade below the smallest ITL or tolerance to the one
// above the largest, and the fraction of ITLs down to the decade below one
// ITL in all of them.
func (t *Tail) scales(pts []float64, tolerances ...float64) (x, y scale) {
	lo, hi := 1.0, 1000.0
	if len(pts) > 0 {
		lo, hi = min(pts[0], t.min), pts[len(pts)-2]
	}
	for _, v := range tolerances {
		if v > 0 {
			lo, hi = min(lo, v), max(hi, v)
		}
	}
	lo = math.Pow(10, math.Floor(math.Log10(lo)))
	hi = math.Pow(10, math.Ceil(math.Log10(hi*1.0001)))
	if math.IsInf(hi, 1) {
		hi = 1e308 // the largest power of ten float64 holds
	}
	if hi <= lo {
		hi = lo * 10
	}
	ylo := 1.0
	if t.n > 0 {
		ylo = math.Pow(10, math.Floor(math.Log10(1/float64(t.n))))
	}
	if ylo >= 1 {
		ylo = 0.1
	}
	x = scale{lo: lo, hi: hi, p0: tailLeft, p1: tailWidth - tailRight, log: true}
	y = scale{lo: ylo, hi: 1, p0: tailPanelTop + tailPanelH, p1: tailPanelTop, log: true}
	return x, y
}

// ccdfPath draws the CCDF points (ITL, fraction of ITLs at or above it) as
// a step curve on the scales: the fraction at or above x is that of the
// first point at or right of x, so the curve holds each point's fraction
// up to its ITL and drops there to the next point's, and after the largest
// ITL to the bottom. Points that share a pixel column drop together at the
// column's last one, so the path has at most a few points per column.
func ccdfPath(pts []float64, x, y scale) []float64 {
	if len(pts) < 2 {
		return nil
	}
	level := y.at(pts[1])
	path := make([]float64, 0, len(pts)*2+4)
	path = append(path, x.p0, level)
	for i := 0; i+1 < len(pts); i += 2 {
		px := x.at(pts[i])
		if i+3 < len(pts) && math.Floor(x.at(pts[i+2])) == math.Floor(px) {
			continue
		}
		next := y.p0
		if i+3 < len(pts) {
			next = y.at(pts[i+3])
		}
		path = append(path, px, level, px, next)
		level = next
	}
	return path
}

// percentTick labels a fraction on a log axis as a percentage.
func percentTick(v float64) string {
	return tickLabel(v*100) + "%"
}
