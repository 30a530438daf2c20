package main

import (
	"bytes"
	"errors"
	"fmt"
	"io"
	"os"
	"slices"
	"strings"
	"time"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/cmd/underrun/internal/outfile"
	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/plot"
	"github.com/speech-pipeline/underrun/scenarios"
)

func init() {
	commands = append(commands, func(e *env) *cobra.Command { return newPlotCommand(e).cmd })
}

const plotLong = `Draw a trace (or a built-in scenario) so people can see why the listener
heard silence.

  .html  one self-contained file (no network needed): the text summary, the
         fleet view, the timelines of the worst turns, the ITL tail plot and
         the per-turn table
  .svg   one plot, for documents
  .png   one plot, for chat and tickets

Plots:
  timeline  one turn: token arrivals, chunk releases, synthesizer busy time,
            the audio buffered with the stall tolerance under it, start-up
            (TTFA) shaded apart, each underrun shaded and labelled with its
            cause and length
  tail      the ITL distribution as a complementary CDF on log scales, with
            the stall tolerance at the start of a turn and in steady state
  fleet     every turn as a row, worst first, underruns as marks along time
  sweep     interruption rate and speech goodput against a swept setting,
            from a sweep JSON file ({"param","unit","points":[{"value",
            "interruptions_per_minute","speech_goodput"}],"goodput_slo"}),
            read run by run; past 2,000 runs each line is drawn through
            its lowest and highest run in every pixel column

The input is a trace file in any format underrun reads (- for standard
input), "default" for the built-in default turn, or the name of a built-in
scenario (which brings its own speech model). The
speech-model flags are those of analyze. Colours are the Okabe-Ito palette, readable with
colour blindness.

Exit codes: 0 the plot was written; 2 bad usage or bad input.`

const plotExample = `  underrun plot default -o default.html
  underrun plot trace.jsonl -o report.html --chunking sentence --tts-latency 250ms
  underrun plot trace.jsonl -o worst.png                  # worst turn's timeline, or the fleet
  underrun plot trace.jsonl -o t17.svg --plot-kind timeline --turn t17
  underrun plot vllm_result.json -o tail.png --plot-kind tail
  underrun plot sweep.json -o sweep.svg --plot-kind sweep`

type plotCommand struct {
	env    *env
	cmd    *cobra.Command
	engine engineFlags
	out    string
	file   *outfile.File // the output at out, once opened
	kind   string
	turn   string
	format string
	slo    time.Duration
	invert bool
}

func newPlotCommand(e *env) *plotCommand {
	c := &plotCommand{env: e}
	oneInput := func(_ *cobra.Command, args []string) error {
		if len(args) != 1 {
			return usagef("plot takes one input (a trace file, - for stdin, or default), got %d", len(args))
		}
		return nil
	}
	c.cmd = newCommand("plot FILE|default -o OUT.html|OUT.svg|OUT.png", "Draw timelines, the ITL tail and the fleet view as HTML, SVG or PNG",
		plotLong, plotExample, oneInput,
		func(cmd *cobra.Command, args []string) error { return c.run(cmd, args[0]) })
	fs := c.cmd.Flags()
	c.engine.bind(fs)
	fs.StringVarP(&c.out, "output", "o", "", "write the plot to `FILE` (.html, .svg or .png)")
	fs.StringVar(&c.kind, "plot-kind", plotAuto, plotKindHelp+", sweep (of a sweep JSON file)")
	renamed(e, fs, "kind", "", "plot-kind")
	fs.StringVar(&c.turn, "turn", "", "draw the timeline of the turn with this `ID` (default: the worst)")
	bindFormat(fs, &c.format, "input")
	fs.DurationVar(&c.slo, "tpot-slo", 0, "fail a turn whose TPOT is over this, in the report's verdict (default: none; the verdict is what the listener hears)")
	fs.BoolVar(&c.invert, "max-tpot", true, "find, per turn, the largest constant TPOT with no interruption")
	showFlags(c.cmd, "output", "plot-kind", "turn", "format", "stack", "chunking", "tts-latency", "preroll")
	return c
}

func (c *plotCommand) run(cmd *cobra.Command, input string) error {
	if c.out == "" {
		return usagef("plot needs -o FILE (.html, .svg or .png)")
	}
	format, err := plotFormat(c.out)
	if err != nil {
		return usagef("-o: %w", err)
	}
	if c.kind != plotSweep {
		if err := checkPlotKind(c.kind, format); err != nil {
			return usagef("--plot-kind: %w", err)
		}
		if c.turn != "" && c.kind != plotTimeline && c.kind != plotAuto {
			return usagef("--turn picks a timeline; it does not go with --plot-kind %s", c.kind)
		}
	}
	// opened before any work, so that a path that cannot be written fails
	// at once; put in place when the plot is complete
	if c.file, err = createOutput("-o", c.out); err != nil {
		return err
	}
	defer c.file.Abort() // after Commit, nothing
	if c.kind == plotSweep {
		return c.runSweep(input, format)
	}
	cfg, err := c.engine.config()
	if err != nil {
		return err
	}
	var scenario *scenarios.Scenario
	if _, statErr := os.Stat(input); statErr != nil && input != "-" && input != "default" {
		if sc, err := scenarios.Builtin(input); err == nil {
			// a built-in scenario brings its own speech model
			scenario, cfg = sc, sc.Setup.Config
		}
	}
	playout, err := pipeline.NewPlayout(cfg, "")
	if err != nil {
		return usageError{err}
	}
	report := pipeline.NewReport(cfg, pipeline.ReportOptions{
		TPOTSLO: c.slo, PerTurn: true, KeepUnderruns: true, MaxTPOT: c.invert,
	})
	collector := plot.NewCollector(0, 0)
	var chosen *plot.Timeline
	title := "underrun report: " + input
	add := func(t *pipeline.Turn) error {
		if err := t.Validate(); err != nil {
			return err
		}
		if err := playout.PlayTurn(t); err != nil {
			return err
		}
		report.Add(t, playout)
		collector.Add(t, playout)
		if c.turn != "" && t.ID == c.turn && chosen == nil {
			tl := plot.NewTimeline(t, playout)
			chosen = &tl
		}
		return nil
	}
	if input == "default" {
		if _, err := os.Stat(input); err != nil {
			title = "underrun report: the built-in default turn"
			if err := add(scenarios.DefaultTurn()); err != nil {
				return err
			}
			return c.write(format, title, report, collector, chosen)
		}
	}
	if scenario != nil {
		title = "underrun report: scenario " + scenario.Name
		if err := scenario.EachTurn(cmd.Context(), scenario.Turns, add); err != nil {
			return err
		}
	} else if err := c.readTrace(cmd, input, add); err != nil {
		return err
	}
	if c.turn != "" && chosen == nil {
		return usagef("--turn: no turn %q in %s", c.turn, input)
	}
	if len(collector.Fleet.Turns) == 0 {
		return usagef("%s: no turns to draw", input)
	}
	return c.write(format, title, report, collector, chosen)
}

func (c *plotCommand) write(format, title string, r *pipeline.Report, col *plot.Collector, tl *plot.Timeline) error {
	return writePlotFile(c.env.stderr, c.file, format, c.kind, title, r, col, tl)
}

func (c *plotCommand) readTrace(cmd *cobra.Command, name string, add func(*pipeline.Turn) error) error {
	in, err := openInput(c.env, name)
	if err != nil {
		if errors.Is(err, os.ErrNotExist) {
			names := slices.DeleteFunc(scenarios.Names(), func(n string) bool { return n == "default" })
			return usagef("%s: no such file or built-in scenario (scenarios: default, %s)", name, strings.Join(names, ", "))
		}
		return err
	}
	defer in.Close()
	dec, err := in.decoder(c.format)
	if err != nil {
		return err
	}
	return in.each(cmd.Context(), dec, func(t *pipeline.Turn) error {
		if err := add(t); err != nil {
			return usageError{fmt.Errorf("%s: %w", in.label, err)}
		}
		return nil
	})
}

// runSweep draws a sweep read from a JSON file.
func (c *plotCommand) runSweep(input, format string) error {
	var r io.Reader = c.env.stdin
	if input != "-" {
		f, err := os.Open(input)
		if err != nil {
			return usageError{err}
		}
		defer f.Close()
		r = f
	}
	sw, err := plot.ReadSweep(r)
	if err != nil {
		return usagef("%s: not a sweep JSON file: %w", input, err)
	}
	n := len(sw.Points)
	fig, err := sw.Figure()
	if err != nil {
		return usagef("%s: %w", input, err)
	}
	var buf bytes.Buffer
	b, err := renderFigure(&buf, format, "sweep of "+sw.Param, fig)
	if err != nil {
		return err
	}
	if _, err := c.file.Write(b); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	if err := c.file.Commit(); err != nil {
		return fmt.Errorf("plot: %w", err)
	}
	fmt.Fprintf(c.env.stderr, "underrun: wrote %s (sweep of %s)\n", c.out, plural(n, "point"))
	return nil
}

// plural says "1 turn" or "3 turns".
func plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return fmt.Sprintf("%d %ss", n, noun)
}
