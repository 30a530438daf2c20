package speak

import (
	"fmt"
	"io"
	"math"
	"slices"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// Report is what a run heard against what the engine predicted, turn by
// turn (Session.Report): Results[i] was compared in Comparisons[i].
type Report struct {
	// Synthesizer names the synthesizer; Mode is how it was driven.
	Synthesizer string
	Mode        tts.Mode
	// Tolerance is the one the comparisons were made with.
	Tolerance   time.Duration
	Results     []*Result
	Comparisons []*Comparison
}

// Agrees reports whether every turn was heard as predicted.
func (r *Report) Agrees() bool {
	for _, cmp := range r.Comparisons {
		if !cmp.Agrees() {
			return false
		}
	}
	return true
}

// Late is how long after the audio was due the player drained its buffer
// at worst (each sample still played at its own time).
func (r *Report) Late() time.Duration {
	var late time.Duration
	for _, res := range r.Results {
		late = max(late, res.Heard.Late)
	}
	return late
}

// SynthSummary says how the synthesizer did: its median first audio after
// being given a chunk, and its speed.
func (r *Report) SynthSummary() string {
	var firsts []float64
	var audio, busy time.Duration
	chunks, failed := 0, 0
	for _, res := range r.Results {
		for _, c := range res.Chunks {
			chunks++
			if c.Err != "" {
				failed++
			}
			if c.HasAudio {
				firsts = append(firsts, pipeline.Millis(c.First-c.Sent))
				audio += c.Audio
				busy += c.Done - c.First
			}
		}
	}
	s := fmt.Sprintf("%s, %s mode: %d chunks", r.Synthesizer, r.Mode, chunks)
	if len(firsts) > 0 {
		slices.Sort(firsts)
		s += fmt.Sprintf(", first audio %.0f ms median after each was given", firsts[len(firsts)/2])
	}
	if audio > 0 {
		s += fmt.Sprintf(", RTF %.3f after it", busy.Seconds()/audio.Seconds())
	}
	if failed > 0 {
		s += fmt.Sprintf(", %d failed", failed)
	}
	return s
}

// WriteText writes heard against predicted, turn by turn, for people.
func (r *Report) WriteText(w io.Writer) error {
	fmt.Fprintf(w, "\nheard versus predicted: the engine given the same token arrivals and the synthesizer's\n")
	fmt.Fprintf(w, "measured timings (%s); a heard and a predicted gap are the same within %v\n\n", r.SynthSummary(), r.Tolerance)
	fmt.Fprintf(w, "  %-12s %12s %10s %12s %10s %9s %9s  %s\n", "turn", "heard ms", "length ms", "predicted ms", "length ms", "start +ms", "length +ms", "")
	total, agree := 0, 0
	for _, cmp := range r.Comparisons {
		for _, p := range cmp.Pairs {
			total++
			var hs, hl, ps, pl, ds, dl string = "-", "-", "-", "-", "", ""
			if p.Heard != nil {
				hs, hl = fmt.Sprintf("%.1f", pipeline.Millis(p.Heard.Start)), fmt.Sprintf("%.1f", pipeline.Millis(p.Heard.Duration))
			}
			if p.Predicted != nil {
				ps, pl = fmt.Sprintf("%.1f", pipeline.Millis(p.Predicted.Start)), fmt.Sprintf("%.1f", pipeline.Millis(p.Predicted.Duration))
			}
			if p.Heard != nil && p.Predicted != nil {
				ds, dl = fmt.Sprintf("%+.1f", pipeline.Millis(p.StartDiff)), fmt.Sprintf("%+.1f", pipeline.Millis(p.LengthDiff))
			}
			kind := "same"
			if p.Kind != "" {
				kind = string(p.Kind)
			} else {
				agree++
			}
			fmt.Fprintf(w, "  %-12s %12s %10s %12s %10s %9s %9s  %s\n", cmp.Turn, hs, hl, ps, pl, ds, dl, kind)
		}
	}
	if total == 0 {
		fmt.Fprintf(w, "  (no gap heard, none predicted)\n")
	}
	var diffs []string
	var worst time.Duration
	for _, cmp := range r.Comparisons {
		for _, p := range cmp.Differences() {
			diffs = append(diffs, fmt.Sprintf("%s %s", cmp.Turn, p.Kind))
		}
		for _, p := range cmp.Pairs {
			if p.Heard != nil && p.Predicted != nil {
				worst = max(worst, absDur(p.StartDiff), absDur(p.LengthDiff))
			}
		}
	}
	fmt.Fprintf(w, "\n%d of %d gaps heard as predicted (largest difference %.1f ms)", agree, total, pipeline.Millis(worst))
	if len(diffs) == 0 {
		fmt.Fprintf(w, "; no differences\n")
	} else {
		fmt.Fprintf(w, "; differences: %s\n", strings.Join(diffs, ", "))
	}
	if late := r.Late(); late > 0 {
		fmt.Fprintf(w, "the player drained its buffer up to %.1f ms after the audio was due (each sample still played at its own time)\n", pipeline.Millis(late))
	}
	return nil
}

// ReportJSON is a Report for machines (stable key names).
type ReportJSON struct {
	ToleranceMs float64    `json:"tolerance_ms"`
	Synthesizer string     `json:"synthesizer"`
	Mode        tts.Mode   `json:"mode"`
	Agrees      bool       `json:"agrees"`
	Turns       []TurnJSON `json:"turns"`
}

// TurnJSON is one turn of a ReportJSON.
type TurnJSON struct {
	Turn        string     `json:"turn"`
	Agrees      bool       `json:"agrees"`
	StartDiffMs float64    `json:"startup_diff_ms"`
	Pairs       []PairJSON `json:"gaps"`
	Errors      []string   `json:"synthesis_errors,omitempty"`
}

// GapJSON is a heard or predicted gap of a PairJSON.
type GapJSON struct {
	StartMs    float64 `json:"start_ms"`
	DurationMs float64 `json:"duration_ms"`
	Class      string  `json:"class"`
	Cause      string  `json:"cause,omitempty"`
}

// PairJSON is a Pair: its kind ("same" when the two agree), the gaps and
// their differences.
type PairJSON struct {
	Kind         string   `json:"kind"`
	Heard        *GapJSON `json:"heard,omitempty"`
	Predicted    *GapJSON `json:"predicted,omitempty"`
	StartDiffMs  *float64 `json:"start_diff_ms,omitempty"`
	LengthDiffMs *float64 `json:"length_diff_ms,omitempty"`
}

func gapJSON(u *pipeline.Underrun) *GapJSON {
	if u == nil {
		return nil
	}
	return &GapJSON{StartMs: round3(pipeline.Millis(u.Start)), DurationMs: round3(pipeline.Millis(u.Duration)), Class: string(u.Class), Cause: string(u.Cause)}
}

func round3(v float64) float64 { return math.Round(v*1000) / 1000 }

// JSON returns the report for machines.
func (r *Report) JSON() ReportJSON {
	out := ReportJSON{ToleranceMs: pipeline.Millis(r.Tolerance), Synthesizer: r.Synthesizer, Mode: r.Mode, Agrees: true, Turns: []TurnJSON{}}
	for i, cmp := range r.Comparisons {
		t := TurnJSON{Turn: cmp.Turn, Agrees: cmp.Agrees(), StartDiffMs: round3(pipeline.Millis(cmp.StartDiff)), Pairs: []PairJSON{}, Errors: r.Results[i].Errors}
		out.Agrees = out.Agrees && t.Agrees
		for _, p := range cmp.Pairs {
			pj := PairJSON{Kind: string(p.Kind), Heard: gapJSON(p.Heard), Predicted: gapJSON(p.Predicted)}
			if pj.Kind == "" {
				pj.Kind = "same"
			}
			if p.Heard != nil && p.Predicted != nil {
				ds, dl := round3(pipeline.Millis(p.StartDiff)), round3(pipeline.Millis(p.LengthDiff))
				pj.StartDiffMs, pj.LengthDiffMs = &ds, &dl
			}
			t.Pairs = append(t.Pairs, pj)
		}
		out.Turns = append(out.Turns, t)
	}
	return out
}
