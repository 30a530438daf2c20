package plot

import (
	"cmp"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"slices"
)

// SweepPoint is the outcome of one run of a sweep.
type SweepPoint struct {
	// Value is the swept setting (for example a TPOT in ms).
	Value float64 `json:"value"`
	// InterruptionsPerMinute is the interruption rate per minute of speech.
	InterruptionsPerMinute float64 `json:"interruptions_per_minute"`
	// Goodput is the speech goodput: the fraction (0..1) of turns with no
	// interruption.
	Goodput float64 `json:"speech_goodput"`
}

// Sweep is what a sweep plot shows: a simulation or analysis run once per
// value of one setting.
type Sweep struct {
	// Param names the swept setting ("TPOT", "TTS latency"); Unit is its
	// unit ("ms").
	Param string `json:"param"`
	Unit  string `json:"unit"`
	// Points are the runs, in any order.
	Points []SweepPoint `json:"points"`
	// GoodputSLO is the speech goodput every safe value must reach (0..1),
	// drawn as the SLO line; zero draws none.
	GoodputSLO float64 `json:"goodput_slo"`
	// Increasing is set for a setting that gets safer as it grows (a
	// pre-roll): the plot then marks the smallest safe value.
	Increasing bool `json:"increasing,omitempty"`
	// Safe is the largest (Increasing: smallest) safe value, marked on
	// the plot when HasSafe; when HasSafe is false and GoodputSLO is set,
	// SafeLimit computes it.
	Safe    float64 `json:"safe"`
	HasSafe bool    `json:"has_safe"`
}

// ErrSweep reports a sweep that cannot be plotted.
var ErrSweep = errors.New("invalid sweep")

// Validate reports the first problem with the sweep.
func (s *Sweep) Validate() error {
	if len(s.Points) == 0 {
		return fmt.Errorf("%w: no points", ErrSweep)
	}
	for i, p := range s.Points {
		switch {
		case math.IsNaN(p.Value) || math.IsInf(p.Value, 0):
			return fmt.Errorf("%w: point %d: value must be finite, got %v", ErrSweep, i, p.Value)
		case !(p.Goodput >= 0 && p.Goodput <= 1):
			return fmt.Errorf("%w: point %d: speech goodput must be in [0, 1], got %v", ErrSweep, i, p.Goodput)
		case !(p.InterruptionsPerMinute >= 0) || math.IsInf(p.InterruptionsPerMinute, 0):
			return fmt.Errorf("%w: point %d: interruptions per minute must be finite and >= 0, got %v", ErrSweep, i, p.InterruptionsPerMinute)
		}
	}
	if !(s.GoodputSLO >= 0 && s.GoodputSLO <= 1) {
		return fmt.Errorf("%w: goodput SLO must be in [0, 1], got %v", ErrSweep, s.GoodputSLO)
	}
	return nil
}

// SafeLimit returns the largest swept value at which the speech goodput
// meets slo, with every smaller value meeting it too (settings such as TPOT
// get worse as they grow); with increasing set, the smallest value meeting
// it with every larger one too (a pre-roll). ok is false when no value
// does.
func SafeLimit(points []SweepPoint, slo float64, increasing bool) (v float64, ok bool) {
	ps := slices.Clone(points)
	sortPoints(ps)
	return safeLimitSorted(ps, slo, increasing)
}

// sortPoints sorts points by value, in place.
func sortPoints(ps []SweepPoint) {
	slices.SortStableFunc(ps, func(a, b SweepPoint) int { return cmp.Compare(a.Value, b.Value) })
}

// safeLimitSorted is SafeLimit of points sorted by value.
func safeLimitSorted(ps []SweepPoint, slo float64, increasing bool) (v float64, ok bool) {
	for i := range ps {
		p := ps[i]
		if increasing {
			p = ps[len(ps)-1-i]
		}
		if p.Goodput < slo {
			break
		}
		v, ok = p.Value, true
	}
	return v, ok
}

// MaxSweepPoints is the most points ReadSweep takes: 100 MB of them.
const MaxSweepPoints = 1 << 22

// ReadSweep reads a sweep's JSON (Sweep's fields) from r as it streams:
// the points are decoded one by one into 24 bytes each, never the file
// held whole, so a sweep of millions of runs reads in proportion to its
// points (at most MaxSweepPoints). A field Sweep does not have is an
// error, as is a point that is not a SweepPoint.
func ReadSweep(r io.Reader) (*Sweep, error) {
	dec := json.NewDecoder(r)
	dec.DisallowUnknownFields()
	if err := expectDelim(dec, '{', "a JSON object"); err != nil {
		return nil, err
	}
	var s Sweep
	for dec.More() {
		tok, err := dec.Token()
		if err != nil {
			return nil, fmt.Errorf("%w: %w", ErrSweep, err)
		}
		key, _ := tok.(string)
		var into any
		switch key {
		case "points":
			if err := readPoints(dec, &s); err != nil {
				return nil, err
			}
			continue
		case "param":
			into = &s.Param
		case "unit":
			into = &s.Unit
		case "goodput_slo":
			into = &s.GoodputSLO
		case "increasing":
			into = &s.Increasing
		case "safe":
			into = &s.Safe
		case "has_safe":
			into = &s.HasSafe
		default:
			return nil, fmt.Errorf("%w: unknown field %q", ErrSweep, key)
		}
		if err := dec.Decode(into); err != nil {
			return nil, fmt.Errorf("%w: field %q: %w", ErrSweep, key, err)
		}
	}
	if err := expectDelim(dec, '}', "the end of the object"); err != nil {
		return nil, err
	}
	return &s, nil
}

// readPoints reads the points array, one point at a time.
func readPoints(dec *json.Decoder, s *Sweep) error {
	if err := expectDelim(dec, '[', `an array of points for "points"`); err != nil {
		return err
	}
	for dec.More() {
		if len(s.Points) == MaxSweepPoints {
			return fmt.Errorf("%w: more than %d points; want at most that", ErrSweep, MaxSweepPoints)
		}
		var p SweepPoint
		if err := dec.Decode(&p); err != nil {
			return fmt.Errorf("%w: point %d: %w", ErrSweep, len(s.Points), err)
		}
		s.Points = append(s.Points, p)
	}
	return expectDelim(dec, ']', `the end of "points"`)
}

// expectDelim reads the next token, which must be the delimiter d.
func expectDelim(dec *json.Decoder, d json.Delim, what string) error {
	tok, err := dec.Token()
	if err != nil {
		return fmt.Errorf("%w: want %s: %w", ErrSweep, what, err)
	}
	if tok != d {
		return fmt.Errorf("%w: want %s, got %v", ErrSweep, what, tok)
	}
	return nil
}

// maxMarkedPoints is the most points a sweep plot draws one by one, each
// with its marker and tooltip; past it each series is drawn as its lowest
// and highest point in every pixel column (what a plot of that width can
// show of them), so that the figure is the same size for any sweep.
const maxMarkedPoints = 2000

// Figure draws the sweep: interruption rate (top) and speech goodput
// (bottom) against the swept value, the goodput SLO line and the largest
// safe value marked on both panels. It sorts Points by value, in place. It
// returns an error for an invalid sweep.
func (s *Sweep) Figure() (*Figure, error) {
	if err := s.Validate(); err != nil {
		return nil, err
	}
	const (
		W              = 1100
		left, right    = 110.0, 40.0
		top1, h1       = 70.0, 200.0
		top2, h2       = 320.0, 200.0
		markerR, lineW = 3.5, 2.0
	)
	ps := s.Points
	sortPoints(ps)
	safe, hasSafe := s.Safe, s.HasSafe
	if !hasSafe && s.GoodputSLO > 0 {
		safe, hasSafe = safeLimitSorted(ps, s.GoodputSLO, s.Increasing)
	}
	bound := "largest"
	if s.Increasing {
		bound = "smallest"
	}
	param := s.Param
	if param == "" {
		param = "swept value"
	}
	axisName := param
	if s.Unit != "" {
		axisName += " (" + s.Unit + ")"
	}
	f := NewFigure(W, 640, "sweep of "+param)
	f.Text(left, 24, "Interruptions and speech goodput against "+param, titleText)
	note := fmt.Sprintf("%d runs", len(ps))
	if len(ps) > maxMarkedPoints {
		note += " (each line its lowest and highest run in every pixel column)"
	}
	if s.GoodputSLO > 0 {
		note += fmt.Sprintf("; SLO: speech goodput at least %.4g%%", 100*s.GoodputSLO)
	}
	if hasSafe {
		note += fmt.Sprintf("; %s safe %s: %.4g %s", bound, param, safe, s.Unit)
	} else if s.GoodputSLO > 0 {
		note += "; no swept value meets the SLO"
	}
	f.Text(left, 44, note, noteText)
	lo, hi := linRange(ps[0].Value, ps[len(ps)-1].Value, 0.03)
	x := scale{lo: lo, hi: hi, p0: left, p1: W - right}
	rmax := 0.0
	for _, p := range ps {
		rmax = max(rmax, p.InterruptionsPerMinute)
	}
	rmax = niceMax(max(rmax*1.1, 0.1), 5)
	y1 := scale{lo: 0, hi: rmax, p0: top1 + h1, p1: top1}
	y2 := scale{lo: 0, hi: 1, p0: top2 + h2, p1: top2}
	xt := linTicks(x.lo, x.hi, 10)
	f.xAxis(x, top1+h1, top1, xt, tickLabel, "")
	f.yAxis(y1, left, x.p1, linTicks(0, rmax, 5), tickLabel, "interruptions / min of speech")
	f.xAxis(x, top2+h2, top2, xt, tickLabel, axisName)
	f.yAxis(y2, left, x.p1, linTicks(0, 1, 5), percentLabel, "speech goodput")

	if hasSafe {
		px := x.at(safe)
		ux0, ux1 := px, x.p1
		if s.Increasing {
			ux0, ux1 = left, px
		}
		for _, p := range [][2]float64{{top1, h1}, {top2, h2}} {
			f.Rect(ux0, p[0], ux1-ux0, p[1], Style{Fill: alpha(Vermillion, 0.07)}, nil)
			f.Line(px, p[0], px, p[0]+p[1], stroke(BluishGreen, 2))
		}
		ts := TextStyle{Size: 11, Color: darker(BluishGreen), Bold: true}
		label := fmt.Sprintf("%s safe %s: %.4g %s", bound, param, safe, s.Unit)
		if px+6+textWidth(label, 11, true) > x.p1 {
			ts.Anchor = AnchorEnd
			f.Text(px-6, top1+14, label, ts)
		} else {
			f.Text(px+6, top1+14, label, ts)
		}
	}
	if s.GoodputSLO > 0 {
		py := y2.at(s.GoodputSLO)
		f.Line(left, py, x.p1, py, stroke(Vermillion, 1.5, 6, 4))
		ts := TextStyle{Size: 11, Color: darker(Vermillion), Anchor: AnchorEnd}
		f.Text(x.p1-4, py+14, fmt.Sprintf("SLO %.4g%%", 100*s.GoodputSLO), ts)
	}
	series := func(y scale, val func(SweepPoint) float64, c Style, what string) {
		if len(ps) > maxMarkedPoints {
			f.Path(columnEnvelope(ps, x, y, val), false, c, nil)
			return
		}
		pts := make([]float64, 0, 2*len(ps))
		for _, p := range ps {
			pts = append(pts, x.at(p.Value), y.at(val(p)))
		}
		f.Path(pts, false, c, nil)
		for i, p := range ps {
			px, py := pts[2*i], pts[2*i+1]
			f.Rect(px-markerR, py-markerR, 2*markerR, 2*markerR, Style{Fill: c.Stroke},
				&Meta{Class: "point", Title: fmt.Sprintf("%s %.4g %s: %s", param, p.Value, s.Unit, what)})
		}
	}
	series(y1, func(p SweepPoint) float64 { return p.InterruptionsPerMinute }, stroke(Vermillion, lineW), "interruption rate")
	series(y2, func(p SweepPoint) float64 { return p.Goodput }, stroke(Blue, lineW), "speech goodput")
	items := []legendItem{
		{label: "interruptions per minute of speech", style: stroke(Vermillion, lineW), line: true},
		{label: "speech goodput (turns with no interruption)", style: stroke(Blue, lineW), line: true},
	}
	if s.GoodputSLO > 0 {
		items = append(items, legendItem{label: "goodput SLO", style: stroke(Vermillion, 1.5, 6, 4), line: true})
	}
	if hasSafe {
		items = append(items, legendItem{label: bound + " safe value", style: stroke(BluishGreen, 2), line: true},
			legendItem{label: "unsafe", style: solid(alpha(Vermillion, 0.12))})
	}
	top := top2 + h2 + 46
	f.Height = top + f.legend(left, top, x.p1-left, items) + 10
	return f, nil
}

// columnEnvelope draws the points (sorted by value) of one series as a
// line through its lowest and highest point in each pixel column, in the
// order they come: at most four coordinates a column, whatever the number
// of points.
func columnEnvelope(ps []SweepPoint, x, y scale, val func(SweepPoint) float64) []float64 {
	var pts []float64
	for i := 0; i < len(ps); {
		col := math.Floor(x.at(ps[i].Value))
		lo, hi := i, i
		j := i + 1
		for ; j < len(ps) && math.Floor(x.at(ps[j].Value)) == col; j++ {
			if val(ps[j]) < val(ps[lo]) {
				lo = j
			}
			if val(ps[j]) > val(ps[hi]) {
				hi = j
			}
		}
		for _, k := range []int{min(lo, hi), max(lo, hi)} {
			pts = append(pts, x.at(ps[k].Value), y.at(val(ps[k])))
			if lo == hi {
				break
			}
		}
		i = j
	}
	return pts
}
