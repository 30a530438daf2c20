package speak

import (
	"fmt"
	"sort"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts/player"
)

// Defaults of Compare.
const (
	// DefaultTolerance is how far a heard gap's start and length may lie
	// from the predicted one's for the two to be the same gap.
	DefaultTolerance = 20 * time.Millisecond
	// DefaultNegligible is the length under which a gap heard or
	// predicted alone is listed as negligible rather than missing or
	// extra: the player counts in whole samples, the model in nanoseconds,
	// so a gap of a fraction of a sample in one can be none in the other.
	DefaultNegligible = time.Millisecond
)

// Measured holds turns' measured speech chunks by turn and bytes: given
// as pipeline.Config.Measured, the engine predicts with them.
type Measured map[string]map[[2]int]pipeline.SynthTiming

var _ pipeline.MeasuredSynth = Measured(nil)

// Add records the measured chunks of a turn.
func (m Measured) Add(turn string, chunks []Timing) {
	byBytes := m[turn]
	if byBytes == nil {
		byBytes = map[[2]int]pipeline.SynthTiming{}
		m[turn] = byBytes
	}
	for _, c := range chunks {
		byBytes[[2]int{c.From, c.To}] = c.SynthTiming()
	}
}

// Measured returns the timing of turn's chunk over bytes [from, to).
func (m Measured) Measured(turn string, from, to int) (pipeline.SynthTiming, bool) {
	t, ok := m[turn][[2]int{from, to}]
	return t, ok
}

// SynthTiming returns the chunk's timing as the engine takes it: without
// audio, it is no speech chunk.
func (t Timing) SynthTiming() pipeline.SynthTiming {
	if !t.HasAudio {
		return pipeline.SynthTiming{Start: t.Sent}
	}
	return pipeline.SynthTiming{Start: t.Sent, Ready: t.Ready, Done: t.Done, Audio: t.Audio, Arrivals: t.Arrivals}
}

// DifferenceKind says how a heard gap and the prediction differ.
type DifferenceKind string

// The kinds of difference.
const (
	// Missing: the model predicted a gap the listener did not hear.
	Missing DifferenceKind = "missing"
	// Extra: the listener heard a gap the model did not predict.
	Extra DifferenceKind = "extra"
	// Moved: the same gap, but its start or length differ by more than
	// the tolerance.
	Moved DifferenceKind = "moved"
	// Negligible: a gap under the negligible length on one side only.
	Negligible DifferenceKind = "negligible"
)

// Pair is a heard gap and the predicted one it matched (Predicted is nil
// for a gap heard only, Heard for one predicted only).
type Pair struct {
	Heard     *pipeline.Underrun `json:"heard,omitempty"`
	Predicted *pipeline.Underrun `json:"predicted,omitempty"`
	// StartDiff and LengthDiff are heard minus predicted, for a match.
	StartDiff  time.Duration `json:"-"`
	LengthDiff time.Duration `json:"-"`
	// Kind is the difference, "" for a match within the tolerance.
	Kind DifferenceKind `json:"kind,omitempty"`
}

// Comparison is one turn as the listener heard it beside what the engine
// predicted for the same token arrivals and measured synthesizer timings.
type Comparison struct {
	Turn string
	// Model is the engine's playout of the turn, given the measured
	// timings, less what the player's fillers played over of its gaps
	// (Heard.Fillers: the model has the LLM's speech alone, the app's
	// filler was measured); Heard is a copy of it whose Underruns are the gaps the
	// player counted, graded with the engine's threshold and explained
	// with the engine's cause where the two match (a heard gap the engine
	// did not predict keeps only the chunk that ended it).
	Model, Heard *pipeline.Playout
	// Pairs are the gaps, heard and predicted, in time order.
	Pairs []Pair
	// StartDiff is the heard start-up delay minus the predicted one.
	StartDiff time.Duration
	// Tolerance and Negligibly are the limits the pairs were judged by.
	Tolerance, Negligibly time.Duration
}

// Differences returns the pairs that differ.
func (c *Comparison) Differences() []Pair {
	var out []Pair
	for _, p := range c.Pairs {
		if p.Kind != "" {
			out = append(out, p)
		}
	}
	return out
}

// Agrees reports whether every gap heard was predicted and every predicted
// one heard, each within the tolerance (negligible ones aside).
func (c *Comparison) Agrees() bool {
	for _, p := range c.Pairs {
		if p.Kind != "" && p.Kind != Negligible {
			return false
		}
	}
	return true
}

// Compare plays r's turn through the engine cfg given r's measured
// synthesizer timings, and sets what the player counted beside it: gaps
// whose starts lie within tol are the same gap (tol 0: DefaultTolerance),
// and one whose length differs by more than tol moved; a gap on one side
// only is missing or extra, or negligible under DefaultNegligible (or,
// through a sound card, one of its pulls).
func Compare(cfg pipeline.Config, r *Result, tol time.Duration) (*Comparison, error) {
	if tol <= 0 {
		tol = DefaultTolerance
	}
	m := Measured{}
	m.Add(r.Record.ID, r.Chunks)
	cfg.Measured = m
	cfg.Durations = nil
	// the engine models the LLM's speech alone: a filler the player
	// played is measured (Heard.Fillers), so is the reply it held back
	cfg.Filler = pipeline.Filler{}
	model, err := pipeline.Play(cfg, r.Record)
	if err != nil {
		return nil, fmt.Errorf("turn %q: the engine: %w", r.Record.ID, err)
	}
	if len(r.Heard.Fillers) > 0 {
		m := *model
		m.Underruns = lessFillers(cfg, model.Underruns, r.Heard.Fillers)
		model = &m
	}
	// a sound card asks for audio in pulls: a gap shorter than one can
	// fall between two asks, and so be heard or not
	c := &Comparison{Turn: r.Record.ID, Model: model, Tolerance: tol, Negligibly: max(DefaultNegligible, r.Heard.Pull)}
	if at, ok := model.Started(); ok && r.Heard.Started {
		c.StartDiff = r.Heard.Start - at
	}
	heard := HeardUnderruns(cfg, r)
	used := make([]bool, len(model.Underruns))
	matched := make([]int, len(heard))
	for i := range heard {
		matched[i] = -1
		h := &heard[i]
		best := -1
		for j := range model.Underruns {
			if used[j] {
				continue
			}
			d := absDur(model.Underruns[j].Start - h.Start)
			if d <= tol && (best < 0 || d < absDur(model.Underruns[best].Start-h.Start)) {
				best = j
			}
		}
		if best >= 0 {
			used[best] = true
			matched[i] = best
			explain(h, &model.Underruns[best])
		}
	}
	for i := range heard {
		p := Pair{Heard: &heard[i]}
		if j := matched[i]; j >= 0 {
			u := model.Underruns[j]
			p.Predicted = &u
			p.StartDiff = heard[i].Start - u.Start
			p.LengthDiff = heard[i].Duration - u.Duration
			if absDur(p.LengthDiff) > tol {
				p.Kind = Moved
			}
		} else {
			p.Kind = Extra
			if heard[i].Duration < c.Negligibly {
				p.Kind = Negligible
			}
		}
		c.Pairs = append(c.Pairs, p)
	}
	for j := range model.Underruns {
		if used[j] {
			continue
		}
		u := model.Underruns[j]
		p := Pair{Predicted: &u, Kind: Missing}
		if u.Duration < c.Negligibly {
			p.Kind = Negligible
		}
		c.Pairs = append(c.Pairs, p)
	}
	sort.SliceStable(c.Pairs, func(a, b int) bool { return pairStart(c.Pairs[a]) < pairStart(c.Pairs[b]) })
	h := *model
	h.Underruns = heard
	c.Heard = &h
	return c, nil
}

func pairStart(p Pair) time.Duration {
	if p.Heard != nil {
		return p.Heard.Start
	}
	return p.Predicted.Start
}

// explain gives heard gap h the engine's account of the predicted gap u.
func explain(h, u *pipeline.Underrun) {
	h.Cause, h.Position, h.Token, h.ITL, h.Chunk = u.Cause, u.Position, u.Token, u.ITL, u.Chunk
	h.Tolerance = 0
	if u.Cause != pipeline.CauseSynthesizer {
		h.Tolerance = max(0, h.ITL-h.Duration)
	}
}

// HeardUnderruns returns the gaps the player counted in r as underruns:
// times at the engine's sample rate, graded by its interruption
// threshold. Their causes are unknown here (Compare gives them the
// engine's); Chunk is the speech chunk whose audio ended the gap.
func HeardUnderruns(cfg pipeline.Config, r *Result) []pipeline.Underrun {
	var out []pipeline.Underrun
	for _, g := range r.Heard.Gaps {
		u := pipeline.Underrun{Turn: r.Record.ID, Chunk: g.Chunk, Position: pipeline.PositionUnknown, Token: -1}
		cfg.Place(&u, g.Start, g.Duration)
		if g.Chunk >= 0 && g.Chunk < len(r.Chunks) {
			c := r.Chunks[g.Chunk]
			if c.Release <= g.Start {
				u.Cause = pipeline.CauseSynthesizer // its text was out before the player ran dry
			}
		}
		out = append(out, u)
	}
	return out
}

// lessFillers returns the gaps us less what fillers, in time order,
// played over: the silence left before and after a filler inside a gap
// is a gap each, of the same cause; a gap a filler covers is gone.
func lessFillers(cfg pipeline.Config, us []pipeline.Underrun, fillers []player.Span) []pipeline.Underrun {
	out := make([]pipeline.Underrun, 0, len(us)+len(fillers))
	for _, u := range us {
		from, end := u.Start, u.Start+u.Duration
		for _, f := range fillers {
			if f.End() <= from || f.Start >= end {
				continue
			}
			if f.Start > from {
				v := u
				cfg.Place(&v, from, f.Start-from)
				out = append(out, v)
			}
			from = f.End()
		}
		if from < end {
			v := u
			cfg.Place(&v, from, end-from)
			out = append(out, v)
		}
	}
	return out
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
