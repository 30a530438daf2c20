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
	// More are the answers of the turns after the first, in a recording
	// of several turns: each turn's request is sent once the turn before
	// has played out (or was cut) and the user has spoken. Each turn has
	// stalls of its own, (Stalls+k) mod 5 in turn k.
	More []string
	// BargeIn is the turn (from 1) that the user cuts short by talking
	// over it: its audio stops inside a chunk, and its trace holds what
	// had streamed by then; 0 for none.
	BargeIn int
	// Part is the part the recording is in: its voice's, or HeldOut for
	// the recordings of Kinds the tuning part does not have.
	Part Part
	// Kind is what sort of recording it is (OneTurn or one of Kinds).
	Kind string
}

// The sorts of recording beyond the voices' own (OneTurn): held out, at
// rates beyond Rates, and of several turns, one cut by a barge-in.
const (
	OneTurn     = "one turn"
	Slow        = "slow, rate 0.6"
	Fast        = "fast, rate 1.6"
	Turns       = "2-4 turns"
	BargeInTurn = "3 turns, one cut by a barge-in"
)

// Kinds are the sorts of the held-out recordings Options.Extra adds, in
// the order voices take them.
var Kinds = []string{Slow, Fast, BargeInTurn, Turns}

// ExtraRates are the speaking rates of Slow and Fast, beyond Rates.
var ExtraRates = map[string]float64{Slow: 0.6, Fast: 1.6}

// Gap is an underrun of a recording: the player had nothing to play from
// Start for Length.
type Gap struct {
	Start, Length time.Duration
	// Place is where in its turn's text it fell: before speech chunk Chunk
	// (of the recording's Plays).
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
	// Text is what the chunk said; Ready when its audio was there (since
	// its turn's request); Start and End where it plays in the recording,
	// in samples (End where a barge-in cut it).
	Text       string
	Ready      time.Duration
	Start, End int
	// Turn is the turn it is of (from 0).
	Turn int
}

// Recording is one recording of the corpus with its truth.
type Recording struct {
	Spec
	// Audio is what the player played: mono, at the voice's rate, the
	// first turn's request at its first sample.
	Audio tts.Audio
	// Turns are the trace of the token streams, one chunk a token, each
	// turn's Start its request's time (the first at turnStart).
	Turns []*pipeline.Turn
	// Gaps are every underrun of the player, in order.
	Gaps []Gap
	// Plays are the speech chunks as played, turn after turn.
	Plays []Play
	// Cut is where a barge-in cut its turn, in samples (0 for none).
	Cut int
}

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
	// Extra is how many held-out recordings of Kinds each voice speaks
	// beyond them.
	Extra int
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
// answer), at rate (i+n), by policy (2i+n), trimmed when i+n is odd, with
// (3n+i) mod 5 stalls. Its m-th extra recording is of kind (i+m) of
// Kinds, speaks held-out texts from i*3+m+1 (one a turn), by policy
// (2i+m+1), trimmed when i+m is even, with (3m+i+1) mod 5 stalls.
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
		name := func(n string) string {
			return fmt.Sprintf("%s-%s-%s", v.Engine, strings.NewReplacer("+", "-", "_", "-").Replace(v.Name), n)
		}
		texts := Texts[v.Part]
		for n := range opts.PerVoice {
			out = append(out, Spec{
				Name:   name(fmt.Sprintf("%02d", n)),
				Voice:  v,
				Rate:   Rates[(vi+n)%len(Rates)],
				Text:   texts[(vi*3+n)%len(texts)] + " " + texts[(vi*3+n+1)%len(texts)],
				Policy: Policies[(2*vi+n)%len(Policies)],
				Trim:   (vi+n)%2 == 1,
				Stalls: (3*n + vi) % 5,
				Seed:   opts.Seed*1_000_003 + uint64(vi)*1009 + uint64(n),
				Part:   v.Part,
				Kind:   OneTurn,
			})
		}
		held := Texts[HeldOut]
		for m := range opts.Extra {
			kind := Kinds[(vi+m)%len(Kinds)]
			text := func(k int) string { return held[(vi*3+m+1+k)%len(held)] }
			s := Spec{
				Name:   name(fmt.Sprintf("x%02d", m)),
				Voice:  v,
				Rate:   Rates[(vi+m)%len(Rates)],
				Text:   text(0) + " " + text(1),
				Policy: Policies[(2*vi+m+1)%len(Policies)],
				Trim:   (vi+m)%2 == 0,
				Stalls: (3*m + vi + 1) % 5,
				Seed:   opts.Seed*1_000_003 + uint64(vi)*1009 + 500 + uint64(m),
				Part:   HeldOut,
				Kind:   kind,
			}
			switch kind {
			case Slow, Fast:
				s.Rate = ExtraRates[kind]
			case Turns, BargeInTurn:
				turns := 3
				if kind == Turns {
					turns = 2 + (vi+m)%3
				}
				s.Text = text(0)
				for k := 1; k < turns; k++ {
					s.More = append(s.More, text(2*k))
				}
				if kind == BargeInTurn {
					s.BargeIn = 1 + (vi+m)%2
				}
			}
			out = append(out, s)
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
	var plans [][]plan // each recording's, a plan a turn
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
		var turns []plan
		for k, text := range append([]string{s.Text}, s.More...) {
			p, err := newPlan(s, k, text)
			if err != nil {
				return nil, err
			}
			turns = append(turns, p)
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
		plans = append(plans, turns)
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
	for _, turns := range plans {
		s := turns[0].spec
		as := make([][]tts.Audio, len(turns))
		for k, p := range turns {
			for _, t := range p.texts {
				as[k] = append(as[k], audio[key{s.Voice, s.Rate}][t])
			}
		}
		r, err := record(turns, as)
		if err != nil {
			return nil, fmt.Errorf("%s: %w", s.Name, err)
		}
		c.Recordings = append(c.Recordings, r)
	}
	return c, nil
}

// plan is a turn's text, tokens and chunks before it is spoken.
type plan struct {
	spec  Spec
	turn  int // from 0
	text  string
	toks  []string
	cs    []chunk
	texts []string // each chunk's text as the synthesizer gets it
	// stalls is how many stalls the turn has
	stalls int
}

func newPlan(s Spec, turn int, text string) (plan, error) {
	p := plan{spec: s, turn: turn, text: text, toks: tokens.Split(text), stalls: (s.Stalls + turn) % 5}
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

// userRange is how long after a turn's last audio (or the barge-in that
// cut it) the next turn's request is sent: the user's own turn and its
// endpointing, in steps of turnStep.
var userRange = [2]time.Duration{1500 * time.Millisecond, 4 * time.Second}

// turnStep is a whole number of samples at every rate the corpus makes
// (8, 16, 22.05, 24, 44.1 and 48 kHz), so that each turn's request falls
// on a sample.
const turnStep = 20 * time.Millisecond

// record makes the recording from each turn's chunks' audio.
func record(turns []plan, as [][]tts.Audio) (*Recording, error) {
	s := turns[0].spec
	rate := as[0][0].Rate
	for k := range as {
		for i, a := range as[k] {
			if a.Rate != rate {
				return nil, fmt.Errorf("turn %d chunk %d (%q) at %d Hz, the first at %d Hz", k+1, i, turns[k].texts[i], a.Rate, rate)
			}
			if s.Trim {
				as[k][i] = trim(a)
			}
		}
	}
	dur := func(samples int) time.Duration {
		return time.Duration(math.Round(float64(samples) * 1e9 / float64(rate)))
	}
	r := &Recording{Spec: s}
	// the users' turns and the barge-in
	rng := rand.New(rand.NewPCG(s.Seed, 0x7475726e73))
	var start time.Duration // the turn's request since the first's
	var chunks [][]float32
	for k, p := range turns {
		plays, turn, stalled := p.play(as[k], rate)
		base := int(math.Round(start.Seconds() * float64(rate)))
		turn.ID, turn.Start = fmt.Sprintf("t%d", k+1), turnStart.Add(start)
		if k == s.BargeIn-1 {
			if cut, ok := bargeIn(rng, plays, rate); ok {
				plays = cutAt(plays, cut)
				turn = cutTrace(turn, dur(cut))
				r.Cut = base + cut
			}
		}
		first := len(r.Plays)
		for c, pl := range plays {
			chunks = append(chunks, as[k][c].Samples[:pl.End-pl.Start])
			pl.Start, pl.End, pl.Turn = pl.Start+base, pl.End+base, k
			r.Plays = append(r.Plays, pl)
		}
		for c := first + 1; c < len(r.Plays); c++ {
			if gap := r.Plays[c].Start - r.Plays[c-1].End; gap > 0 {
				r.Gaps = append(r.Gaps, Gap{Start: dur(r.Plays[c-1].End), Length: dur(gap), Place: p.place(c - first), Chunk: c, Stall: stalled[c-first]})
			}
		}
		r.Turns = append(r.Turns, turn)
		// the next request: after the user has spoken, on a whole step
		user := between(rng, userRange)
		start = (dur(r.Plays[len(r.Plays)-1].End) + user + turnStep - 1).Truncate(turnStep)
	}
	samples := make([]float32, r.Plays[len(r.Plays)-1].End+int(Tail.Seconds()*float64(rate)))
	for c, pl := range r.Plays {
		copy(samples[pl.Start:], chunks[c])
	}
	r.Audio = tts.Audio{Samples: samples, Rate: rate}
	return r, nil
}

// play draws a turn's timing and stalls and plays its chunks (their audio
// as), from its request at sample 0: the chunks as played, the turn's
// trace (no ID or start yet), and the chunks a stall made late.
func (p plan) play(as []tts.Audio, rate int) ([]Play, *pipeline.Turn, map[int]bool) {
	n := make([]int, len(as))
	for i, a := range as {
		n[i] = len(a.Samples)
	}
	rng := rand.New(rand.NewPCG(p.spec.Seed, 0x636f72707573+uint64(p.turn)))
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
	at := tm.at()
	turn := &pipeline.Turn{Status: pipeline.StatusOK}
	for i, tok := range p.toks {
		turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: at[i], Text: tok, Tokens: 1})
	}
	return p.schedule(tm, n, rate), turn, stalled
}

// bargeIn draws where the user cuts a turn short: inside a chunk that
// plays for 250 ms or more, 30-80% of the way through it (in samples from
// the turn's request).
func bargeIn(rng *rand.Rand, plays []Play, rate int) (int, bool) {
	var long []Play
	for _, pl := range plays {
		if pl.End-pl.Start >= rate/4 {
			long = append(long, pl)
		}
	}
	if len(long) == 0 {
		return 0, false
	}
	pl := long[rng.IntN(len(long))]
	return pl.Start + int((0.3+0.5*rng.Float64())*float64(pl.End-pl.Start)), true
}

// cutAt returns the plays a cut at sample cut leaves: those begun before
// it, the last ending there.
func cutAt(plays []Play, cut int) []Play {
	var out []Play
	for _, pl := range plays {
		if pl.Start >= cut {
			break
		}
		pl.End = min(pl.End, cut)
		out = append(out, pl)
	}
	return out
}

// cutTrace returns the trace of a turn cancelled at at (since its
// request): the chunks that had arrived, and cancelled if some had not
// (else the stream had ended before the cut, as it said).
func cutTrace(t *pipeline.Turn, at time.Duration) *pipeline.Turn {
	out := *t
	out.Chunks = nil
	for _, c := range t.Chunks {
		if c.At > at {
			out.Status = pipeline.StatusCancelled
			break
		}
		out.Chunks = append(out.Chunks, c)
	}
	return &out
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

// targets draws the turn's stalls: up to p.stalls boundaries between
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
	for len(out) < p.stalls && len(byPlace) > 0 {
		for _, k := range order {
			cs := byPlace[Places[k]]
			if len(cs) == 0 || len(out) == p.stalls {
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
