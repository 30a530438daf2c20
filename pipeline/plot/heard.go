package plot

import (
	"fmt"
	"math"
	"time"
)

// Waveform is a recording to draw with the silences found in it.
type Waveform struct {
	// Min and Max are the recording's lowest and highest sample in each
	// span of Step (its envelope; one channel), and Duration its length.
	Min, Max []float32
	Step     time.Duration
	Duration time.Duration
	// Threshold is the level (dBFS) under which the detector took a frame
	// for silence, drawn as a band around zero.
	Threshold float64
	// Marks are the silences found, in order.
	Marks []WaveMark
}

// WaveMark is one silence of a Waveform: the voice's own pause, or (Gap)
// an underrun whose gap lies from GapStart to GapEnd (the silence's end
// when GapEnd is zero).
type WaveMark struct {
	Start, End       time.Duration
	GapStart, GapEnd time.Duration
	Gap              bool
	Label            string
}

// waveHeight is the height of the waveform panel.
const waveHeight = 260.0

// HeardFigure draws a recording's waveform with its silences marked (the
// voice's pauses grey, the underruns' gaps vermillion) above the timeline
// of each turn as the engine plays it with the gaps heard; bases are where
// each turn's request lies in the recording, marked on the waveform.
func HeardFigure(w Waveform, turns []Timeline, bases []time.Duration) *Figure {
	const (
		W           = TimelineWidth
		left, right = 110.0, 30.0
		top, panelH = 60.0, 150.0
	)
	f := NewFigure(W, waveHeight, "recording with the gaps heard")
	dur := w.Duration.Seconds()
	x := scale{lo: 0, hi: niceMax(max(dur, 0.001), 10), p0: left, p1: W - right}
	mid := top + panelH/2
	amp := panelH / 2
	gaps, pauses := 0, 0
	for _, m := range w.Marks {
		if m.Gap {
			gaps++
		} else {
			pauses++
		}
	}
	f.Text(left, 24, "The recording: its waveform, the voice's own pauses and the gaps heard", titleText)
	f.Text(left, 44, fmt.Sprintf("%.1f s; %s, %s", dur, plural(gaps, "gap"), nouns(pauses, "pause of the voice", "pauses of the voice")), axisText)
	// silences behind the waveform
	for i, m := range w.Marks {
		x0, x1 := x.at(m.Start.Seconds()), x.at(m.End.Seconds())
		f.Rect(x0, top, max(1, x1-x0), panelH, solid(gridGrey), &Meta{Class: "pause", Title: fmt.Sprintf("silence %d: %s, %.0f ms at %.0f ms", i+1, m.Label, ms(m.End-m.Start), ms(m.Start))})
		if m.Gap {
			end := m.GapEnd
			if end == 0 {
				end = m.End
			}
			g0, g1 := x.at(m.GapStart.Seconds()), x.at(end.Seconds())
			f.Rect(g0, top, max(2, g1-g0), panelH, solid(Vermillion), &Meta{Class: "gap", Title: fmt.Sprintf("gap %.0f ms at %.0f ms (%s)", ms(end-m.GapStart), ms(m.GapStart), m.Label),
				Data: [][2]string{{"start-ms", fmt.Sprintf("%.1f", ms(m.GapStart))}, {"length-ms", fmt.Sprintf("%.1f", ms(end-m.GapStart))}}})
		}
	}
	// the envelope, one min/max pair per pixel column
	cols := int(x.p1 - x.p0)
	n := min(len(w.Min), len(w.Max))
	if cols > 0 && n > 0 && dur > 0 && w.Step > 0 {
		upper := make([]float64, 0, 2*cols)
		lower := make([]float64, 0, 2*cols)
		step := w.Step.Seconds()
		for c := range cols {
			t0, t1 := x.lo+(x.hi-x.lo)*float64(c)/float64(cols), x.lo+(x.hi-x.lo)*float64(c+1)/float64(cols)
			i0, i1 := int(t0/step), min(n, int(t1/step))
			if i0 >= n {
				break
			}
			lo, hi := 0.0, 0.0
			for i := i0; i < max(i1, i0+1); i++ {
				lo, hi = min(lo, float64(w.Min[i])), max(hi, float64(w.Max[i]))
			}
			px := x.p0 + float64(c)
			upper = append(upper, px, mid-hi*amp)
			lower = append(lower, px, mid-lo*amp)
		}
		pts := upper
		for i := len(lower) - 2; i >= 0; i -= 2 {
			pts = append(pts, lower[i], lower[i+1])
		}
		f.Path(pts, true, Style{Fill: Blue}, &Meta{Class: "waveform"})
	}
	if th := math.Pow(10, w.Threshold/20); th > 0 && th < 1 {
		f.Rect(x.p0, mid-th*amp, x.p1-x.p0, max(0.5, 2*th*amp), Style{Stroke: grey, Width: 0.5, Dash: []float64{3, 3}}, &Meta{Class: "threshold"})
	}
	for i, b := range bases {
		bx := x.at(b.Seconds())
		f.Line(bx, top-6, bx, top+panelH, stroke(Black, 1, 4, 3))
		if i < len(turns) {
			f.Text(bx+3, top-8, "turn "+turns[i].Turn, axisText)
		}
	}
	f.xAxis(x, top+panelH, top+panelH, linTicks(x.lo, x.hi, 10), tickLabel, "seconds of the recording")
	for _, tl := range turns {
		f.place(tl.Figure())
	}
	return f
}

// place draws g below what f holds, and grows f to hold it.
func (f *Figure) place(g *Figure) {
	dy := f.Height
	for _, e := range g.els {
		switch e.kind {
		case kindRect, kindText:
			e.y += dy
		case kindPath:
			pts := make([]float64, len(e.pts))
			copy(pts, e.pts)
			for i := 1; i < len(pts); i += 2 {
				pts[i] += dy
			}
			e.pts = pts
		}
		f.els = append(f.els, e)
	}
	f.Width = max(f.Width, g.Width)
	f.Height += g.Height
}

func ms(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
