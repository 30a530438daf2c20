package plot

import (
	"bytes"
	"encoding/xml"
	"flag"
	"fmt"
	"image"
	"image/png"
	"io"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

var update = flag.Bool("update", false, "rewrite the golden files")

// golden compares got with testdata/golden/name, or rewrites it with -update.
func golden(t *testing.T, name string, got []byte) {
	t.Helper()
	path := filepath.Join("testdata", "golden", name)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the golden file (go test ./pipeline/plot -update rewrites it); got %d bytes, want %d", path, len(got), len(want))
	}
}

// fleetTurns plays n seeded turns: every third one with an early stall,
// every fifth with a steady-state one.
func fleetTurns(t testing.TB, n int, cfg pipeline.Config) ([]*pipeline.Turn, *pipeline.Report, *Collector) {
	r := pipeline.NewReport(cfg, pipeline.ReportOptions{PerTurn: true, KeepUnderruns: true})
	c := NewCollector(0, 0)
	var turns []*pipeline.Turn
	for i := range n {
		stalls := map[int]time.Duration{}
		if i%3 == 0 {
			stalls[2+i%4] = time.Duration(900+100*(i%7)) * time.Millisecond
		}
		if i%5 == 0 {
			stalls[35] = time.Duration(i%4) * 2 * time.Second
		}
		turn := seededTurn(fmt.Sprintf("turn-%02d", i), uint64(i), time.Duration(120+15*(i%9))*time.Millisecond, stalls)
		p := played(t, turn, cfg)
		r.Add(turn, p)
		c.Add(turn, p)
		turns = append(turns, turn)
	}
	r.Close()
	return turns, r, c
}

func svgOf(t testing.TB, f *Figure) []byte {
	t.Helper()
	var b bytes.Buffer
	if err := f.WriteSVG(&b); err != nil {
		t.Fatal(err)
	}
	return b.Bytes()
}

func TestGoldenSVG(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	turn := stallyTurn()
	tl := NewTimeline(turn, played(t, turn, cfg))
	_, _, c := fleetTurns(t, 12, cfg)
	sweep := Sweep{Param: "TPOT", Unit: "ms", GoodputSLO: 0.95, Points: []SweepPoint{
		{Value: 20, Goodput: 1}, {Value: 40, InterruptionsPerMinute: 0.1, Goodput: 0.99},
		{Value: 60, InterruptionsPerMinute: 0.5, Goodput: 0.96}, {Value: 80, InterruptionsPerMinute: 2, Goodput: 0.8},
		{Value: 100, InterruptionsPerMinute: 5, Goodput: 0.5},
	}}
	sf, err := sweep.Figure()
	if err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		name string
		fig  *Figure
	}{
		{"timeline.svg", tl.Figure()},
		{"tail.svg", c.Tail.Figure()},
		{"fleet.svg", c.Fleet.Figure()},
		{"sweep.svg", sf},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := svgOf(t, tc.fig)
			if err := xml.Unmarshal(got, new(struct{})); err != nil {
				t.Fatalf("not well-formed XML: %v", err)
			}
			golden(t, tc.name, got)
		})
	}
}

// svgMark is an element of a rendered SVG that stands for underruns.
type svgMark struct {
	class string
	data  map[string]string
	x, w  float64
}

// underrunMarks parses an SVG and returns its underrun marks.
func underrunMarks(t *testing.T, svg []byte) []svgMark {
	t.Helper()
	dec := xml.NewDecoder(bytes.NewReader(svg))
	var out []svgMark
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			return out
		}
		if err != nil {
			t.Fatalf("SVG does not parse: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		m := svgMark{data: map[string]string{}}
		for _, a := range se.Attr {
			switch {
			case a.Name.Local == "class":
				m.class = a.Value
			case strings.HasPrefix(a.Name.Local, "data-"):
				m.data[strings.TrimPrefix(a.Name.Local, "data-")] = a.Value
			case a.Name.Local == "x":
				m.x, _ = strconv.ParseFloat(a.Value, 64)
			case a.Name.Local == "width":
				m.w, _ = strconv.ParseFloat(a.Value, 64)
			}
		}
		if strings.HasPrefix(m.class, "underrun") {
			out = append(out, m)
		}
	}
}

// counted sums the underruns the marks stand for.
func counted(marks []svgMark) int {
	n := 0
	for _, m := range marks {
		if c, ok := m.data["underruns"]; ok {
			v, _ := strconv.Atoi(c)
			n += v
		} else {
			n++
		}
	}
	return n
}

// TestEveryUnderrunDrawn checks that every underrun of the report appears
// in the timeline and in the fleet view, alone or counted in a mark, at
// every size from one row per turn to binned rows.
func TestEveryUnderrunDrawn(t *testing.T) {
	t.Parallel()
	slow := pipeline.DefaultConfig()
	slow.Synth.RTF = 1.3 // hundreds of frame-sized glitches per turn
	for _, tc := range []struct {
		name  string
		turns int
		cfg   pipeline.Config
	}{
		{"one turn", 1, pipeline.DefaultConfig()},
		{"12 turns", 12, pipeline.DefaultConfig()},
		{"400 turns binned", 400, pipeline.DefaultConfig()},
		{"slow synthesizer", 2, slow},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			turns, r, c := fleetTurns(t, tc.turns, tc.cfg)
			if r.Underruns.Count == 0 {
				t.Fatal("the test input has no underruns")
			}
			marks := underrunMarks(t, svgOf(t, c.Fleet.Figure()))
			if got, want := counted(marks), r.Underruns.Count; got != want {
				t.Errorf("fleet view: %d underruns drawn, report has %d", got, want)
			}
			if tc.turns <= fleetMaxH/fleetMinRow {
				// one row per turn: each underrun is its own mark
				byTurn := map[string]int{}
				for _, m := range marks {
					byTurn[m.data["turn"]]++
				}
				for _, tr := range r.PerTurn {
					if byTurn[tr.Turn] != tr.Underruns.Count {
						t.Errorf("fleet view: turn %s has %d marks, report %d underruns", tr.Turn, byTurn[tr.Turn], tr.Underruns.Count)
					}
				}
			}
			// each turn's timeline (the first few of a large fleet)
			total, want := 0, 0
			for _, turn := range turns[:min(len(turns), 30)] {
				p := played(t, turn, tc.cfg)
				tl := NewTimeline(turn, p)
				tm := underrunMarks(t, svgOf(t, tl.Figure()))
				if got, want := counted(tm), len(p.Underruns); got != want {
					t.Errorf("timeline %s: %d underruns drawn, playout has %d", turn.ID, got, want)
				}
				// a mark standing for one underrun says which
				for _, m := range tm {
					if _, multi := m.data["underruns"]; multi {
						continue
					}
					ms, _ := strconv.ParseFloat(m.data["start-ms"], 64)
					found := false
					for _, u := range r.List {
						if u.Turn == turn.ID && fmt.Sprintf("%.3f", u.StartMs) == fmt.Sprintf("%.3f", ms) {
							found = true
						}
					}
					if !found {
						t.Errorf("timeline %s: mark at %v ms is no underrun of the report", turn.ID, ms)
					}
				}
				total += counted(tm)
				for _, tr := range r.PerTurn {
					if tr.Turn == turn.ID {
						want += tr.Underruns.Count
					}
				}
			}
			if total != want {
				t.Errorf("timelines: %d underruns drawn, report has %d", total, want)
			}
		})
	}
}

// pixelVariety decodes a PNG and returns its size and the number of
// distinct colours among a sample of its pixels.
func pixelVariety(t *testing.T, b []byte) (image.Point, int, float64) {
	t.Helper()
	img, err := png.Decode(bytes.NewReader(b))
	if err != nil {
		t.Fatalf("not a PNG: %v", err)
	}
	bounds := img.Bounds()
	colours := map[[4]uint32]bool{}
	nonWhite, total := 0, 0
	for y := bounds.Min.Y; y < bounds.Max.Y; y += 3 {
		for x := bounds.Min.X; x < bounds.Max.X; x += 3 {
			r, g, bl, a := img.At(x, y).RGBA()
			colours[[4]uint32{r >> 8, g >> 8, bl >> 8, a >> 8}] = true
			total++
			if r>>8 < 0xf0 || g>>8 < 0xf0 || bl>>8 < 0xf0 {
				nonWhite++
			}
		}
	}
	return bounds.Size(), len(colours), float64(nonWhite) / float64(total)
}

func TestPNG(t *testing.T) {
	t.Parallel()
	// a small figure with every primitive: rasterizing is slow under -race
	f := NewFigure(320, 200, "primitives")
	f.Rect(10, 10, 100, 60, Style{Fill: alpha(SkyBlue, 0.5), Stroke: Blue}, nil)
	f.Path([]float64{10, 190, 100, 100, 200, 150, 310, 20}, false, stroke(Vermillion, 2, 5, 3), nil)
	f.Path([]float64{200, 20, 260, 20, 230, 70}, true, solid(BluishGreen), nil)
	f.Text(160, 100, "audio buffered (s)", TextStyle{Size: 14, Anchor: AnchorMiddle, Bold: true})
	f.Text(300, 190, "end", TextStyle{Anchor: AnchorEnd, Vertical: true})
	var b bytes.Buffer
	if err := f.WritePNG(&b); err != nil {
		t.Fatal(err)
	}
	size, colours, ink := pixelVariety(t, b.Bytes())
	if size.X != int(f.Width)*PNGScale || size.Y != int(f.Height)*PNGScale {
		t.Errorf("PNG is %v, want %vx%v", size, f.Width*PNGScale, f.Height*PNGScale)
	}
	if colours < 20 || ink < 0.05 || ink > 0.9 {
		t.Errorf("PNG looks blank or flooded: %d colours, %.0f%% ink", colours, 100*ink)
	}
	if err := NewFigure(0, 10, "").WritePNG(io.Discard); err == nil {
		t.Error("an empty figure rasterized with no error")
	}
}

func xmlWellFormed(b []byte) error {
	dec := xml.NewDecoder(bytes.NewReader(b))
	for {
		_, err := dec.Token()
		if err == io.EOF {
			return nil
		}
		if err != nil {
			return err
		}
	}
}
