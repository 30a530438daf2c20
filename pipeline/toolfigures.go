package pipeline

import (
	"encoding/json"
	"fmt"
	"math"
	"strings"
	"text/tabwriter"
)

// ToolFigures are the latency statistics of a benchmark file computed the
// way the tool that wrote it computes them (vLLM's bench serve, SGLang's
// bench_serving, AIPerf, GenAI-Perf), and, where the file carries that
// tool's own saved summary, how the two compare.
type ToolFigures struct {
	// Tool names the tool whose conventions were followed.
	Tool string `json:"tool"`
	// File names the file the figures are of.
	File string `json:"file,omitempty"`
	// Run labels the benchmark run within the file (SGLang appends one
	// run per line); empty for single-run files.
	Run string `json:"run,omitempty"`
	// Requests counts the requests the tool's statistics include
	// (successful ones with at least one chunk).
	Requests int `json:"requests"`
	// Metrics are the statistics, by the tool's metric names.
	Metrics []ToolMetric `json:"metrics"`
	// Checked counts the saved summary values compared; Mismatches lists
	// those that differ by more than ToolTolerance.
	Checked    int            `json:"checked"`
	Mismatches []ToolMismatch `json:"mismatches"`
	// Notes say what could not be compared, and why.
	Notes []string `json:"notes,omitempty"`
	// SavedOnly is true for a file that holds the tool's summary but no
	// per-request timings: the metrics are the saved values, Requests the
	// saved count of successful requests (-1: none saved).
	SavedOnly bool `json:"saved_only,omitempty"`
	// Goodput is the request goodput counted the way vLLM counts it, on
	// the file's own times, when SLOs were given (--goodput).
	Goodput *Goodput `json:"request_goodput,omitempty"`
}

// ToolMetric is one statistic as the tool names it, with underrun's name
// for the same quantity: computed from the file's requests (Summary), or
// only as the tool saved it (Saved: mean, median, std, min, max, pNN, in
// milliseconds).
type ToolMetric struct {
	Name    string             `json:"name"`
	Ours    string             `json:"ours"`
	Summary *Summary           `json:"summary,omitempty"`
	Saved   map[string]float64 `json:"saved_ms,omitempty"`
}

// ToolMismatch is a saved summary value that underrun computes
// differently from the same data.
type ToolMismatch struct {
	Key      string  `json:"key"`
	Saved    float64 `json:"saved"`
	Computed float64 `json:"computed"`
}

// MarshalJSON writes NaN and infinite values as null.
func (m ToolMismatch) MarshalJSON() ([]byte, error) {
	f := func(v float64) *float64 {
		if math.IsNaN(v) || math.IsInf(v, 0) {
			return nil
		}
		return &v
	}
	return json.Marshal(struct {
		Key      string   `json:"key"`
		Saved    *float64 `json:"saved"`
		Computed *float64 `json:"computed"`
	}{m.Key, f(m.Saved), f(m.Computed)})
}

// ToolToleranceMs is the largest difference, in milliseconds, between a
// saved and a recomputed value that still counts as equal: the files keep
// times to a nanosecond or better, and the tools print two decimals.
const ToolToleranceMs = 0.01

// writeText renders the figures for people.
func (f ToolFigures) writeText(b *strings.Builder) {
	title := f.Tool
	if f.File != "" {
		title += " " + f.File
	}
	if f.Run != "" {
		title += " (" + f.Run + ")"
	}
	switch {
	case f.SavedOnly && f.Requests >= 0:
		fmt.Fprintf(b, "\n%s: figures as that tool saved them, over %s\n", title, plural(f.Requests, "request"))
	case f.SavedOnly:
		fmt.Fprintf(b, "\n%s: figures as that tool saved them\n", title)
	default:
		fmt.Fprintf(b, "\n%s: figures as that tool computes them, over %s\n", title, plural(f.Requests, "request"))
	}
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric (ms)\tours\tcount\tmean\tmedian\tstd\tmin\tp90\tp99\tmax\t")
	for _, m := range f.Metrics {
		if s := m.Summary; s != nil {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t%.2f\t\n", m.Name, m.Ours, s.Count, s.Mean, s.Median, s.Std, s.Min, s.P90, s.P99, s.Max)
			continue
		}
		cell := func(stat string) string {
			v, ok := m.Saved[stat]
			if !ok && stat == "median" {
				v, ok = m.Saved["p50"]
			}
			if !ok {
				return "-"
			}
			return fmt.Sprintf("%.2f", v)
		}
		fmt.Fprintf(tw, "%s\t%s\t-\t%s\t%s\t%s\t%s\t%s\t%s\t%s\t\n", m.Name, m.Ours, cell("mean"), cell("median"), cell("std"), cell("min"), cell("p90"), cell("p99"), cell("max"))
	}
	tw.Flush()
	if f.Goodput != nil {
		fmt.Fprintf(b, "request goodput, counted as vLLM does: %s\n", f.Goodput)
	}
	switch {
	case f.SavedOnly:
	case f.Checked == 0:
		b.WriteString("the file carries no saved summary to compare with\n")
	case len(f.Mismatches) == 0:
		fmt.Fprintf(b, "saved summary: all %d values match (within %.2f ms)\n", f.Checked, ToolToleranceMs)
	default:
		fmt.Fprintf(b, "saved summary: %d of %d values differ:\n", len(f.Mismatches), f.Checked)
		for _, m := range f.Mismatches {
			fmt.Fprintf(b, "  %s: saved %.4f, computed %.4f\n", m.Key, m.Saved, m.Computed)
		}
	}
	for _, n := range f.Notes {
		fmt.Fprintf(b, "note: %s\n", n)
	}
}
