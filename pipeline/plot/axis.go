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
	if s.log {
		if v <= 0 {
			return s.p0
		}
		return s.p0 + (math.Log10(v)-math.Log10(s.lo))/(math.Log10(s.hi)-math.Log10(s.lo))*(s.p1-s.p0)
	}
	if s.hi == s.lo {
		return s.p0
	}
	return s.p0 + (v-s.lo)/(s.hi-s.lo)*(s.p1-s.p0)
}

// clampPx keeps a pixel inside the scale's range.
func (s scale) clampPx(p float64) float64 {
	lo, hi := min(s.p0, s.p1), max(s.p0, s.p1)
	return min(max(p, lo), hi)
}

// niceStep returns a step of 1, 2 or 5 times a power of ten giving about n
// intervals over span.
func niceStep(span float64, n int) float64 {
	if span <= 0 || n <= 0 {
		return 1
	}
	raw := span / float64(n)
	mag := math.Pow(10, math.Floor(math.Log10(raw)))
	for _, m := range []float64{1, 2, 2.5, 5, 10} {
		if m*mag >= raw {
			return m * mag
		}
	}
	return 10 * mag
}

// niceMax rounds v up to a multiple of its nice step.
func niceMax(v float64, n int) float64 {
	if v <= 0 {
		return 1
	}
	st := niceStep(v, n)
	return math.Ceil(v/st-1e-9) * st
}

// linTicks returns the multiples of a nice step inside [lo, hi].
func linTicks(lo, hi float64, n int) []float64 {
	st := niceStep(hi-lo, n)
	var ts []float64
	for k := math.Ceil(lo/st - 1e-9); k <= math.Floor(hi/st+1e-9); k++ {
		v, _ := strconv.ParseFloat(strconv.FormatFloat(k*st, 'g', 12, 64), 64)
		ts = append(ts, v+0) // +0 turns -0 into 0
	}
	return ts
}

// logTicks returns the powers of ten inside [lo, hi].
func logTicks(lo, hi float64) []float64 {
	var ts []float64
	for e := math.Floor(math.Log10(lo)); e <= math.Ceil(math.Log10(hi)); e++ {
		v := math.Pow(10, e)
		if v >= lo*(1-1e-9) && v <= hi*(1+1e-9) {
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
