package sim

import (
	"fmt"
	"math"
	"math/rand/v2"
	"slices"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
)

// Speculative describes speculative decoding: each step drafts Draft
// tokens, the target model accepts each in turn with probability
// Acceptance until the first rejection, and adds one token of its own, so
// a step streams 1 to Draft+1 tokens in one chunk. Drafting makes the step
// longer by Cost x Draft of a plain step.
type Speculative struct {
	Draft      int
	Acceptance float64
	Cost       float64
}

// Enabled reports whether decoding is speculative.
func (s Speculative) Enabled() bool { return s.Draft > 0 }

// Validate reports the first parameter out of range.
func (s Speculative) Validate() error {
	switch {
	case s.Draft < 0 || s.Draft > 64:
		return fmt.Errorf("%w: speculative draft tokens must be in 0..64, got %d", ErrModel, s.Draft)
	case !(s.Acceptance >= 0 && s.Acceptance <= 1):
		return fmt.Errorf("%w: speculative acceptance rate must be in [0, 1], got %v", ErrModel, s.Acceptance)
	case !(s.Cost >= 0 && s.Cost <= 10):
		return fmt.Errorf("%w: speculative draft cost must be in [0, 10], got %v", ErrModel, s.Cost)
	}
	return nil
}

// TokensPerStep returns the expected tokens a step streams:
// (1 - a^(k+1)) / (1 - a).
func (s Speculative) TokensPerStep() float64 {
	if !s.Enabled() {
		return 1
	}
	if s.Acceptance == 1 {
		return float64(s.Draft + 1)
	}
	return (1 - pow(s.Acceptance, s.Draft+1)) / (1 - s.Acceptance)
}

// MaxTurnTokens bounds the tokens of one simulated answer, and the mean of
// its reasoning.
const MaxTurnTokens = 1 << 20

// Generator makes simulated turns: a Timing paces the decode steps, the
// text comes from a corpus (turn i speaks Texts[i mod len]) or, with no
// texts, Tokens text-less tokens per turn; reasoning tokens may come first
// and decoding may be speculative. A Generator is immutable; each
// goroutine makes its own Stream.
type Generator struct {
	// Timing paces the steps.
	Timing Timing
	// Texts is the corpus of answers.
	Texts []string
	// Tokens is the answer length when Texts is empty.
	Tokens int
	// Reasoning is the number of thinking tokens before the answer
	// (Mean 0: none). They stream like any token but are never spoken.
	Reasoning Lengths
	// Speculative, when enabled, streams several tokens per step.
	Speculative Speculative
}

// Validate reports the first problem with the generator.
func (g *Generator) Validate() error {
	if g.Timing == nil {
		return fmt.Errorf("%w: no timing", ErrModel)
	}
	if err := g.Timing.Validate(); err != nil {
		return err
	}
	if len(g.Texts) == 0 && g.Tokens <= 0 {
		return fmt.Errorf("%w: a generator needs texts or a positive token count", ErrModel)
	}
	if g.Tokens > MaxTurnTokens || g.Reasoning.Mean > MaxTurnTokens || g.Reasoning.Min > MaxTurnTokens {
		return fmt.Errorf("%w: a turn of more than %d tokens (answer or reasoning) is not a voice turn", ErrModel, MaxTurnTokens)
	}
	for i, t := range g.Texts {
		if strings.TrimSpace(t) == "" {
			return fmt.Errorf("%w: text %d is empty", ErrModel, i)
		}
	}
	if err := g.Reasoning.Validate(); err != nil {
		return fmt.Errorf("reasoning: %w", err)
	}
	return g.Speculative.Validate()
}

// With returns a copy of the generator with one timing parameter set.
func (g Generator) With(p Param, v float64) (Generator, error) {
	t, err := g.Timing.With(p, v)
	if err != nil {
		return g, err
	}
	g.Timing = t
	return g, nil
}

// String describes the generator in one line.
func (g *Generator) String() string {
	var b strings.Builder
	b.WriteString(g.Timing.String())
	if g.Speculative.Enabled() {
		fmt.Fprintf(&b, "; speculative: %d draft tokens, acceptance %.2f (%.2f tokens per step)",
			g.Speculative.Draft, g.Speculative.Acceptance, g.Speculative.TokensPerStep())
	}
	if g.Reasoning.Mean > 0 {
		fmt.Fprintf(&b, "; reasoning: %s tokens", g.Reasoning.Dist)
	}
	return b.String()
}

// text is one corpus answer, tokenized once.
type text struct {
	s    string
	ends []int // byte offset after each token
}

// Stream makes the turns of one goroutine. Turn i depends only on the
// seed and i, never on which Stream made it or what it made before, so
// turns can be spread over goroutines in any order. A Stream reuses its
// memory: the Turn it returns is valid until the next call.
type Stream struct {
	gen       *Generator
	seed      uint64
	pacer     Pacer
	pcg       *rand.PCG
	rng       *rand.Rand
	texts     []text
	reasoning Lengths
	turn      pipeline.Turn
	stepScale float64
	general   bool // always take Turn's general loop (tests)
}

// NewStream returns a Stream of the generator's turns for seed. The
// generator must be valid.
func (g *Generator) NewStream(seed uint64) *Stream {
	s := &Stream{gen: g, seed: seed, pacer: g.Timing.NewPacer(), reasoning: g.Reasoning}
	s.pcg = rand.NewPCG(seed, 0)
	s.rng = rand.New(s.pcg)
	s.reasoning.prepare()
	for _, t := range g.Texts {
		tx := text{s: t}
		off := 0
		for _, piece := range tokens.Split(t) {
			off += len(piece)
			tx.ends = append(tx.ends, off)
		}
		s.texts = append(s.texts, tx)
	}
	s.stepScale = 1 + g.Speculative.Cost*float64(g.Speculative.Draft)
	s.turn.Status = pipeline.StatusOK
	return s
}

// Turn returns turn i (its ID left empty for the caller to set).
func (s *Stream) Turn(i int) *pipeline.Turn {
	s.pcg.Seed(s.seed, splitmix64(uint64(i)))
	rng := s.rng
	t := &s.turn
	t.ID, t.Chunks, t.Status, t.ToolCalls = "", t.Chunks[:0], pipeline.StatusOK, t.ToolCalls[:0]
	var tx *text
	content := s.gen.Tokens
	if len(s.texts) > 0 {
		tx = &s.texts[i%len(s.texts)]
		content = len(tx.ends)
	}
	thinking := 0
	if s.reasoning.Mean > 0 {
		thinking = min(s.reasoning.Draw(rng), MaxTurnTokens)
	}
	total := thinking + content
	spec := s.gen.Speculative
	at := s.pacer.Begin(rng)
	if thinking == 0 && spec.Draft == 0 && !s.general {
		return s.plainTurn(at, tx, content)
	}
	emitted := 0
	emit := func(n int) {
		// a step's tokens may straddle the end of the thinking
		if emitted < thinking {
			r := min(n, thinking-emitted)
			t.Chunks = append(t.Chunks, pipeline.Chunk{At: at, Tokens: r, Reasoning: true})
			emitted += r
			n -= r
		}
		if n == 0 {
			return
		}
		c := pipeline.Chunk{At: at, Tokens: n}
		k := emitted - thinking
		if tx != nil {
			from := 0
			if k > 0 {
				from = tx.ends[k-1]
			}
			c.Text = tx.s[from:tx.ends[k+n-1]]
		} else {
			c.Textless = true
		}
		t.Chunks = append(t.Chunks, c)
		emitted += n
	}
	emit(1)
	for step := 1; emitted < total; step++ {
		n := 1
		if spec.Draft > 0 {
			for n <= spec.Draft && rng.Float64() < spec.Acceptance {
				n++
			}
		}
		d := s.pacer.Step(rng, step, emitted)
		if s.stepScale != 1 {
			d = time.Duration(float64(d) * s.stepScale)
		}
		at += d
		emit(min(n, total-emitted))
	}
	return t
}

// plainTurn finishes a turn of content tokens without reasoning, one token
// a step, the first at at: Turn's loop without the cases it does not
// need, drawing the same numbers.
func (s *Stream) plainTurn(at time.Duration, tx *text, content int) *pipeline.Turn {
	t := &s.turn
	chunks := slices.Grow(t.Chunks[:0], content)[:content]
	rng, pacer, scale := s.rng, s.pacer, s.stepScale
	// a lognormal ITL is drawn here as Dist.Draw and drawDuration draw it
	var mu, sigma float64
	lognormal := false
	if sp, ok := pacer.(*sampledPacer); ok {
		d := &sp.s.ITL
		lognormal = d.prepared && d.CV != 0 && d.Shape != ShapeConstant && d.Mean != 0 && d.Shape != ShapeGamma
		mu, sigma = d.mu, d.sigma
	}
	for k := range chunks {
		if k > 0 {
			var d time.Duration
			if lognormal {
				d = time.Duration(min(math.Exp(mu+sigma*rng.NormFloat64()), maxDelaySeconds) * float64(time.Second))
			} else {
				d = pacer.Step(rng, k, k)
			}
			if scale != 1 {
				d = time.Duration(float64(d) * scale)
			}
			at += d
		}
		// field by field: a Chunk literal is built on the stack and
		// copied, which costs as much as drawing the step
		c := &chunks[k]
		c.At, c.Tokens, c.Reasoning = at, 1, false
		if tx != nil {
			from := 0
			if k > 0 {
				from = tx.ends[k-1]
			}
			c.Text, c.Textless = tx.s[from:tx.ends[k]], false
		} else {
			c.Text, c.Textless = "", true
		}
	}
	t.Chunks = chunks
	return t
}
