package plot

import (
	"fmt"
	"image/color"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// Timeline is one turn as the engine played it, copied out of the
// playout (which is reused for the next turn).
type Timeline struct {
	// Turn is the turn's ID.
	Turn string
	// Arrivals are the streamed chunks' arrival times; Reasoning marks the
	// ones that are not spoken.
	Arrivals  []time.Duration
	Reasoning []bool
	// Tolerance is the stall tolerance after each streamed chunk
	// (pipeline.Unbounded where no delay adds a gap).
	Tolerance []time.Duration
	// Chunks are the speech chunks with their release, synthesis and play
	// times.
	Chunks []pipeline.SpeechChunk
	// Underruns are the gaps the listener heard.
	Underruns []pipeline.Underrun
	// Start is when the player started (time to first audio); Started is
	// false when it never did.
	Start   time.Duration
	Started bool
	// Interruption is the shortest underrun graded an interruption.
	Interruption time.Duration
	// RTF and Frame describe the synthesizer, for the ready-audio curve.
	RTF   float64
	Frame time.Duration
}

// NewTimeline copies what a timeline needs from a turn and its finished
// playout.
func NewTimeline(t *pipeline.Turn, p *pipeline.Playout) Timeline {
	cfg := p.Config()
	tl := Timeline{
		Turn:         t.ID,
		Arrivals:     make([]time.Duration, len(t.Chunks)),
		Reasoning:    make([]bool, len(t.Chunks)),
		Tolerance:    slices.Clone(p.Tolerance),
		Chunks:       slices.Clone(p.Chunks),
		Underruns:    slices.Clone(p.Underruns),
		Interruption: cfg.Interruption,
		RTF:          cfg.Synth.RTF,
		Frame:        cfg.Synth.FrameSize(),
	}
	for i, c := range t.Chunks {
		tl.Arrivals[i], tl.Reasoning[i] = c.At, c.Reasoning
	}
	tl.Start, tl.Started = p.Started()
	return tl
}

// Silence returns the total length of the turn's underruns.
func (tl *Timeline) Silence() time.Duration {
	var d time.Duration
	for _, u := range tl.Underruns {
		d += u.Duration
	}
	return d
}

// End returns when the turn's last audio finished playing, or its last
// chunk arrived if that is later.
func (tl *Timeline) End() time.Duration {
	var end time.Duration
	if n := len(tl.Arrivals); n > 0 {
		end = tl.Arrivals[n-1]
	}
	for _, c := range tl.Chunks {
		end = max(end, c.PlayEnd, c.Done)
	}
	return end
}

// BufferedCurve returns the audio buffered, released to the synthesizer
// and not yet played (pipeline.Backlog.Buffered, as the monitor shows it),
// as (time, audio) points in seconds of a piecewise linear curve.
func (tl *Timeline) BufferedCurve() []float64 { return tl.backlogCurve(false) }

// ReadyCurve returns the audio ready at the player and not yet played
// (pipeline.Backlog.Ready), as (time, audio) points in seconds of a
// piecewise linear curve: what the player has in hand. It is zero inside
// the underruns.
func (tl *Timeline) ReadyCurve() []float64 { return tl.backlogCurve(true) }

// BacklogAt returns the turn's backlog at t (pipeline.BacklogAt).
func (tl *Timeline) BacklogAt(t time.Duration) pipeline.Backlog {
	return pipeline.BacklogAt(tl.Chunks, len(tl.Chunks), tl.Underruns, tl.RTF, tl.Frame, t)
}

// backlogCurve evaluates one backlog measure at every time where its
// slope can change; where it jumps (a release, a chunk's first frame) the
// left limit comes first, so jumps show as vertical steps.
func (tl *Timeline) backlogCurve(ready bool) []float64 {
	times := make([]time.Duration, 0, 6*len(tl.Chunks)+2*len(tl.Underruns)+1)
	times = append(times, 0)
	for _, c := range tl.Chunks {
		readyEnd := c.Ready
		if tl.RTF > 0 && c.Audio > tl.Frame {
			readyEnd += time.Duration(float64(c.Audio-tl.Frame) * tl.RTF)
		}
		times = append(times, c.Release, c.Ready, readyEnd, c.PlayStart, c.PlayEnd)
	}
	for _, u := range tl.Underruns {
		times = append(times, u.Start, u.Start+u.Duration)
	}
	slices.Sort(times)
	times = slices.Compact(times)
	value := func(t time.Duration) float64 {
		b := tl.BacklogAt(t)
		if ready {
			return b.Ready.Seconds()
		}
		return b.Buffered.Seconds()
	}
	out := make([]float64, 0, 4*len(times))
	for _, t := range times {
		v := value(t)
		if t > 0 {
			if l := value(t - 1); math.Abs(l-v) > 1e-6 {
				out = append(out, t.Seconds(), l)
			}
		}
		out = append(out, t.Seconds(), v)
	}
	return out
}

func causeLabel(c pipeline.Cause) string {
	switch c {
	case pipeline.CauseStall:
		return "token stall"
	case pipeline.CausePace:
		return "slow token pace"
	case pipeline.CauseStartup:
		return "thin start-up buffer"
	case pipeline.CauseHeld:
		return "held by chunking policy"
	case pipeline.CauseSynthesizer:
		return "synthesizer too slow"
	}
	return string(c)
}

// fmtDur formats a duration in ms below 10 s, else in s.
func fmtDur(d time.Duration) string {
	ms := pipeline.Millis(d)
	if math.Abs(ms) >= 10000 {
		return fmt.Sprintf("%.1f s", ms/1000)
	}
	return fmt.Sprintf("%.0f ms", ms)
}

// underrunTitle is the tooltip of one underrun.
func underrunTitle(i int, u pipeline.Underrun) string {
	s := fmt.Sprintf("turn %s, underrun %d: %s %s at %.3f s (%s), %s; chunk %d came late",
		u.Turn, i+1, u.Class, fmtDur(u.Duration), u.Start.Seconds(), causeLabel(u.Cause), u.Position, u.Chunk)
	if u.ITL > 0 {
		s += fmt.Sprintf("; ITL %s before token %d", fmtDur(u.ITL), u.Token)
		if u.Cause != pipeline.CauseSynthesizer {
			s += fmt.Sprintf(", tolerance there %s", fmtDur(u.Tolerance))
		}
	}
	return s
}

func underrunMeta(i int, u pipeline.Underrun) *Meta {
	return &Meta{
		Class: "underrun " + string(u.Class),
		Title: underrunTitle(i, u),
		Data: [][2]string{
			{"turn", u.Turn},
			{"start-ms", fmt.Sprintf("%.3f", pipeline.Millis(u.Start))},
			{"ms", fmt.Sprintf("%.3f", pipeline.Millis(u.Duration))},
			{"cause", string(u.Cause)},
		},
	}
}

// TimelineWidth is the width of a timeline figure in pixels.
const TimelineWidth = 1100

// Figure draws the turn timeline: token arrivals as ticks, chunk releases
// and synthesizer busy intervals, the audio buffered (released, not yet
// played) and the part of it ready at the player, with the stall
// tolerance under it, start-up (TTFA) shaded apart, and each underrun
// shaded and labelled with its cause and length.
func (tl *Timeline) Figure() *Figure {
	const (
		W                    = TimelineWidth
		left, right          = 110.0, 30.0
		tokTop, tokH         = 64.0, 20.0
		synTop, synH         = 92.0, 24.0
		labelTop             = 124.0
		panelTop, panelH     = 170.0, 240.0
		labelRows            = 3
		labelRowH            = 14.0
		minBand, tickDedupPx = 2.0, 1.0
	)
	f := NewFigure(W, 600, "turn "+tl.Turn+" timeline")
	end := tl.End().Seconds()
	if end <= 0 {
		end = 1
	}
	x := scale{lo: 0, hi: niceMax(end*1.02, 10), p0: left, p1: W - right}
	curve, buffered := tl.ReadyCurve(), tl.BufferedCurve()
	bufMax, tolMax := 0.0, 0.0
	for i := 1; i < len(buffered); i += 2 {
		bufMax = max(bufMax, buffered[i])
	}
	for _, t := range tl.Tolerance {
		if t != pipeline.Unbounded {
			tolMax = max(tolMax, t.Seconds())
		}
	}
	ymax := niceMax(max(0.5, bufMax, min(tolMax, 1.5*bufMax)), 5)
	panelBottom := panelTop + panelH
	y := scale{lo: 0, hi: ymax, p0: panelBottom, p1: panelTop}

	// title and summary
	f.Text(left, 24, "Turn "+tl.Turn+": timeline of tokens, synthesis and audio not yet played", titleText)
	interruptions, glitches := 0, 0
	for _, u := range tl.Underruns {
		if u.Class == pipeline.Interruption {
			interruptions++
		} else {
			glitches++
		}
	}
	ttfa := "player never started"
	if tl.Started {
		ttfa = "time to first audio " + fmtDur(tl.Start)
	}
	f.Text(left, 44, fmt.Sprintf("%s, %s; %s; %s (%s of %s or more, %s), %s of silence",
		plural(len(tl.Arrivals), "token"), plural(len(tl.Chunks), "speech chunk"), ttfa, plural(len(tl.Underruns), "underrun"),
		plural(interruptions, "interruption"), fmtDur(tl.Interruption), plural(glitches, "glitch"), fmtDur(tl.Silence())), noteText)

	// lane labels and frames
	lane := labelText
	lane.Anchor = AnchorEnd
	lane.Size = 11
	f.Text(left-8, tokTop+tokH/2+4, "tokens", lane)
	f.Text(left-8, synTop+synH/2+4, "synthesizer", lane)
	f.Rect(left, tokTop, x.p1-left, tokH, Style{Fill: alpha(gridGrey, 0.5)}, nil)
	f.Rect(left, synTop, x.p1-left, synH, Style{Fill: alpha(gridGrey, 0.5)}, nil)

	// start-up: from the request to the player's start
	if tl.Started && tl.Start > 0 {
		sx := x.at(tl.Start.Seconds())
		f.Rect(left, tokTop, sx-left, panelBottom-tokTop, Style{Fill: alpha(lightGrey, 0.6)},
			&Meta{Class: "startup", Title: "start-up: " + ttfa + " (reported apart, not an underrun)"})
		f.Line(sx, tokTop, sx, panelBottom, stroke(grey, 1, 4, 3))
		ns := noteText
		ns.Anchor = AnchorEnd
		if sx-left > 150 {
			f.Text(sx-4, panelTop+14, "start-up (TTFA "+fmtDur(tl.Start)+")", ns)
		} else {
			ns.Anchor = AnchorStart
			f.Text(sx+4, panelTop+14, "◂ start-up (TTFA "+fmtDur(tl.Start)+")", ns)
		}
	}

	// y axis and grid of the main panel
	f.yAxis(y, left, x.p1, linTicks(0, ymax, 5), tickLabel, "audio not yet played (s)")
	f.xAxis(x, panelBottom, panelTop, linTicks(0, x.hi, 10), tickLabel, "time since the request was sent (s)")

	// underrun bands, behind the curves; underruns closer than a few
	// pixels with the same cause share one band that counts them
	bands := tl.bands(x, minBand)
	for _, b := range bands {
		a := 0.28
		if b.class == pipeline.Glitch {
			a = 0.14
		}
		c := CauseColor(b.cause)
		st := Style{Fill: alpha(c, a)}
		if b.x1-b.x0 >= 4 || len(b.idx) == 1 {
			st.Stroke = alpha(c, 0.9)
		}
		f.Rect(b.x0, tokTop, b.x1-b.x0, panelBottom-tokTop, st, b.meta(tl))
	}

	// token arrivals as ticks, one per pixel column at most
	last := [2]float64{-1, -1}
	for i, at := range tl.Arrivals {
		px := x.at(at.Seconds())
		k := 0
		if tl.Reasoning[i] {
			k = 1
		}
		if px-last[k] < tickDedupPx {
			continue
		}
		last[k] = px
		c := alpha(Black, 0.75)
		if k == 1 {
			c = grey
		}
		f.Line(px, tokTop+3, px, tokTop+tokH-3, stroke(c, 1))
	}

	// synthesizer busy intervals and chunk releases
	for _, c := range tl.Chunks {
		x0, x1 := x.at(c.Start.Seconds()), x.at(c.Done.Seconds())
		f.Rect(x0, synTop+6, max(x1-x0, 1), synH-8, Style{Fill: alpha(BluishGreen, 0.55)}, nil)
		rx := x.at(c.Release.Seconds())
		f.Path([]float64{rx - 4, synTop, rx + 4, synTop, rx, synTop + 6}, true, solid(Blue), nil)
	}

	// buffered audio
	if len(curve) >= 4 {
		pts := make([]float64, 0, len(curve)+4)
		pts = append(pts, x.at(curve[0]), y.at(0))
		for i := 0; i+1 < len(curve); i += 2 {
			pts = append(pts, x.at(curve[i]), y.clampPx(y.at(curve[i+1])))
		}
		pts = append(pts, x.at(curve[len(curve)-2]), y.at(0))
		f.Path(pts, true, Style{Fill: alpha(SkyBlue, 0.45)}, nil)
		f.Path(pts[2:len(pts)-2], false, stroke(Blue, 1.5), &Meta{Class: "ready", Title: "audio ready at the player, not yet played"})
	}
	if len(buffered) >= 4 {
		pts := make([]float64, 0, len(buffered))
		for i := 0; i+1 < len(buffered); i += 2 {
			pts = append(pts, x.at(buffered[i]), y.clampPx(y.at(buffered[i+1])))
		}
		f.Path(pts, false, stroke(Orange, 1.5), &Meta{Class: "buffered", Title: "audio buffered: released to the synthesizer, not yet played"})
	}

	// stall tolerance: a step after each token, broken where unbounded
	var seg []float64
	flush := func() {
		if len(seg) >= 4 {
			f.Path(seg, false, stroke(Black, 1.2, 5, 3), &Meta{Class: "tolerance"})
		}
		seg = nil
	}
	for k, tol := range tl.Tolerance {
		if tol == pipeline.Unbounded || k >= len(tl.Arrivals) {
			flush()
			continue
		}
		from := tl.Arrivals[k].Seconds()
		to := end
		if k+1 < len(tl.Arrivals) {
			to = tl.Arrivals[k+1].Seconds()
		}
		py := y.clampPx(y.at(tol.Seconds()))
		seg = append(seg, x.at(from), py, x.at(to), py)
	}
	flush()

	// underrun labels, staggered into rows so they do not overlap
	lastEnd := make([]float64, labelRows)
	for i := range lastEnd {
		lastEnd[i] = -1
	}
	for _, b := range bands {
		label := b.label(tl)
		w := textWidth(label, 11, true)
		cx := (b.x0 + b.x1) / 2
		lx := min(max(cx-w/2, left), x.p1-w)
		row := -1
		for r := range labelRows {
			if lx > lastEnd[r]+6 {
				row = r
				break
			}
		}
		if row < 0 {
			continue // the band and its tooltip still show it
		}
		lastEnd[row] = lx + w
		ly := labelTop + 12 + float64(row)*labelRowH
		f.Line(cx, ly+3, cx, panelTop, stroke(alpha(CauseColor(b.cause), 0.8), 1))
		f.Text(lx, ly, label, TextStyle{Size: 11, Color: darker(CauseColor(b.cause)), Bold: true})
	}

	// legend
	items := []legendItem{
		{label: "token arrival", style: stroke(Black, 1), tick: true},
	}
	if slices.Contains(tl.Reasoning, true) {
		items = append(items, legendItem{label: "reasoning token (not spoken)", style: stroke(grey, 1), tick: true})
	}
	items = append(items,
		legendItem{label: "chunk released to TTS", style: solid(Blue)},
		legendItem{label: "synthesizer busy", style: solid(alpha(BluishGreen, 0.55))},
		legendItem{label: "audio ready at the player, not yet played", style: Style{Fill: alpha(SkyBlue, 0.45), Stroke: Blue}},
		legendItem{label: "audio buffered: released to the synthesizer, not yet played", style: stroke(Orange, 1.5), line: true},
		legendItem{label: "stall tolerance (s of extra ITL with no new gap)", style: stroke(Black, 1.2, 5, 3), line: true},
		legendItem{label: "start-up (TTFA)", style: solid(alpha(lightGrey, 0.8))},
	)
	seen := map[pipeline.Cause]bool{}
	for _, u := range tl.Underruns {
		seen[u.Cause] = true
	}
	for _, c := range causes {
		if seen[c] {
			items = append(items, legendItem{label: "underrun: " + causeLabel(c), style: Style{Fill: alpha(CauseColor(c), 0.28), Stroke: CauseColor(c)}})
		}
	}
	top := panelBottom + 46
	h := f.legend(left, top, x.p1-left, items)
	f.Height = top + h + 10
	return f
}

// darker returns a darker shade of c, for text in that colour.
func darker(c color.NRGBA) color.NRGBA {
	return color.NRGBA{R: c.R * 7 / 10, G: c.G * 7 / 10, B: c.B * 7 / 10, A: c.A}
}

// band is one shaded interval of a timeline: one underrun, or several of
// the same cause too close together to tell apart at this width.
type band struct {
	x0, x1 float64
	idx    []int // the underruns it stands for
	cause  pipeline.Cause
	class  pipeline.Class // the worst of them
}

// bandMergePx is how close (in pixels) underruns of one cause must be to
// share a band.
const bandMergePx = 3

// bands groups the underruns into bands at scale x, every underrun in
// exactly one band.
func (tl *Timeline) bands(x scale, minWidth float64) []band {
	var out []band
	for i, u := range tl.Underruns {
		x0, x1 := x.at(u.Start.Seconds()), x.at((u.Start + u.Duration).Seconds())
		if x1-x0 < minWidth {
			mid := (x0 + x1) / 2
			x0, x1 = mid-minWidth/2, mid+minWidth/2
		}
		if n := len(out); n > 0 && out[n-1].cause == u.Cause && x0-out[n-1].x1 < bandMergePx {
			b := &out[n-1]
			b.x1 = max(b.x1, x1)
			b.idx = append(b.idx, i)
			if u.Class == pipeline.Interruption {
				b.class = pipeline.Interruption
			}
			continue
		}
		out = append(out, band{x0: x0, x1: x1, idx: []int{i}, cause: u.Cause, class: u.Class})
	}
	return out
}

func (b *band) meta(tl *Timeline) *Meta {
	if len(b.idx) == 1 {
		return underrunMeta(b.idx[0], tl.Underruns[b.idx[0]])
	}
	first, last := tl.Underruns[b.idx[0]], tl.Underruns[b.idx[len(b.idx)-1]]
	var total time.Duration
	for _, i := range b.idx {
		total += tl.Underruns[i].Duration
	}
	return &Meta{
		Class: "underrun " + string(b.class),
		Title: fmt.Sprintf("turn %s, underruns %d to %d: %d gaps (%s), %s of silence between %.3f s and %.3f s",
			tl.Turn, b.idx[0]+1, b.idx[len(b.idx)-1]+1, len(b.idx), causeLabel(b.cause), fmtDur(total),
			first.Start.Seconds(), (last.Start + last.Duration).Seconds()),
		Data: [][2]string{{"turn", tl.Turn}, {"underruns", fmt.Sprint(len(b.idx))}, {"cause", string(b.cause)}},
	}
}

func (b *band) label(tl *Timeline) string {
	if len(b.idx) == 1 {
		u := tl.Underruns[b.idx[0]]
		return fmt.Sprintf("%s %s", u.Cause, fmtDur(u.Duration))
	}
	var total time.Duration
	for _, i := range b.idx {
		total += tl.Underruns[i].Duration
	}
	return fmt.Sprintf("%s ×%d, %s", b.cause, len(b.idx), fmtDur(total))
}

// plural says "1 turn", "3 turns", "2 glitches".
// nouns writes n with the noun one or many.
func nouns(n int, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return fmt.Sprintf("%d %s", n, many)
}

func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	if strings.HasSuffix(noun, "ch") {
		return fmt.Sprintf("%d %ses", n, noun)
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
