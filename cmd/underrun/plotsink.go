package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"path/filepath"
	"strings"

	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/cmd/underrun/internal/outfile"
	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/plot"
)

func init() { sinkFactories = append(sinkFactories, plotSinkFactory) }

// The plot kinds --plot-kind takes (on plot, and beside --plot).
const (
	plotAuto     = "auto"
	plotReport   = "report"
	plotTimeline = "timeline"
	plotTail     = "tail"
	plotFleet    = "fleet"
	plotSweep    = "sweep"
)

const plotKindHelp = "`KIND` to draw: auto (.html every plot; .svg/.png the worst turn's timeline, or the fleet view of several), timeline, tail, fleet"

// plotFormat returns the output format a plot file's extension names.
func plotFormat(path string) (string, error) {
	switch ext := strings.ToLower(filepath.Ext(path)); ext {
	case ".html", ".htm":
		return "html", nil
	case ".svg":
		return "svg", nil
	case ".png":
		return "png", nil
	default:
		return "", fmt.Errorf("%s: want a file ending in .html, .svg or .png, got %q", path, ext)
	}
}

// checkPlotKind validates a kind for a format.
func checkPlotKind(kind, format string) error {
	switch kind {
	case plotAuto, plotTimeline, plotTail, plotFleet:
		return nil
	case plotReport:
		if format != "html" {
			return fmt.Errorf("kind report needs an .html file, got a .%s one", format)
		}
		return nil
	}
	return fmt.Errorf("unknown plot kind %q; want auto, report, timeline, tail or fleet", kind)
}

// plotSink draws every turn of a run into one file (--plot).
type plotSink struct {
	env          *env
	out          *outfile.File
	format, kind string
	title        string
	report       *pipeline.Report
	collector    *plot.Collector
}

func plotSinkFactory(fs *pflag.FlagSet, _ *reportFlags) func(e *env, cfg pipeline.Config) (turnSink, error) {
	var path, kind string
	fs.StringVar(&path, "plot", "", "draw the run into `FILE`: .html (the report with every plot), .svg or .png (one plot: --plot-kind)")
	fs.StringVar(&kind, "plot-kind", plotAuto, plotKindHelp)
	return func(e *env, cfg pipeline.Config) (turnSink, error) {
		if path == "" {
			if fs.Changed("plot-kind") {
				return nil, usagef("--plot-kind needs --plot FILE")
			}
			return nil, nil
		}
		format, err := plotFormat(path)
		if err != nil {
			return nil, usagef("--plot: %w", err)
		}
		if err := checkPlotKind(kind, format); err != nil {
			return nil, usagef("--plot-kind: %w", err)
		}
		// opened before any work, so that a path that cannot be written
		// fails at once
		out, err := createOutput("--plot", path)
		if err != nil {
			return nil, err
		}
		opts := pipeline.ReportOptions{PerTurn: true, KeepUnderruns: true}
		if d, err := fs.GetDuration("tpot-slo"); err == nil {
			opts.TPOTSLO = d
		}
		if d, err := fs.GetDuration("ttft-slo"); err == nil {
			opts.TTFTSLO = d
		}
		if b, err := fs.GetBool("max-tpot"); err == nil {
			opts.MaxTPOT = b
		}
		return &plotSink{
			env: e, out: out, format: format, kind: kind,
			title:     "underrun report",
			report:    pipeline.NewReport(cfg, opts),
			collector: plot.NewCollector(0, 0),
		}, nil
	}
}

// Add draws nothing yet: it keeps what the plots need.
func (s *plotSink) Add(t *pipeline.Turn, p *pipeline.Playout) error {
	s.report.Add(t, p)
	s.collector.Add(t, p)
	return nil
}

// Close renders the plot into the file.
func (s *plotSink) Close() error {
	return writePlotFile(s.env.stderr, s.out, s.format, s.kind, s.title, s.report, s.collector, nil)
}

// Abort leaves the plot file as it was.
func (s *plotSink) Abort() { s.out.Abort() }

// errNoTimeline reports a timeline asked of a run with no played turn.
var errNoTimeline = errors.New("no turn to draw a timeline of")

// renderPlot draws the chosen plot of a run in the given format.
func renderPlot(format, kind, title string, r *pipeline.Report, c *plot.Collector, tl *plot.Timeline) ([]byte, error) {
	var buf bytes.Buffer
	if format == "html" && (kind == plotAuto || kind == plotReport) {
		pg := plot.NewPage(title, r, c)
		if tl != nil {
			pg.Timelines = []plot.Timeline{*tl}
		}
		err := plot.WriteHTML(&buf, pg)
		return buf.Bytes(), err
	}
	if kind == plotAuto {
		kind = plotTimeline
		if len(c.Fleet.Turns) > 1 && tl == nil {
			kind = plotFleet
		}
	}
	var f *plot.Figure
	switch kind {
	case plotTimeline:
		if tl == nil {
			tls := c.Timelines()
			if len(tls) == 0 {
				return nil, errNoTimeline
			}
			tl = &tls[0]
		}
		f = tl.Figure()
	case plotTail:
		f = c.Tail.Figure()
	case plotFleet:
		f = c.Fleet.Figure()
	}
	return renderFigure(&buf, format, title, f)
}

// renderFigure writes one figure as SVG, PNG, or an HTML page holding it.
func renderFigure(buf *bytes.Buffer, format, title string, f *plot.Figure) ([]byte, error) {
	var err error
	switch format {
	case "svg":
		err = f.WriteSVG(buf)
	case "png":
		err = f.WritePNG(buf)
	case "html":
		err = plot.WriteFigureHTML(buf, title, f)
	}
	return buf.Bytes(), err
}

// writePlotFile renders the plot into out, puts it in place and says on w
// what it wrote; on an error, out is dropped and what was at its path left
// as it was.
func writePlotFile(w io.Writer, out *outfile.File, format, kind, title string, r *pipeline.Report, c *plot.Collector, tl *plot.Timeline) error {
	b, err := renderPlot(format, kind, title, r, c, tl)
	if err == nil {
		_, err = out.Write(b)
	}
	if err != nil {
		out.Abort()
		return fmt.Errorf("plot %s: %w", out.Name(), err)
	}
	if err := out.Commit(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	fmt.Fprintf(w, "underrun: wrote %s (%s, %s)\n", out.Name(), plural(r.Turns, "turn"), plural(r.Underruns.Count, "underrun"))
	return nil
}
