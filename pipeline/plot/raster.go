package plot

import (
	"bufio"
	"fmt"
	"image/png"
	"io"
	"math"
	"sync"

	stdfont "golang.org/x/image/font"
	"gonum.org/v1/plot/font"
	"gonum.org/v1/plot/font/liberation"
	"gonum.org/v1/plot/vg"
	"gonum.org/v1/plot/vg/vgimg"
)

// PNGScale is how many PNG pixels a figure pixel becomes: 2 keeps text
// sharp on high-density screens and in chat previews.
const PNGScale = 2

var (
	fontsOnce sync.Once
	fonts     *font.Cache
)

// face returns the Liberation Sans face the layout is measured with and
// the PNG is drawn with.
func face(size float64, bold bool) font.Face {
	fontsOnce.Do(func() { fonts = font.NewCache(liberation.Collection()) })
	f := font.Font{Typeface: "Liberation", Variant: "Sans"}
	if bold {
		f.Weight = stdfont.WeightBold
	}
	return fonts.Lookup(f, font.Length(size))
}

// textWidth returns the width in pixels of s set at size.
func textWidth(s string, size float64, bold bool) float64 {
	f := face(size, bold)
	return float64(f.Width(s))
}

// WritePNG renders the figure as a PNG image at PNGScale.
func (f *Figure) WritePNG(w io.Writer) error {
	if f.Width <= 0 || f.Height <= 0 || f.Width*f.Height*PNGScale*PNGScale > 1<<28 {
		return fmt.Errorf("plot: cannot rasterize a %gx%g figure", f.Width, f.Height)
	}
	c := vgimg.NewWith(vgimg.UseWH(vg.Length(f.Width), vg.Length(f.Height)), vgimg.UseDPI(72*PNGScale), vgimg.UseBackgroundColor(white))
	h := f.Height
	pt := func(x, y float64) vg.Point { return vg.Point{X: vg.Length(x), Y: vg.Length(h - y)} }
	for i := range f.els {
		e := &f.els[i]
		switch e.kind {
		case kindRect:
			var p vg.Path
			p.Move(pt(e.x, e.y))
			p.Line(pt(e.x+e.w, e.y))
			p.Line(pt(e.x+e.w, e.y+e.h))
			p.Line(pt(e.x, e.y+e.h))
			p.Close()
			paint(c, p, e.style, true)
		case kindPath:
			var p vg.Path
			p.Move(pt(e.pts[0], e.pts[1]))
			for j := 2; j+1 < len(e.pts); j += 2 {
				p.Line(pt(e.pts[j], e.pts[j+1]))
			}
			if e.closed {
				p.Close()
			}
			paint(c, p, e.style, e.closed || e.style.Fill.A != 0)
		case kindText:
			fc := face(e.ts.Size, e.ts.Bold)
			dx := 0.0
			switch e.ts.Anchor {
			case AnchorMiddle:
				dx = -float64(fc.Width(e.text)) / 2
			case AnchorEnd:
				dx = -float64(fc.Width(e.text))
			}
			c.SetColor(e.ts.Color)
			if e.ts.Vertical {
				c.Push()
				c.Translate(pt(e.x, e.y))
				c.Rotate(math.Pi / 2)
				c.FillString(fc, vg.Point{X: vg.Length(dx)}, e.text)
				c.Pop()
			} else {
				c.FillString(fc, pt(e.x+dx, e.y), e.text)
			}
		}
	}
	bw := bufio.NewWriter(w)
	enc := png.Encoder{CompressionLevel: png.BestSpeed}
	if err := enc.Encode(bw, c.Image()); err != nil {
		return fmt.Errorf("plot: writing PNG: %w", err)
	}
	return bw.Flush()
}

func paint(c *vgimg.Canvas, p vg.Path, s Style, fill bool) {
	if fill && s.Fill.A != 0 {
		c.SetColor(s.Fill)
		c.Fill(p)
	}
	if s.Stroke.A != 0 {
		c.SetColor(s.Stroke)
		lw := s.Width
		if lw == 0 {
			lw = 1
		}
		c.SetLineWidth(vg.Length(lw))
		if len(s.Dash) > 0 {
			d := make([]vg.Length, len(s.Dash))
			for i, v := range s.Dash {
				d[i] = vg.Length(v)
			}
			c.SetLineDash(d, 0)
		} else {
			c.SetLineDash(nil, 0)
		}
		c.Stroke(p)
	}
}
