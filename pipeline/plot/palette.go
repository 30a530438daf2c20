package plot

import (
	"image/color"

	"github.com/speech-pipeline/underrun/pipeline"
)

// The Okabe-Ito palette: eight colours that stay distinct for the common
// forms of colour blindness.
var (
	Black         = color.NRGBA{0x00, 0x00, 0x00, 0xff}
	Orange        = color.NRGBA{0xe6, 0x9f, 0x00, 0xff}
	SkyBlue       = color.NRGBA{0x56, 0xb4, 0xe9, 0xff}
	BluishGreen   = color.NRGBA{0x00, 0x9e, 0x73, 0xff}
	Yellow        = color.NRGBA{0xf0, 0xe4, 0x42, 0xff}
	Blue          = color.NRGBA{0x00, 0x72, 0xb2, 0xff}
	Vermillion    = color.NRGBA{0xd5, 0x5e, 0x00, 0xff}
	ReddishPurple = color.NRGBA{0xcc, 0x79, 0xa7, 0xff}
)

// Neutral colours for frames, grids and inactive parts.
var (
	grey      = color.NRGBA{0x88, 0x88, 0x88, 0xff}
	lightGrey = color.NRGBA{0xdd, 0xdd, 0xdd, 0xff}
	gridGrey  = color.NRGBA{0xee, 0xee, 0xee, 0xff}
	textGrey  = color.NRGBA{0x44, 0x44, 0x44, 0xff}
	white     = color.NRGBA{0xff, 0xff, 0xff, 0xff}
)

// causes lists the underrun causes in legend order.
var causes = pipeline.Causes

// CauseColor returns the colour an underrun of cause c is drawn in.
func CauseColor(c pipeline.Cause) color.NRGBA {
	switch c {
	case pipeline.CauseStall:
		return Vermillion
	case pipeline.CausePace:
		return Orange
	case pipeline.CauseStartup:
		return ReddishPurple
	case pipeline.CauseHeld:
		return Blue
	case pipeline.CauseSynthesizer:
		return BluishGreen
	case pipeline.CauseTransport:
		return Yellow
	}
	return grey
}

// alpha returns c with opacity a (0..1).
func alpha(c color.NRGBA, a float64) color.NRGBA {
	c.A = uint8(a*255 + 0.5)
	return c
}
