package sim

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"time"
)

// Timing describes how a deployment paces one turn's tokens. It is an
// immutable value: NewPacer returns the per-turn state that runs it, one
// per goroutine.
type Timing interface {
	// NewPacer returns a Pacer for this timing.
	NewPacer() Pacer
	// Validate reports the first parameter out of range.
	Validate() error
	// With returns a copy with one parameter set, for sweeps and
	// inversions; ErrParam when the timing has no such parameter.
	With(p Param, v float64) (Timing, error)
	// String describes the timing in one line.
	String() string
}

// Pacer times the decode steps of one turn at a time. Begin starts a turn
// and returns its time to first token (the first token arrives then);
// each Step returns how long the next decode step takes. step counts the
// steps from 1; generated is the number of tokens the turn has so far.
// A Pacer draws randomness only from rng, so a seeded rng gives the same
// turn every time. A Pacer is not safe for concurrent use.
type Pacer interface {
	Begin(rng *rand.Rand) time.Duration
	Step(rng *rand.Rand, step, generated int) time.Duration
}

// MaxDelay bounds every step a timing takes: a TTFT, a TPOT, a stall, one
// drawn inter-token latency. Nothing a voice turn waits for takes an hour,
// and a turn of MaxTurnTokens such steps still counts its time in an
// int64 of nanoseconds; a value past it is a typo, refused by Validate
// (a draw from a long-tailed distribution is cut at it).
const MaxDelay = time.Hour

// maxDelaySeconds is MaxDelay in seconds, where draws are cut.
const maxDelaySeconds = float64(MaxDelay / time.Second)

// checkDelay reports a step that is negative or longer than MaxDelay.
func checkDelay(name string, d time.Duration) error {
	if d < 0 || d > MaxDelay {
		return fmt.Errorf("%w: %s must be from 0 to %v, got %v", ErrModel, name, MaxDelay, d)
	}
	return nil
}

// Constant paces tokens evenly: the first at TTFT, every next one TPOT
// later, plus the Stalls.
type Constant struct {
	TTFT, TPOT time.Duration
	// Stalls add delay before given tokens; Stall.Token counts decode
	// steps, which are tokens unless decoding is speculative (token 0 is
	// the first token, delayed after TTFT).
	Stalls []Stall
}

var _ Timing = Constant{}

// Validate reports the first parameter out of range.
func (c Constant) Validate() error {
	if err := checkDelay("ttft", c.TTFT); err != nil {
		return err
	}
	if err := checkDelay("tpot", c.TPOT); err != nil {
		return err
	}
	for i, s := range c.Stalls {
		if s.Token < 0 || s.Token > MaxTurnTokens || s.Delay < 0 || s.Delay > MaxDelay {
			return fmt.Errorf("%w: stall %d: want token in 0..%d and delay from 0 to %v, got token %d delay %v", ErrModel, i, MaxTurnTokens, MaxDelay, s.Token, s.Delay)
		}
	}
	return nil
}

// With sets ParamTPOT.
func (c Constant) With(p Param, v float64) (Timing, error) {
	if p != ParamTPOT {
		return nil, paramError(p, "constant")
	}
	c.TPOT = time.Duration(v)
	return c, nil
}

// String describes the timing.
func (c Constant) String() string {
	s := fmt.Sprintf("constant: TTFT %v, TPOT %v", c.TTFT, c.TPOT)
	if len(c.Stalls) > 0 {
		s += fmt.Sprintf(", %d stalls", len(c.Stalls))
	}
	return s
}

// NewPacer returns the pacer.
func (c Constant) NewPacer() Pacer {
	p := &constantPacer{c: c}
	for _, s := range c.Stalls {
		for len(p.extra) <= s.Token {
			p.extra = append(p.extra, 0)
		}
		p.extra[s.Token] += s.Delay
	}
	return p
}

type constantPacer struct {
	c     Constant
	extra []time.Duration
}

func (p *constantPacer) Begin(*rand.Rand) time.Duration { return p.c.TTFT + p.stall(0) }
func (p *constantPacer) Step(_ *rand.Rand, step, _ int) time.Duration {
	return p.c.TPOT + p.stall(step)
}
func (p *constantPacer) stall(k int) time.Duration {
	if k < len(p.extra) {
		return p.extra[k]
	}
	return 0
}

// Sampled draws every inter-token latency independently from a
// distribution (lognormal or gamma, by mean and coefficient of variation,
// in seconds); the first token arrives at TTFT.
type Sampled struct {
	TTFT time.Duration
	ITL  Dist
}

var _ Timing = Sampled{}

// Validate reports the first parameter out of range.
func (s Sampled) Validate() error {
	if err := checkDelay("ttft", s.TTFT); err != nil {
		return err
	}
	if s.ITL.Mean > MaxDelay.Seconds() {
		return fmt.Errorf("%w: the mean inter-token latency must be at most %v, got %v s", ErrModel, MaxDelay, s.ITL.Mean)
	}
	return s.ITL.Validate()
}

// With sets ParamTPOT: the mean ITL, keeping the coefficient of variation.
func (s Sampled) With(p Param, v float64) (Timing, error) {
	if p != ParamTPOT {
		return nil, paramError(p, "sampled ITL")
	}
	s.ITL.Mean, s.ITL.prepared = v/float64(time.Second), false
	return s, nil
}

// String describes the timing.
func (s Sampled) String() string {
	return fmt.Sprintf("sampled ITL: TTFT %v, ITL %s s", s.TTFT, s.ITL)
}

// NewPacer returns the pacer.
func (s Sampled) NewPacer() Pacer {
	p := &sampledPacer{s: s}
	p.s.ITL.prepare()
	return p
}

type sampledPacer struct{ s Sampled }

func (p *sampledPacer) Begin(*rand.Rand) time.Duration { return p.s.TTFT }
func (p *sampledPacer) Step(rng *rand.Rand, _, _ int) time.Duration {
	return drawDuration(&p.s.ITL, rng)
}

// Empirical resamples recorded timings: each turn's TTFT is drawn from
// TTFTs and each inter-token latency from ITLs, uniformly and
// independently (a bootstrap of a measured trace). Scale multiplies the
// ITLs (0 means 1).
type Empirical struct {
	TTFTs, ITLs []time.Duration
	Scale       float64
}

var _ Timing = Empirical{}

// Validate reports the first parameter out of range.
func (e Empirical) Validate() error {
	switch {
	case len(e.ITLs) == 0:
		return fmt.Errorf("%w: an empirical timing needs at least one inter-token latency", ErrModel)
	case e.Scale < 0:
		return fmt.Errorf("%w: scale must not be negative, got %v", ErrModel, e.Scale)
	}
	for i, d := range e.ITLs {
		if d < 0 {
			return fmt.Errorf("%w: inter-token latency %d is negative (%v)", ErrModel, i, d)
		}
	}
	for i, d := range e.TTFTs {
		if d < 0 {
			return fmt.Errorf("%w: TTFT %d is negative (%v)", ErrModel, i, d)
		}
	}
	return nil
}

// MeanITL returns the mean recorded inter-token latency, scaled.
func (e Empirical) MeanITL() time.Duration {
	var sum float64
	for _, d := range e.ITLs {
		sum += float64(d)
	}
	return time.Duration(sum / float64(max(1, len(e.ITLs))) * e.scale())
}

func (e Empirical) scale() float64 {
	if e.Scale == 0 {
		return 1
	}
	return e.Scale
}

// With sets ParamTPOT: the scale that makes the mean ITL v.
func (e Empirical) With(p Param, v float64) (Timing, error) {
	if p != ParamTPOT {
		return nil, paramError(p, "empirical")
	}
	e.Scale = 1
	if m := e.MeanITL(); m > 0 {
		e.Scale = v / float64(m)
	}
	return e, nil
}

// String describes the timing.
func (e Empirical) String() string {
	return fmt.Sprintf("empirical: %d TTFTs, %d ITLs (mean %v)", len(e.TTFTs), len(e.ITLs), e.MeanITL())
}

// NewPacer returns the pacer.
func (e Empirical) NewPacer() Pacer {
	p := &empiricalPacer{ttfts: slices.Clone(e.TTFTs), itls: slices.Clone(e.ITLs)}
	if s := e.scale(); s != 1 {
		for i := range p.itls {
			p.itls[i] = time.Duration(float64(p.itls[i]) * s)
		}
	}
	return p
}

type empiricalPacer struct{ ttfts, itls []time.Duration }

func (p *empiricalPacer) Begin(rng *rand.Rand) time.Duration {
	if len(p.ttfts) == 0 {
		return 0
	}
	return p.ttfts[rng.IntN(len(p.ttfts))]
}

func (p *empiricalPacer) Step(rng *rand.Rand, _, _ int) time.Duration {
	return p.itls[rng.IntN(len(p.itls))]
}
