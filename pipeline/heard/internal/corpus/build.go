package corpus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
	"github.com/speech-pipeline/underrun/tts"
)

// Spec says how to make one recording.
type Spec struct {
	// Name names the recording in tables and files.
	Name string
	// Voice speaks Text at Rate (a factor of the engine's own rate),
	// chunk by chunk as Policy (one of Policies) releases it.
	Voice  Voice
	Rate   float64
	Text   string
	Policy string
	// Trim cuts each chunk's leading and trailing quiet (under
	// TrimLevel) as some services do; else the engine's own padding
	// stays.
	Trim bool
	// Stalls is how many stalls of the token stream to make gaps of (0 to
	// 4), each at a place of a different kind where the text has one.
	Stalls int
	// Seed makes the token timing, the synthesizer's latencies and the
	// stalls.
	Seed uint64
}

// Gap is an underrun of a recording: the player had nothing to play from
// Start for Length.
type Gap struct {
	Start, Length time.Duration
	// Place is where in the text it fell: before speech chunk Chunk.
	Place Place
	Chunk int
	// Stall says whether a stall the corpus made caused it (else the
	// stream's own timing did).
	Stall bool
}

// End is where the gap ends.
func (g Gap) End() time.Duration { return g.Start + g.Length }

// Play is one speech chunk as the player played it.
type Play struct {
	// Text is what the chunk said; Ready when its audio was there;
	// Start and End where it plays in the recording, in samples.
	Text       string
	Ready      time.Duration
	Start, End int
}

// Recording is one recording of the corpus with its truth.
type Recording struct {
	Spec
	// Audio is what the player played: mono, at the voice's rate, the
	// turn's request at its first sample.
	Audio tts.Audio
	// Turn is the trace of the token stream, one chunk a token.
	Turn *pipeline.Turn
	// Gaps are every underrun of the player, in order.
	Gaps []Gap
	// Plays are the speech chunks as played.
	Plays []Play
}

// Part returns the part the recording's voice is in.
func (r *Recording) Part() Part { return r.Voice.Part }

// The timing the corpus gives a turn: the LLM's first token and the time
// between tokens (far faster than speech, so only stalls starve the
// player), the synthesizer's first audio of a turn and of each chunk
// after, each drawn uniformly from its range.
var (
	ttftRange         = [2]time.Duration{150 * time.Millisecond, 500 * time.Millisecond}
	itlRange          = [2]time.Duration{10 * time.Millisecond, 50 * time.Millisecond}
	ttfaRange         = [2]time.Duration{100 * time.Millisecond, 300 * time.Millisecond}
	continuationRange = [2]time.Duration{20 * time.Millisecond, 90 * time.Millisecond}
)

// The stalls' lengths: the gap each makes is drawn log-uniformly from
// MinStall to MaxStall.
const (
	MinStall = 40 * time.Millisecond
	MaxStall = 1500 * time.Millisecond
)

// TrimLevel is the level under which a trimmed chunk's leading and
// trailing samples are cut (5 ms of them are kept on each side).
const TrimLevel = -45.0

// Tail is the silence after the last word.
const Tail = 300 * time.Millisecond

// turnStart is the wall-clock start of every recording's turn.
var turnStart = time.Date(2026, 1, 5, 9, 0, 0, 0, time.UTC)

// Options set what Build makes.
type Options struct {
	// Seed makes the specs and everything drawn for each recording.
	Seed uint64
	// PerVoice is how many recordings each voice speaks.
	PerVoice int
	// Voices speak them (nil: Voices).
	Voices []Voice
	// Dir holds the engines' files while they run (empty: a temporary
	// directory, removed after).
	Dir string
}

// Corpus is the recordings Build made, and the voices it could not speak
// with.
type Corpus struct {
	Recordings []*Recording
	Missing    []error
}

// Specs returns the recordings Build makes with opts: voice i's n-th
// recording speaks its part's texts i*3+n and the next (in turn, as one
// answer), at rate (i+n), by
// policy (2i+n), trimmed when i+n is odd, with (3n+i) mod 5 stalls.
func Specs(opts Options) []Spec {
	voices := opts.Voices
	if voices == nil {
		voices = Voices
	}
	var out []Spec
	for i, v := range voices {
		// a voice's place in Voices, not in the selection, sets its specs
		vi := i
		for k, w := range Voices {
			if w == v {
				vi = k
			}
		}
		texts := Texts[v.Part]
		for n := range opts.PerVoice {
			out = append(out, Spec{
				Name:   fmt.Sprintf("%s-%s-%02d", v.Engine, strings.NewReplacer("+", "-", "_", "-").Replace(v.Name), n),
				Voice:  v,
				Rate:   Rates[(vi+n)%len(Rates)],
				Text:   texts[(vi*3+n)%len(texts)] + " " + texts[(vi*3+n+1)%len(texts)],
				Policy: Policies[(2*vi+n)%len(Policies)],
				Trim:   (vi+n)%2 == 1,
				Stalls: (3*n + vi) % 5,
				Seed:   opts.Seed*1_000_003 + uint64(vi)*1009 + uint64(n),
			})
		}
	}
	return out
}

// Build makes the recordings of Specs(opts), skipping the voices that are
// not installed (listed in Missing); every voice missing is an error
// wrapping ErrMissing.
func Build(ctx context.Context, opts Options) (*Corpus, error) {
	dir := opts.Dir
	if dir == "" {
		d, err := os.MkdirTemp("", "corpus")
		if err != nil {
			return nil, err
		}
		defer os.RemoveAll(d)
		dir = d
	}
	c := &Corpus{}
	specs := Specs(opts)
	// the chunks' texts of each voice and rate, spoken in one go
	type key struct {
		v    Voice
		rate float64
	}
	texts := map[key][]string{}
	seen := map[key]map[string]bool{}
	var plans []plan
	missing := map[Voice]bool{}
	for _, s := range specs {
		if missing[s.Voice] {
			continue
		}
		if err := s.Voice.Available(ctx); err != nil {
			missing[s.Voice] = true
			c.Missing = append(c.Missing, err)
			continue
		}
		p, err := newPlan(s)
		if err != nil {
			return nil, err
		}
		plans = append(plans, p)
		k := key{s.Voice, s.Rate}
		if seen[k] == nil {
			seen[k] = map[string]bool{}
		}
		for _, t := range p.texts {
			if !seen[k][t] {
				seen[k][t] = true
				texts[k] = append(texts[k], t)
			}
		}
	}
	if len(plans) == 0 && len(c.Missing) > 0 {
		return c, fmt.Errorf("no voice to speak with: %w", errors.Join(c.Missing...))
	}
	audio := map[key]map[string]tts.Audio{}
	keys := make([]key, 0, len(texts))
	for k := range texts {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool {
		if keys[i].v.Label() != keys[j].v.Label() {
			return keys[i].v.Label() < keys[j].v.Label()
		}
		return keys[i].rate < keys[j].rate
	})
	for _, k := range keys {
		as, err := k.v.Speak(ctx, k.rate, texts[k], dir)
		if err != nil {
			return nil, err
		}
		audio[k] = map[string]tts.Audio{}
		for i, t := range texts[k] {
			audio[k][t] = as[i]
		}
	}
	for _, p := range plans {
		as := make([]tts.Audio, len(p.texts))
		for i, t := range p.texts {
			as[i] = audio[key{p.spec.Voice, p.spec.Rate}][t]
		}
		r, err := p.record(as)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", p.spec.Name, err)
		}
		c.Recordings = append(c.Recordings, r)
	}
	return c, nil
}

// plan is a recording's text, tokens and chunks before it is spoken.
type plan struct {
	spec  Spec
	text  string
	toks  []string
	cs    []chunk
	texts []string // each chunk's text as the synthesizer gets it
}

func newPlan(s Spec) (plan, error) {
	p := plan{spec: s, text: s.Text, toks: tokens.Split(s.Text)}
	var err error
	if p.cs, err = chunks(s.Policy, p.toks); err != nil {
		return plan{}, fmt.Errorf("%s: %w", s.Name, err)
	}
	for _, c := range p.cs {
		p.texts = append(p.texts, strings.TrimSpace(p.text[c.From:c.To]))
	}
	return p, nil
}

// between draws a duration uniformly from r.
func between(rng *rand.Rand, r [2]time.Duration) time.Duration {
	return r[0] + time.Duration(rng.Int64N(int64(r[1]-r[0])+1))
}

// timing is a turn's timing: each token's delay after the one before (the
// first's after the request), the stalls added to them, and the
// synthesizer's latency for each chunk.
type timing struct {
	itl, stall, latency []time.Duration
}

// at returns each token's arrival.
func (tm timing) at() []time.Duration {
	out := make([]time.Duration, len(tm.itl))
	var t time.Duration
	for i := range tm.itl {
		t += tm.itl[i] + tm.stall[i]
		out[i] = t
	}
	return out
}

// schedule plays the chunks (their audio lengths n, in samples at rate)
// with the timing: chunk c is ready when the synthesizer, in order, had
// its text (released by its token) and its latency; the player plays it
// from max(ready, the end of the chunk before).
func (p plan) schedule(tm timing, n []int, rate int) []Play {
	at := tm.at()
	plays := make([]Play, len(p.cs))
	var ready time.Duration
	end := 0
	for c, ch := range p.cs {
		ready = max(ready, at[ch.Release]+tm.latency[c])
		start := int(math.Round(ready.Seconds() * float64(rate)))
		if c > 0 {
			start = max(start, end)
		}
		end = start + n[c]
		plays[c] = Play{Text: p.texts[c], Ready: ready, Start: start, End: end}
	}
	return plays
}

// record makes the recording from each chunk's audio.
func (p plan) record(as []tts.Audio) (*Recording, error) {
	s := p.spec
	rate := as[0].Rate
	for i, a := range as {
		if a.Rate != rate {
			return nil, fmt.Errorf("chunk %d (%q) at %d Hz, the first at %d Hz", i, p.texts[i], a.Rate, rate)
		}
		if s.Trim {
			as[i] = trim(a)
		}
	}
	n := make([]int, len(as))
	for i, a := range as {
		n[i] = len(a.Samples)
	}
	rng := rand.New(rand.NewPCG(s.Seed, 0x636f72707573))
	tm := timing{itl: make([]time.Duration, len(p.toks)), stall: make([]time.Duration, len(p.toks)), latency: make([]time.Duration, len(p.cs))}
	for i := range tm.itl {
		tm.itl[i] = between(rng, itlRange)
	}
	tm.itl[0] = between(rng, ttftRange)
	for c := range tm.latency {
		tm.latency[c] = between(rng, continuationRange)
	}
	tm.latency[0] = between(rng, ttfaRange)
	stalled := map[int]bool{}
	for _, t := range p.targets(rng) {
		// the stall holds back every token from the one after the token
		// that released the chunk before: chunk t.chunk comes late by
		// what it takes to make a gap of the length drawn
		k := p.cs[t.chunk-1].Release + 1
		plays := p.schedule(tm, n, rate)
		at := tm.at()
		want := float64(plays[t.chunk-1].End+t.samples(rate)) / float64(rate)
		d := time.Duration(math.Round(want*1e9)) - at[p.cs[t.chunk].Release] - tm.latency[t.chunk]
		if d <= 0 {
			continue // the stream's own timing left a longer gap there
		}
		tm.stall[k] += d
		stalled[t.chunk] = true
	}
	plays := p.schedule(tm, n, rate)
	samples := make([]float32, plays[len(plays)-1].End+int(Tail.Seconds()*float64(rate)))
	for c, pl := range plays {
		copy(samples[pl.Start:], as[c].Samples)
	}
	at := tm.at()
	turn := &pipeline.Turn{ID: "t1", Start: turnStart, Status: pipeline.StatusOK}
	for i, tok := range p.toks {
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: at[i], Text: tok, Tokens: 1})
	}
	r := &Recording{Spec: s, Audio: tts.Audio{Samples: samples, Rate: rate}, Turn: turn, Plays: plays}
	dur := func(samples int) time.Duration {
		return time.Duration(math.Round(float64(samples) * 1e9 / float64(rate)))
	}
	for c := 1; c < len(plays); c++ {
		if gap := plays[c].Start - plays[c-1].End; gap > 0 {
			r.Gaps = append(r.Gaps, Gap{Start: dur(plays[c-1].End), Length: dur(gap), Place: p.place(c), Chunk: c, Stall: stalled[c]})
		}
	}
	return r, nil
}

// place returns the place of the boundary before chunk c.
func (p plan) place(c int) Place {
	if c == 1 {
		return First
	}
	return placeAt(p.text, p.cs[c].From)
}

// target is a gap to make before chunk chunk.
type target struct {
	chunk  int
	length time.Duration
}

func (t target) samples(rate int) int {
	return int(math.Round(t.length.Seconds() * float64(rate)))
}

// targets draws the recording's stalls: up to Stalls boundaries between
// chunks, each of a different kind of place in turn while there are
// kinds left, in text order, with lengths drawn log-uniformly from
// MinStall to MaxStall. A boundary whose two chunks the same token
// released can take no gap of its own.
func (p plan) targets(rng *rand.Rand) []target {
	byPlace := map[Place][]int{}
	for c := 1; c < len(p.cs); c++ {
		if p.cs[c].Release > p.cs[c-1].Release {
			byPlace[p.place(c)] = append(byPlace[p.place(c)], c)
		}
	}
	var out []target
	order := rng.Perm(len(Places))
	// every recording has a first chunk, and those chunked by sentence
	// have few other kinds of place: the first goes last half the time
	if f := slices.Index(order, slices.Index(Places, First)); f >= 0 && rng.IntN(2) == 0 {
		order = append(slices.Delete(order, f, f+1), slices.Index(Places, First))
	}
	for len(out) < p.spec.Stalls && len(byPlace) > 0 {
		for _, k := range order {
			cs := byPlace[Places[k]]
			if len(cs) == 0 || len(out) == p.spec.Stalls {
				continue
			}
			i := rng.IntN(len(cs))
			l := math.Exp(math.Log(MinStall.Seconds()) + rng.Float64()*math.Log(MaxStall.Seconds()/MinStall.Seconds()))
			out = append(out, target{chunk: cs[i], length: time.Duration(math.Round(l*1000)) * time.Millisecond})
			byPlace[Places[k]] = append(cs[:i], cs[i+1:]...)
			if len(byPlace[Places[k]]) == 0 {
				delete(byPlace, Places[k])
			}
		}
	}
	sort.Slice(out, func(i, j int) bool { return out[i].chunk < out[j].chunk })
	return out
}

// trim cuts a's leading and trailing samples under TrimLevel, keeping 5 ms
// on each side.
func trim(a tts.Audio) tts.Audio {
	limit := float32(math.Pow(10, TrimLevel/20))
	first, last := -1, -1
	for i, v := range a.Samples {
		if v > limit || v < -limit {
			if first < 0 {
				first = i
			}
			last = i
		}
	}
	if first < 0 {
		return tts.Audio{Rate: a.Rate}
	}
	keep := a.Rate / 200
	first, last = max(0, first-keep), min(len(a.Samples), last+1+keep)
	return tts.Audio{Samples: a.Samples[first:last], Rate: a.Rate}
}
