package plot

import (
	"bufio"
	"fmt"
	"image/color"
	"io"
	"math"
	"strconv"
	"strings"
)

// Figure is one plot as a list of drawing primitives in pixel coordinates
// (origin top left, y down). It renders as SVG or PNG; both show the same
// picture.
type Figure struct {
	// Width and Height are the size in pixels.
	Width, Height float64
	// Title names the figure (the SVG <title>).
	Title string
	els   []element
}

// Style is how a shape is filled and outlined; a colour with zero alpha
// means none.
type Style struct {
	Fill   color.NRGBA
	Stroke color.NRGBA
	// Width is the outline width in pixels (1 when zero).
	Width float64
	// Dash is the outline's dash pattern in pixels (solid when empty).
	Dash []float64
}

// Meta is what an SVG element carries for readers and tests: a class, a
// tooltip and data-* attributes. The PNG rendering ignores it.
type Meta struct {
	Class string
	Title string
	Data  [][2]string
}

// Anchor is where a text sits relative to its point.
type Anchor uint8

// The text anchors.
const (
	AnchorStart Anchor = iota
	AnchorMiddle
	AnchorEnd
)

// TextStyle is how a text is set.
type TextStyle struct {
	Size     float64
	Color    color.NRGBA
	Anchor   Anchor
	Bold     bool
	Vertical bool // rotated a quarter turn counter-clockwise, reading upward
}

type kind uint8

const (
	kindRect kind = iota
	kindPath
	kindText
	kindGroup
	kindEnd
)

type element struct {
	kind   kind
	x, y   float64
	w, h   float64
	pts    []float64
	closed bool
	style  Style
	text   string
	ts     TextStyle
	meta   *Meta
}

// NewFigure returns an empty figure of the given size.
func NewFigure(w, h float64, title string) *Figure {
	return &Figure{Width: w, Height: h, Title: title}
}

// Rect adds a rectangle.
func (f *Figure) Rect(x, y, w, h float64, s Style, m *Meta) {
	if w < 0 {
		x, w = x+w, -w
	}
	if h < 0 {
		y, h = y+h, -h
	}
	f.els = append(f.els, element{kind: kindRect, x: x, y: y, w: w, h: h, style: s, meta: m})
}

// Line adds a straight line.
func (f *Figure) Line(x1, y1, x2, y2 float64, s Style) {
	f.Path([]float64{x1, y1, x2, y2}, false, s, nil)
}

// Path adds a polyline through the points (x0, y0, x1, y1, ...), closed
// into a polygon when closed is set.
func (f *Figure) Path(pts []float64, closed bool, s Style, m *Meta) {
	if len(pts) < 4 {
		return
	}
	f.els = append(f.els, element{kind: kindPath, pts: pts, closed: closed, style: s, meta: m})
}

// Text adds a text with its baseline at y.
func (f *Figure) Text(x, y float64, s string, ts TextStyle) {
	if ts.Size == 0 {
		ts.Size = 12
	}
	if ts.Color.A == 0 {
		ts.Color = Black
	}
	f.els = append(f.els, element{kind: kindText, x: x, y: y, text: s, ts: ts})
}

// Group starts a group of elements that share m (a tooltip covering them
// all); End closes it.
func (f *Figure) Group(m *Meta) { f.els = append(f.els, element{kind: kindGroup, meta: m}) }

// End closes the innermost Group.
func (f *Figure) End() { f.els = append(f.els, element{kind: kindEnd}) }

// svgFont is the font stack of SVG text: Liberation Sans, the face the
// layout is measured with, then faces with the same metrics.
const svgFont = "'Liberation Sans', Arial, Helvetica, sans-serif"

// WriteSVG renders the figure as a standalone SVG document.
func (f *Figure) WriteSVG(w io.Writer) error {
	bw := bufio.NewWriterSize(w, 64<<10)
	f.writeSVG(bw, true)
	return bw.Flush()
}

// SVG returns the figure as an SVG element for inlining in HTML.
func (f *Figure) SVG() string {
	var b strings.Builder
	bw := bufio.NewWriter(&b)
	f.writeSVG(bw, false)
	bw.Flush()
	return b.String()
}

func (f *Figure) writeSVG(w *bufio.Writer, standalone bool) {
	if standalone {
		w.WriteString("<?xml version=\"1.0\" encoding=\"UTF-8\"?>\n")
	}
	fmt.Fprintf(w, `<svg xmlns="http://www.w3.org/2000/svg" width="%s" height="%s" viewBox="0 0 %s %s" font-family="%s" role="img">`+"\n",
		num(f.Width), num(f.Height), num(f.Width), num(f.Height), svgFont)
	if f.Title != "" {
		w.WriteString("<title>")
		w.WriteString(escape(f.Title))
		w.WriteString("</title>\n")
	}
	fmt.Fprintf(w, `<rect width="%s" height="%s" fill="#ffffff"/>`+"\n", num(f.Width), num(f.Height))
	for i := range f.els {
		e := &f.els[i]
		switch e.kind {
		case kindRect:
			w.WriteString("<rect")
			writeMetaAttrs(w, e.meta)
			fmt.Fprintf(w, ` x="%s" y="%s" width="%s" height="%s"`, num(e.x), num(e.y), num(e.w), num(e.h))
			writeStyle(w, e.style)
			writeClose(w, "rect", e.meta)
		case kindPath:
			tag := "polyline"
			if e.closed {
				tag = "polygon"
			}
			w.WriteString("<" + tag)
			writeMetaAttrs(w, e.meta)
			w.WriteString(` points="`)
			for j := 0; j+1 < len(e.pts); j += 2 {
				if j > 0 {
					w.WriteByte(' ')
				}
				w.WriteString(num(e.pts[j]))
				w.WriteByte(',')
				w.WriteString(num(e.pts[j+1]))
			}
			w.WriteByte('"')
			s := e.style
			if !e.closed && s.Fill.A == 0 {
				s.Fill = color.NRGBA{}
			}
			writeStyle(w, s)
			writeClose(w, tag, e.meta)
		case kindText:
			fmt.Fprintf(w, `<text x="%s" y="%s" font-size="%s"`, num(e.x), num(e.y), num(e.ts.Size))
			writeColor(w, "fill", e.ts.Color)
			switch e.ts.Anchor {
			case AnchorMiddle:
				w.WriteString(` text-anchor="middle"`)
			case AnchorEnd:
				w.WriteString(` text-anchor="end"`)
			}
			if e.ts.Bold {
				w.WriteString(` font-weight="bold"`)
			}
			if e.ts.Vertical {
				fmt.Fprintf(w, ` transform="rotate(-90 %s %s)"`, num(e.x), num(e.y))
			}
			w.WriteByte('>')
			w.WriteString(escape(e.text))
			w.WriteString("</text>\n")
		case kindGroup:
			w.WriteString("<g")
			writeMetaAttrs(w, e.meta)
			w.WriteString(">")
			if e.meta != nil && e.meta.Title != "" {
				w.WriteString("<title>")
				w.WriteString(escape(e.meta.Title))
				w.WriteString("</title>")
			}
			w.WriteString("\n")
		case kindEnd:
			w.WriteString("</g>\n")
		}
	}
	w.WriteString("</svg>\n")
}

func writeMetaAttrs(w *bufio.Writer, m *Meta) {
	if m == nil {
		return
	}
	if m.Class != "" {
		fmt.Fprintf(w, ` class="%s"`, escape(m.Class))
	}
	for _, d := range m.Data {
		fmt.Fprintf(w, ` data-%s="%s"`, d[0], escape(d[1]))
	}
}

func writeClose(w *bufio.Writer, tag string, m *Meta) {
	if m == nil || m.Title == "" {
		w.WriteString("/>\n")
		return
	}
	w.WriteString("><title>")
	w.WriteString(escape(m.Title))
	w.WriteString("</title></")
	w.WriteString(tag)
	w.WriteString(">\n")
}

func writeStyle(w *bufio.Writer, s Style) {
	writeColor(w, "fill", s.Fill)
	if s.Stroke.A != 0 {
		writeColor(w, "stroke", s.Stroke)
		if s.Width != 0 && s.Width != 1 {
			fmt.Fprintf(w, ` stroke-width="%s"`, num(s.Width))
		}
		if len(s.Dash) > 0 {
			w.WriteString(` stroke-dasharray="`)
			for i, d := range s.Dash {
				if i > 0 {
					w.WriteByte(' ')
				}
				w.WriteString(num(d))
			}
			w.WriteByte('"')
		}
	}
}

func writeColor(w *bufio.Writer, attr string, c color.NRGBA) {
	if c.A == 0 {
		if attr == "fill" {
			w.WriteString(` fill="none"`)
		}
		return
	}
	fmt.Fprintf(w, ` %s="#%02x%02x%02x"`, attr, c.R, c.G, c.B)
	if c.A != 0xff {
		fmt.Fprintf(w, ` %s-opacity="%s"`, attr, strconv.FormatFloat(float64(c.A)/255, 'f', 2, 64))
	}
}

// num formats a coordinate with at most one decimal.
func num(v float64) string {
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return "0"
	}
	v = math.Round(v*10) / 10
	if v == math.Trunc(v) {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'f', 1, 64)
}

var escaper = strings.NewReplacer("&", "&amp;", "<", "&lt;", ">", "&gt;", `"`, "&quot;", "'", "&#39;")

func escape(s string) string { return escaper.Replace(s) }
