package sim

import (
	"fmt"
	"io"
	"math"
	"text/tabwriter"
)

// WriteText renders the result for people.
func (r *Result) WriteText(w io.Writer) {
	fmt.Fprintf(w, "Monte Carlo: %d turns, %.1f min of speech\n", r.Turns, r.SpeechSeconds/60)
	fmt.Fprintf(w, "  speech goodput %.4f (95%% Wilson interval %.4f - %.4f): %d turns interrupted\n",
		r.Goodput, r.GoodputLow, r.GoodputHigh, r.Interrupted)
	fmt.Fprintf(w, "  interruptions: %d (%.0f ms), %.3f per minute of speech; glitches: %d\n",
		r.Interruptions, r.InterruptionMs, r.InterruptionsRate, r.Glitches)
	fmt.Fprintf(w, "  interruptions per minute, per turn: mean %.3f, p50 %.3f, p90 %.3f, p99 %.3f, max %.3f\n",
		r.PerMinute.Mean, r.PerMinute.P50, r.PerMinute.P90, r.PerMinute.P99, r.PerMinute.Max)
	io.WriteString(w, "  turns by interruptions:")
	for n, k := range r.Counts {
		plus := ""
		if n == len(r.Counts)-1 {
			plus = "+"
		}
		fmt.Fprintf(w, " %d%s: %d (%.2f%%)", n, plus, k, 100*float64(k)/float64(max(1, r.Turns)))
	}
	io.WriteString(w, "\n")
	if r.ToolSilences > 0 {
		fmt.Fprintf(w, "  tool-call silences (not underruns): %d (%.0f ms)\n", r.ToolSilences, r.ToolSilenceMs)
	}
	if q := r.Streams; q != nil {
		fmt.Fprintf(w, "  tts server streams at once: mean %.2f, p50 %.0f, p99 %.0f, max %.0f\n", q.Mean, q.P50, q.P99, q.Max)
	}
	fmt.Fprintf(w, "  TPOT ms: mean %.1f, p50 %.1f, p99 %.1f, max %.1f\n", r.TPOT.Mean, r.TPOT.P50, r.TPOT.P99, r.TPOT.Max)
	fmt.Fprintf(w, "  ITL ms: p50 %.1f, p90 %.1f, p99 %.1f, p99.9 %.1f, max %.1f\n", r.ITL.P50, r.ITL.P90, r.ITL.P99, r.ITL.P999, r.ITL.Max)
	fmt.Fprintf(w, "  stall tolerance ms (%d positions after the player started, %d unbounded): min %.0f, p1 %.0f, p10 %.0f, p50 %.0f\n",
		r.Positions, r.Unbounded, r.Tolerance.Min, r.Tolerance.P1, r.Tolerance.P10, r.Tolerance.P50)
	for _, e := range r.Exposure {
		fmt.Fprintf(w, "  an ITL at the %s (%.1f ms, %.1f ms over the median) would be heard at %.2f%% of positions\n",
			e.Quantile, e.ITLMs, e.ExcessMs, 100*e.Exposed)
	}
}

// WriteSweep renders the points of sweep sw as a table for people, goodput
// under target marked, with the streams a TTS server srv (if not nil)
// held at each.
func WriteSweep(w io.Writer, sw Sweep, points []Point, target float64, srv *TTSServer) {
	tw := tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)
	server := ""
	if srv != nil {
		server = "TTS streams p50\tp99\tfirst audio at p99 ms\tRTF at p99\t"
	}
	fmt.Fprintf(tw, "%s\tgoodput\t95%% interval\tinterrupted turns\tinterruptions/min\tTPOT p50 ms\tITL p99 ms\tITL max ms\t%s\n", sw.Param, server)
	for _, p := range points {
		r := p.Result
		mark := ""
		if r.Goodput < target {
			mark = " <"
		}
		server = ""
		if q := r.Streams; srv != nil && q != nil {
			ttfa, rtf := srv.At(int(math.Ceil(q.P99)))
			server = fmt.Sprintf("%.0f\t%.0f\t%.1f\t%.3f\t", q.P50, q.P99, float64(ttfa)/1e6, rtf)
		}
		fmt.Fprintf(tw, "%s\t%.4f%s\t%.4f-%.4f\t%d\t%.3f\t%.1f\t%.1f\t%.1f\t%s\n", sw.Param.Format(p.Value), r.Goodput, mark,
			r.GoodputLow, r.GoodputHigh, r.Interrupted, r.InterruptionsRate, r.TPOT.P50, r.ITL.P99, r.ITL.Max, server)
	}
	tw.Flush()
}
