package plot

import (
	"image/color"
	"math"
	"strconv"
)

// scale maps data values in [lo, hi] to pixels in [p0, p1], linearly or by
// logarithm (lo > 0).
type scale struct {
	lo, hi float64
	p0, p1 float64
	log    bool
}

func (s scale) at(v float64) float64 {
	var frac float64
	if s.log {
		if !(v > 0) || !(s.lo > 0) {
			return s.p0
		}
		frac = (math.Log10(v) - math.Log10(s.lo)) / (math.Log10(s.hi) - math.Log10(s.lo))
	} else {
		// halves: the span of two finite extremes may overflow
		frac = (v/2 - s.lo/2) / (s.hi/2 - s.lo/2)
	}
	if math.IsNaN(frac) || math.IsInf(frac, 0) {
		return s.p0 // NaN, or a range of no width
	}
	// far outside the range is drawn just outside it, never at an
	// infinite pixel
	frac = min(max(frac, -1), 2)
	return s.p0 + frac*(s.p1-s.p0)
}

// finite reports whether every value is a number other than an infinity.
func finite(vs ...float64) bool {
	for _, v := range vs {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return false
		}
	}
	return true
}

// linRange returns a range of positive width around the values in [lo,
// hi], padded by pad of its width on both sides: equal values get a range
// around them of their own magnitude (1e16 alone: 1e16 ± 5e14), never one
// that float64 cannot tell from a point. Infinities and NaN are not values:
// without any finite one, the range is [0, 1].
func linRange(lo, hi, pad float64) (float64, float64) {
	if !finite(lo, hi) || hi < lo {
		return 0, 1
	}
	if hi == lo {
		d := max(math.Abs(lo)*0.05, 1)
		lo, hi = lo-d, hi+d
	}
	w := hi/2 - lo/2 // half the width, which cannot overflow
	lo, hi = lo-2*w*pad, hi+2*w*pad
	if !finite(lo, hi) {
		lo, hi = -math.MaxFloat64, math.MaxFloat64
	}
	return lo, hi
}

// clampPx keeps a pixel inside the scale's range.
func (s scale) clampPx(p float64) float64 {
	lo, hi := min(s.p0, s.p1), max(s.p0, s.p1)
	return min(max(p, lo), hi)
}

// niceStep returns a step of 1, 2 or 5 times a power of ten giving about n
// intervals over span (1 for a span that is not a positive finite number).
func niceStep(span float64, n int) float64 {
	if !(span > 0) || math.IsInf(span, 0) || n <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	if !(mag > 0) {
		return raw // subnormal: below every power of ten float64 holds
	}
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// niceMax rounds v up to a multiple of its nice step (1 for a v that is not
// a positive number; the largest float64 for an infinite one).
func niceMax(v float64, n int) float64 {
	switch {
	case !(v > 0):
		return 1
	case math.IsInf(v, 1):
		return math.MaxFloat64
	}
	st := niceStep(v, n)
	if m := math.Ceil(v/st-1e-9) * st; finite(m) {
		return max(m, v) // never below v by rounding
	}
	return v
}

// maxTicks bounds the ticks of any axis, whatever its range.
const maxTicks = 64

// linTicks returns the multiples of a nice step inside [lo, hi]: about n
// of them, never more than maxTicks. A range too narrow for its magnitude
// (no step float64 can add) or not finite gets its ends alone.
func linTicks(lo, hi float64, n int) []float64 {
	if !finite(lo, hi) || hi < lo {
		return nil
	}
	if hi == lo {
		return []float64{lo}
	}
	st := niceStep(hi-lo, n)
	if math.IsInf(hi-lo, 0) {
		st = 2 * niceStep(hi/2-lo/2, n) // the width overflows float64
	}
	k0, k1 := math.Ceil(lo/st-1e-9), math.Floor(hi/st+1e-9)
	if !finite(st, k0, k1) || k1-k0+1 > maxTicks || k0+1 == k0 || k1-1 == k1 {
		return []float64{lo, hi}
	}
	var ts []float64
	for i := 0.0; k0+i <= k1; i++ {
		v, _ := strconv.ParseFloat(strconv.FormatFloat((k0+i)*st, 'g', 12, 64), 64)
		ts = append(ts, v+0) // +0 turns -0 into 0
	}
	return ts
}

// logTicks returns the powers of ten inside [lo, hi] (lo > 0), every one
// while there are few, else every second, fifth, ... power, never more
// than maxTicks.
func logTicks(lo, hi float64) []float64 {
	if !(lo > 0) || !finite(lo, hi) || hi < lo {
		return nil
	}
	e0, e1 := math.Floor(math.Log10(lo)), math.Ceil(math.Log10(hi))
	step := math.Ceil((e1 - e0 + 1) / maxTicks)
	if (e1-e0+1)/step > 12 {
		step = niceStep(e1-e0, 10)
		step = max(1, math.Round(step))
	}
	var ts []float64
	for e := math.Ceil(e0/step) * step; e <= e1; e += step {
		v := math.Pow(10, e)
		if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) && finite(v) && v > 0 {
			ts = append(ts, v)
		}
	}
	return ts
}

// tickLabel formats a tick value with no more digits than it needs.
func tickLabel(v float64) string {
	if v == 0 {
		return "0"
	}
	v, _ = strconv.ParseFloat(strconv.FormatFloat(v, 'g', 10, 64), 64)
	a := math.Abs(v)
	switch {
	case a >= 1e6 || a < 1e-4:
		return strconv.FormatFloat(v, 'g', 3, 64)
	default:
		return strconv.FormatFloat(v, 'f', -1, 64)
	}
}

// percentLabel formats a fraction of one as a percentage tick.
func percentLabel(v float64) string {
	return tickLabel(v*100) + "%"
}

var (
	axisText  = TextStyle{Size: 11, Color: textGrey}
	labelText = TextStyle{Size: 12, Color: Black}
	titleText = TextStyle{Size: 15, Color: Black, Bold: true}
	noteText  = TextStyle{Size: 11, Color: textGrey}
	frame     = Style{Stroke: grey}
	grid      = Style{Stroke: gridGrey}
)

// xAxis draws ticks, labels and grid lines of a horizontal axis at pixel
// row y, the grid reaching up to top.
func (f *Figure) xAxis(s scale, y, top float64, ticks []float64, format func(float64) string, label string) {
	f.Line(s.p0, y, s.p1, y, frame)
	ts := axisText
	ts.Anchor = AnchorMiddle
	for _, v := range ticks {
		x := s.at(v)
		if top < y {
			f.Line(x, top, x, y, grid)
		}
		f.Line(x, y, x, y+4, frame)
		f.Text(x, y+16, format(v), ts)
	}
	if label != "" {
		ls := labelText
		ls.Anchor = AnchorMiddle
		f.Text((s.p0+s.p1)/2, y+34, label, ls)
	}
}

// yAxis draws ticks, labels and grid lines of a vertical axis at pixel
// column x, the grid reaching right to right.
func (f *Figure) yAxis(s scale, x, right float64, ticks []float64, format func(float64) string, label string) {
	f.Line(x, s.p0, x, s.p1, frame)
	ts := axisText
	ts.Anchor = AnchorEnd
	width := 0.0
	for _, v := range ticks {
		y := s.at(v)
		if right > x {
			f.Line(x, y, right, y, grid)
		}
		f.Line(x-4, y, x, y, frame)
		t := format(v)
		f.Text(x-7, y+4, t, ts)
		width = max(width, textWidth(t, ts.Size, false))
	}
	if label != "" {
		ls := labelText
		ls.Anchor = AnchorMiddle
		ls.Vertical = true
		f.Text(x-width-16, (s.p0+s.p1)/2, label, ls)
	}
}

// legendItem is one entry of a legend: a swatch and its label.
type legendItem struct {
	label string
	style Style
	// line draws the swatch as a line (in style.Stroke), else as a box.
	line bool
	// tick draws it as a short vertical tick.
	tick bool
}

// legend lays the items out in rows from (x, y) within width and returns
// the height used.
func (f *Figure) legend(x, y, width float64, items []legendItem) float64 {
	const row, sw, gap = 18.0, 18.0, 16.0
	cx, cy := x, y
	for _, it := range items {
		w := sw + 5 + textWidth(it.label, axisText.Size, false)
		if cx > x && cx+w > x+width {
			cx, cy = x, cy+row
		}
		mid := cy + row/2
		switch {
		case it.tick:
			f.Line(cx+sw/2, mid-6, cx+sw/2, mid+6, it.style)
		case it.line:
			f.Line(cx, mid, cx+sw, mid, it.style)
		default:
			f.Rect(cx, mid-6, sw, 12, it.style, nil)
		}
		f.Text(cx+sw+5, mid+4, it.label, axisText)
		cx += w + gap
	}
	return cy + row - y
}

// solid is a filled box style.
func solid(c color.NRGBA) Style { return Style{Fill: c} }

// stroke is a line style.
func stroke(c color.NRGBA, w float64, dash ...float64) Style {
	return Style{Stroke: c, Width: w, Dash: dash}
}
