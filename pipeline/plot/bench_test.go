package plot

import (
	"fmt"
	"io"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// syntheticFleet makes n seeded turns of 5 to 35 s with a few underruns
// each in a third of them: the shape of a large production trace.
func syntheticFleet(n int) *Fleet {
	rng := rand.New(rand.NewPCG(42, 42))
	fl := &Fleet{Turns: make([]FleetTurn, 0, n)}
	for i := range n {
		id := fmt.Sprintf("turn-%06d", i)
		ft := FleetTurn{
			Turn:     id,
			Severity: pipeline.Severity{Turn: id},
			TTFA:     time.Duration(200+rng.IntN(600)) * time.Millisecond,
			End:      time.Duration(5000+rng.IntN(30000)) * time.Millisecond,
		}
		if rng.IntN(3) == 0 {
			for range 1 + rng.IntN(4) {
				m := Mark{
					Start:    time.Duration(rng.Int64N(int64(ft.End))),
					Duration: time.Duration(1+rng.IntN(900)) * time.Millisecond,
					Cause:    causes[rng.IntN(len(causes))],
					Class:    pipeline.Glitch,
				}
				if m.Duration >= pipeline.DefaultInterruption {
					m.Class = pipeline.Interruption
					ft.Severity.Interruptions++
					ft.Severity.Interrupted += m.Duration
				} else {
					ft.Severity.Glitches++
				}
				ft.Severity.Silence += m.Duration
				ft.Marks = append(ft.Marks, m)
			}
		}
		fl.Turns = append(fl.Turns, ft)
	}
	return fl
}

// countingWriter counts the bytes written.
type countingWriter struct{ n int64 }

func (w *countingWriter) Write(p []byte) (int, error) { w.n += int64(len(p)); return len(p), nil }

// BenchmarkFleet100k draws the fleet view of 100,000 turns (target: under
// 5 s and 50 MB of output).
func BenchmarkFleet100k(b *testing.B) {
	fl := syntheticFleet(100_000)
	for _, format := range []string{"svg", "png"} {
		b.Run(format, func(b *testing.B) {
			b.ReportAllocs()
			var w countingWriter
			for b.Loop() {
				w.n = 0
				f := fl.Figure()
				var err error
				if format == "svg" {
					err = f.WriteSVG(&w)
				} else {
					err = f.WritePNG(&w)
				}
				if err != nil {
					b.Fatal(err)
				}
			}
			b.ReportMetric(float64(w.n)/1e6, "MB/op-output")
		})
	}
}

// BenchmarkHTML100k renders the HTML report of 100,000 turns: summary,
// fleet view, ITL tail of 5 million ITLs and the (capped) per-turn table.
func BenchmarkHTML100k(b *testing.B) {
	fl := syntheticFleet(100_000)
	r := pipeline.NewReport(pipeline.DefaultConfig(), pipeline.ReportOptions{PerTurn: true})
	tail := NewTail(0)
	rng := rand.New(rand.NewPCG(1, 2))
	for i := range fl.Turns {
		turn := &pipeline.Turn{ID: fl.Turns[i].Turn, Status: pipeline.StatusOK}
		r.Add(turn, nil)
		for range 50 {
			tail.AddITL(20 + rng.ExpFloat64()*30)
		}
	}
	b.ReportAllocs()
	var w countingWriter
	for b.Loop() {
		w.n = 0
		if err := WriteHTML(&w, Page{Title: "100k turns", Report: r, Fleet: fl, Tail: tail}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(w.n)/1e6, "MB/op-output")
}

// BenchmarkTimeline draws the timeline of one seeded turn as SVG.
func BenchmarkTimeline(b *testing.B) {
	turn := stallyTurn()
	tl := NewTimeline(turn, played(b, turn, pipeline.DefaultConfig()))
	b.ReportAllocs()
	for b.Loop() {
		if err := tl.Figure().WriteSVG(io.Discard); err != nil {
			b.Fatal(err)
		}
	}
}

// TestSyntheticFleetDrawn checks the binned fleet view of a large
// synthetic fleet counts every underrun.
func TestSyntheticFleetDrawn(t *testing.T) {
	t.Parallel()
	fl := syntheticFleet(5000)
	if got, want := counted(underrunMarks(t, svgOf(t, fl.Figure()))), fl.Underruns(); got != want {
		t.Errorf("%d underruns drawn, fleet has %d", got, want)
	}
}
