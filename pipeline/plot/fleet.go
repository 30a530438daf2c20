package plot

import (
	"fmt"
	"math"
	"slices"
	"strconv"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// Mark is one underrun as the fleet view keeps it.
type Mark struct {
	Start, Duration time.Duration
	Class           pipeline.Class
	Cause           pipeline.Cause
}

// FleetTurn is one turn of the fleet view.
type FleetTurn struct {
	// Turn is the turn's ID.
	Turn string
	// TTFA is when the player started (zero when it never did).
	TTFA time.Duration
	// End is when its audio finished playing.
	End time.Duration
	// Marks are its underruns.
	Marks []Mark
	// Severity ranks the turns, worst first (pipeline.CompareSeverity).
	Severity pipeline.Severity
}

// Fleet accumulates many turns for the fleet view: turns as rows, sorted
// by the worst, underruns as marks along time. The zero Fleet is ready.
type Fleet struct {
	Turns []FleetTurn
}

// Add accounts one turn and its finished playout (p may be nil).
func (fl *Fleet) Add(t *pipeline.Turn, p *pipeline.Playout) {
	ft := FleetTurn{Turn: t.ID, Severity: pipeline.Severity{Turn: t.ID, Session: t.Session}}
	if len(t.Chunks) > 0 {
		ft.End = t.Chunks[len(t.Chunks)-1].At
	}
	if p != nil {
		ft.TTFA, _ = p.Started()
		for _, c := range p.Chunks {
			ft.End = max(ft.End, c.PlayEnd)
		}
		if len(p.Underruns) > 0 {
			ft.Marks = make([]Mark, len(p.Underruns))
		}
		for i, u := range p.Underruns {
			ft.Marks[i] = Mark{Start: u.Start, Duration: u.Duration, Class: u.Class, Cause: u.Cause}
		}
		ft.Severity.Tally = pipeline.TallyUnderruns(p.Underruns)
	}
	fl.Turns = append(fl.Turns, ft)
}

// Underruns returns the number of underruns in the fleet.
func (fl *Fleet) Underruns() int {
	n := 0
	for i := range fl.Turns {
		n += len(fl.Turns[i].Marks)
	}
	return n
}

// sorted returns the turns' indices, worst first
// (pipeline.CompareSeverity).
func (fl *Fleet) sorted() []int {
	idx := make([]int, len(fl.Turns))
	for i := range idx {
		idx[i] = i
	}
	slices.SortStableFunc(idx, func(a, b int) int {
		return pipeline.CompareSeverity(fl.Turns[a].Severity, fl.Turns[b].Severity)
	})
	return idx
}

// Fleet view geometry: each turn gets its own row while rows can be at
// least minRow pixels high in maxRows pixels; beyond that, consecutive
// turns (in worst-first order) share a pixel row.
const (
	fleetMaxH   = 900.0
	fleetMinRow = 3.0
	fleetMaxRow = 16.0
)

// Figure draws the fleet view. With more turns than pixel rows, turns are
// binned into rows and underruns into pixel columns, each mark counting
// the underruns it stands for (data-underruns), so none is dropped.
func (fl *Fleet) Figure() *Figure {
	const (
		W           = 1100
		right       = 150.0
		panelTop    = 70.0
		minMark     = 1.5
		labelsAbove = 10.0
	)
	n := len(fl.Turns)
	rowH := fleetMaxRow
	perRow := 1
	if n > 0 {
		rowH = min(fleetMaxRow, fleetMaxH/float64(n))
		if rowH < fleetMinRow {
			rows := int(fleetMaxH / fleetMinRow)
			perRow = (n + rows - 1) / rows
			rowH = fleetMinRow
		}
	}
	rows := 0
	if n > 0 {
		rows = (n + perRow - 1) / perRow
	}
	labelled := rowH >= labelsAbove
	left := 110.0
	if labelled {
		for i := range fl.Turns {
			left = max(left, 20+textWidth(fl.Turns[i].Turn, 10, false))
		}
		left = min(left, 260)
	}
	panelH := max(float64(rows)*rowH, 40)
	panelBottom := panelTop + panelH
	f := NewFigure(W, panelBottom+120, "fleet view")
	f.Text(left, 24, "Fleet: every turn's underruns along time, worst turns first", titleText)
	var end time.Duration
	interrupted := 0
	for i := range fl.Turns {
		end = max(end, fl.Turns[i].End)
		if fl.Turns[i].Severity.Interrupted > 0 {
			interrupted++
		}
	}
	sub := fmt.Sprintf("%s, %s, %d interrupted; rows sorted by silence in interruptions, then in all underruns, then by count", plural(n, "turn"), plural(fl.Underruns(), "underrun"), interrupted)
	if perRow > 1 {
		sub += fmt.Sprintf("; each row holds %d turns", perRow)
	}
	f.Text(left, 44, sub, noteText)
	x := scale{lo: 0, hi: niceMax(max(end.Seconds(), 1)*1.02, 10), p0: left, p1: W - right}
	ry := func(r int) float64 { return panelTop + float64(r)*rowH }
	f.xAxis(x, panelBottom, panelTop, linTicks(0, x.hi, 10), tickLabel, "time since the request was sent (s)")
	f.Line(left, panelTop, left, panelBottom, frame)
	if !labelled && rows > 0 {
		ranks := linTicks(0, float64(n), 8)
		rs := scale{lo: 0, hi: float64(n), p0: panelTop, p1: panelTop + float64(rows)*rowH*float64(n)/float64(rows*perRow)}
		f.yAxis(rs, left, left, ranks, tickLabel, "turns, worst first (rank)")
	} else {
		ls := labelText
		ls.Anchor = AnchorMiddle
		ls.Vertical = true
		f.Text(14, (panelTop+panelBottom)/2, "turns, worst first", ls)
	}
	order := fl.sorted()
	barH := max(rowH-1, 1)
	if rowH >= 6 {
		barH = rowH * 0.7
	}
	sil := noteText
	sil.Size = 10
	for r := 0; r < rows; r++ {
		group := order[r*perRow : min((r+1)*perRow, n)]
		top := ry(r) + (rowH-barH)/2
		var gEnd, gTTFA time.Duration
		for _, i := range group {
			gEnd, gTTFA = max(gEnd, fl.Turns[i].End), max(gTTFA, fl.Turns[i].TTFA)
		}
		f.Rect(left, top, x.at(gEnd.Seconds())-left, barH, solid(gridGrey), nil)
		if gTTFA > 0 {
			f.Rect(left, top, x.at(gTTFA.Seconds())-left, barH, solid(lightGrey), nil)
		}
		if perRow == 1 {
			ft := &fl.Turns[group[0]]
			if labelled {
				ts := TextStyle{Size: 10, Color: textGrey, Anchor: AnchorEnd}
				f.Text(left-6, top+barH/2+3.5, ft.Turn, ts)
				if ft.Severity.Silence > 0 {
					f.Text(x.p1+8, top+barH/2+3.5, fmt.Sprintf("%d × %s", len(ft.Marks), fmtDur(ft.Severity.Silence)), sil)
				}
			}
			for j, m := range ft.Marks {
				x0, x1 := x.at(m.Start.Seconds()), x.at((m.Start + m.Duration).Seconds())
				if x1-x0 < minMark {
					x0 = (x0+x1)/2 - minMark/2
					x1 = x0 + minMark
				}
				u := pipeline.Underrun{Turn: ft.Turn, Start: m.Start, Duration: m.Duration, Class: m.Class, Cause: m.Cause}
				meta := underrunMeta(j, u)
				meta.Title = fmt.Sprintf("turn %s: %s %s at %.3f s (%s)", ft.Turn, m.Class, fmtDur(m.Duration), m.Start.Seconds(), causeLabel(m.Cause))
				f.Rect(x0, ry(r), x1-x0, rowH, markStyle(m.Class, m.Cause), meta)
			}
			continue
		}
		fl.binRow(f, x, ry(r), rowH, group, r)
	}
	items := []legendItem{
		{label: "turn (request to last audio)", style: solid(gridGrey)},
		{label: "start-up (TTFA)", style: solid(lightGrey)},
	}
	for _, c := range causes {
		items = append(items, legendItem{label: causeLabel(c), style: markStyle(pipeline.Interruption, c)})
	}
	items = append(items, legendItem{label: "glitch (pale) / interruption (solid)", style: markStyle(pipeline.Glitch, pipeline.CauseStall)})
	top := panelBottom + 46
	f.Height = top + f.legend(left, top, x.p1-left, items) + 10
	return f
}

// markStyle is how a fleet mark of an underrun is filled: solid for an
// interruption, pale for a glitch.
func markStyle(class pipeline.Class, cause pipeline.Cause) Style {
	c := CauseColor(cause)
	if class == pipeline.Glitch {
		return Style{Fill: alpha(c, 0.4)}
	}
	return Style{Fill: c}
}

// binRow draws the underruns of several turns sharing a pixel row: each
// underrun counts in the pixel column where it starts and covers every
// column it spans; adjacent columns of the same cause and class merge
// into one mark carrying the count.
func (fl *Fleet) binRow(f *Figure, x scale, top, h float64, group []int, row int) {
	type cell struct {
		count int
		cause pipeline.Cause
		class pipeline.Class
		worst time.Duration
	}
	cols := int(math.Ceil(x.p1 - x.p0))
	cells := make(map[int]*cell)
	for _, i := range group {
		for _, m := range fl.Turns[i].Marks {
			c0 := int(math.Floor(x.at(m.Start.Seconds()) - x.p0))
			c1 := int(math.Floor(x.at((m.Start + m.Duration).Seconds()) - x.p0))
			c0, c1 = min(max(c0, 0), cols-1), min(max(c1, 0), cols-1)
			for c := c0; c <= c1; c++ {
				cl := cells[c]
				if cl == nil {
					cl = &cell{}
					cells[c] = cl
				}
				if c == c0 {
					cl.count++
				}
				// the column shows its worst underrun
				worse := (m.Class == pipeline.Interruption && cl.class != pipeline.Interruption) ||
					(m.Class == cl.class && m.Duration > cl.worst) || cl.class == ""
				if worse {
					cl.cause, cl.class, cl.worst = m.Cause, m.Class, m.Duration
				}
			}
		}
	}
	if len(cells) == 0 {
		return
	}
	keys := make([]int, 0, len(cells))
	for c := range cells {
		keys = append(keys, c)
	}
	slices.Sort(keys)
	first, last := group[0], group[len(group)-1]
	emit := func(from, to, count int, cl *cell) {
		f.Rect(x.p0+float64(from), top, float64(to-from+1), h, markStyle(cl.class, cl.cause), &Meta{
			Class: "underrun " + string(cl.class),
			Data:  [][2]string{{"underruns", strconv.Itoa(count)}, {"cause", string(cl.cause)}, {"row", strconv.Itoa(row)}},
			Title: fmt.Sprintf("turns %s to %s: %s here, worst %s %s (%s)", fl.Turns[first].Turn, fl.Turns[last].Turn, plural(count, "underrun"), cl.class, fmtDur(cl.worst), causeLabel(cl.cause)),
		})
	}
	start, prev, count := keys[0], keys[0], cells[keys[0]].count
	cur := cells[keys[0]]
	for _, c := range keys[1:] {
		cl := cells[c]
		if c == prev+1 && cl.cause == cur.cause && cl.class == cur.class {
			count += cl.count
			cur = &cell{count: count, cause: cur.cause, class: cur.class, worst: max(cur.worst, cl.worst)}
			prev = c
			continue
		}
		emit(start, prev, count, cur)
		start, prev, count, cur = c, c, cl.count, cl
	}
	emit(start, prev, count, cur)
}
