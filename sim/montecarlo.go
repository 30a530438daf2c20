package sim

import (
	"context"
	"fmt"
	"math"
	"math/rand/v2"
	"runtime"
	"slices"
	"sync"
	"sync/atomic"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// Options control a Monte Carlo run.
type Options struct {
	// Turns is the number of turns to simulate.
	Turns int
	// Seed makes the run reproducible: turn i is the same turn for the
	// same seed whatever Workers is.
	Seed uint64
	// Workers is the number of goroutines (0: GOMAXPROCS).
	Workers int
}

// MaxRunTurns bounds a Monte Carlo run (it keeps a few numbers per turn).
const MaxRunTurns = 100_000_000

// block is how many consecutive turns a worker takes at a time.
const block = 64

// Quantiles summarize a distribution.
type Quantiles struct {
	Mean float64 `json:"mean"`
	Min  float64 `json:"min"`
	P1   float64 `json:"p1"`
	P10  float64 `json:"p10"`
	P50  float64 `json:"p50"`
	P90  float64 `json:"p90"`
	P99  float64 `json:"p99"`
	P999 float64 `json:"p99.9"`
	Max  float64 `json:"max"`
}

// Exposure sets one ITL quantile against the stall tolerance: a token
// whose latency exceeds the usual (median) one by Excess stalls the
// stream by that much, and is heard as a gap wherever the tolerance is
// smaller. Exposed is the share of positions (tokens after the player
// started) where it would be.
type Exposure struct {
	Quantile string  `json:"quantile"`
	ITLMs    float64 `json:"itl_ms"`
	ExcessMs float64 `json:"excess_ms"`
	Exposed  float64 `json:"exposed"`
}

// Result is the outcome of a Monte Carlo run.
type Result struct {
	// Turns were simulated; Interrupted of them had an interruption.
	Turns       int `json:"turns"`
	Interrupted int `json:"interrupted_turns"`
	// Goodput is the share of turns without interruption, with its 95%
	// Wilson score interval.
	Goodput     float64 `json:"speech_goodput"`
	GoodputLow  float64 `json:"speech_goodput_low"`
	GoodputHigh float64 `json:"speech_goodput_high"`
	// SpeechSeconds is the audio of all turns.
	SpeechSeconds float64 `json:"speech_s"`
	// Interruptions and Glitches count underruns by class.
	Interruptions     int     `json:"interruptions"`
	InterruptionMs    float64 `json:"interruption_ms"`
	Glitches          int     `json:"glitches"`
	InterruptionsRate float64 `json:"interruptions_per_minute"`
	// ToolSilences count the silences while a tool call ran (the setup's
	// tool calls), kept apart from the underruns.
	ToolSilences  int     `json:"tool_silences,omitzero"`
	ToolSilenceMs float64 `json:"tool_silence_ms,omitzero"`
	// PerMinute is the distribution over turns of interruptions per minute
	// of the turn's speech.
	PerMinute Quantiles `json:"interruptions_per_minute_per_turn"`
	// Counts[n] is the number of turns with n interruptions; the last
	// entry counts that many or more.
	Counts []int `json:"interruption_counts"`
	// TPOT is the distribution of per-turn TPOT in milliseconds.
	TPOT Quantiles `json:"tpot_ms"`
	// ITL is the distribution of inter-token latencies in milliseconds,
	// pooled over turns (from a log histogram: 1/16-octave bins, each
	// reported at the mean of its values).
	ITL Quantiles `json:"itl_ms"`
	// Tolerance is the distribution of finite stall tolerances after the
	// player started, in milliseconds; Unbounded counts the positions
	// where any delay is harmless.
	Tolerance Quantiles `json:"tolerance_ms"`
	Positions int       `json:"positions"`
	Unbounded int       `json:"unbounded_positions"`
	// Exposure sets the ITL tail against the tolerance.
	Exposure []Exposure `json:"exposure"`
	// Streams, with a TTS server, is the distribution over turns of the
	// streams the server synthesized at once (the turn's own included);
	// nil without one.
	Streams *Quantiles `json:"tts_streams,omitempty"`
}

// countBuckets is the length of Result.Counts.
const countBuckets = 4

// hist is a log histogram of durations: 16 bins per octave from 1 ns,
// each with its count and the sum of its values (integers, so merging is
// exact in any order).
type hist struct {
	n        [histBins]int64
	sum      [histBins]int64
	count    int64
	min, max time.Duration // exact, when count > 0
}

const (
	histBins = 46 * 16
	oneBits  = 0x3ff0 // float64 bits of 1.0, top 16
)

func histBin(d time.Duration) int {
	if d < 1 {
		return 0
	}
	b := int(math.Float64bits(float64(d))>>48) - oneBits
	return min(b, histBins-1)
}

func (h *hist) add(d time.Duration) {
	if h.count == 0 || d < h.min {
		h.min = d
	}
	h.count++
	h.max = max(h.max, d)
	b := histBin(d)
	h.n[b]++
	h.sum[b] += int64(d)
}

func (h *hist) merge(o *hist) {
	if o.count == 0 {
		return
	}
	if h.count == 0 || o.min < h.min {
		h.min = o.min
	}
	h.max = max(h.max, o.max)
	h.count += o.count
	for i := range h.n {
		h.n[i] += o.n[i]
		h.sum[i] += o.sum[i]
	}
}

func (h *hist) total() int64 { return h.count }

// quantile returns the p-th percentile in milliseconds, as the mean of the
// bin it falls in.
func (h *hist) quantile(p float64) float64 {
	t := h.total()
	if t == 0 {
		return 0
	}
	rank := int64(math.Ceil(p / 100 * float64(t)))
	rank = max(1, min(rank, t))
	var c int64
	for i, n := range h.n {
		c += n
		if c >= rank {
			return float64(h.sum[i]) / float64(n) / 1e6
		}
	}
	return 0
}

// below returns how many values are under d (the bin holding d counts in
// proportion to where d falls in its range).
func (h *hist) below(d time.Duration) float64 {
	b := histBin(d)
	var c float64
	for i := 0; i < b; i++ {
		c += float64(h.n[i])
	}
	if h.n[b] > 0 {
		lo := math.Float64frombits(uint64(b+oneBits) << 48)
		hi := math.Float64frombits(uint64(b+1+oneBits) << 48)
		f := (float64(d) - lo) / (hi - lo)
		c += float64(h.n[b]) * min(1, max(0, f))
	}
	return c
}

func (h *hist) quantiles() Quantiles {
	t := h.total()
	if t == 0 {
		return Quantiles{}
	}
	var sum int64
	for i := range h.n {
		sum += h.sum[i]
	}
	return Quantiles{
		Mean: float64(sum) / float64(t) / 1e6,
		Min:  pipeline.Millis(h.min),
		P1:   h.quantile(1), P10: h.quantile(10), P50: h.quantile(50),
		P90: h.quantile(90), P99: h.quantile(99), P999: h.quantile(99.9),
		Max: pipeline.Millis(h.max),
	}
}

// turnStat is what a Monte Carlo run keeps of each turn.
type turnStat struct {
	speech        float64 // seconds
	tpot          float64 // ms, NaN when undefined
	interruptionS float64
	toolSilenceS  float64
	interruptions int32
	glitches      int32
	toolSilences  int32
}

// worker is one goroutine's state.
type worker struct {
	stream  *Stream
	tools   []ToolCall
	playout *pipeline.Playout
	itl     hist
	tol     hist
	unbound int64
	err     error
	// with a TTS server: the load drawn for each turn, a playout for
	// each stream count met (made when first needed), and how many turns
	// met each count
	load     *load
	playouts []*pipeline.Playout
	streams  []int64
	pcg      *rand.PCG
}

// load draws, for each turn, how many streams a TTS server synthesizes at
// once: the turn's own and each of the other Sessions-1 sessions with
// probability Active, 1 + Binomial(Sessions-1, Active), by inverting the
// cumulative distribution with one uniform draw from an rng seeded by the
// run's seed and the turn alone.
type load struct {
	server *TTSServer
	cfg    pipeline.Config
	seed   uint64
	cdf    []float64 // cdf[k]: P(others <= k)
}

// loadSalt keeps the load's random numbers apart from the turns'.
const loadSalt = 0x7e55e55105ad5a17

func newLoad(srv *TTSServer, cfg pipeline.Config, seed uint64) *load {
	n := srv.Sessions - 1
	l := &load{server: srv, cfg: cfg, seed: splitmix64(seed ^ loadSalt), cdf: make([]float64, n+1)}
	p := srv.Active
	var c float64
	for k := 0; k <= n; k++ {
		switch {
		case p == 1:
			if k == n {
				c = 1
			}
		default:
			lg := lgamma(n+1) - lgamma(k+1) - lgamma(n-k+1)
			c += math.Exp(lg + float64(k)*math.Log(p) + float64(n-k)*math.Log1p(-p))
		}
		l.cdf[k] = c
	}
	l.cdf[n] = 1
	return l
}

func lgamma(n int) float64 {
	v, _ := math.Lgamma(float64(n))
	return v
}

// streams returns the streams of turn i.
func (l *load) streams(pcg *rand.PCG, i int) int {
	pcg.Seed(l.seed, splitmix64(uint64(i)))
	u := float64(pcg.Uint64()>>11) / (1 << 53)
	k, _ := slices.BinarySearch(l.cdf, u)
	return 1 + min(k, len(l.cdf)-1)
}

// Run simulates opts.Turns turns of gen through the speech model cfg on
// opts.Workers goroutines and summarizes them. The result depends only on
// gen, cfg, Turns and Seed.
func Run(ctx context.Context, gen *Generator, cfg pipeline.Config, opts Options) (*Result, error) {
	return run(ctx, &Setup{Gen: *gen, Config: cfg}, opts)
}

// run is Run for setup s: with a TTS server, when s.Server is not nil,
// each turn plays with the time to first audio and RTF of the streams
// drawn for it; with tool calls, each turn pauses for them.
func run(ctx context.Context, s *Setup, opts Options) (*Result, error) {
	gen, cfg, srv := &s.Gen, s.Config, s.Server
	if err := gen.Validate(); err != nil {
		return nil, err
	}
	var ld *load
	if srv != nil {
		if err := srv.Validate(); err != nil {
			return nil, err
		}
	}
	if opts.Turns < 1 || opts.Turns > MaxRunTurns {
		return nil, fmt.Errorf("%w: turns must be in 1..%d, got %d", ErrModel, MaxRunTurns, opts.Turns)
	}
	workers := opts.Workers
	if workers <= 0 {
		workers = runtime.GOMAXPROCS(0)
	}
	workers = min(workers, (opts.Turns+block-1)/block)
	if srv != nil {
		ld = newLoad(srv, cfg, opts.Seed)
	}
	stats := make([]turnStat, opts.Turns)
	ws := make([]*worker, workers)
	for i := range ws {
		p, err := pipeline.NewPlayout(cfg, "")
		if err != nil {
			return nil, err
		}
		ws[i] = &worker{stream: gen.NewStream(opts.Seed), playout: p, tools: s.ToolCalls}
		if ld != nil {
			ws[i].load = ld
			ws[i].playouts = make([]*pipeline.Playout, srv.Sessions+1)
			ws[i].streams = make([]int64, srv.Sessions+1)
			ws[i].pcg = rand.NewPCG(0, 0)
		}
	}
	var next atomic.Int64
	var wg sync.WaitGroup
	for _, w := range ws {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for ctx.Err() == nil {
				from := int(next.Add(1)-1) * block
				if from >= opts.Turns {
					return
				}
				for i := from; i < min(from+block, opts.Turns); i++ {
					if w.err = w.turn(i, &stats[i]); w.err != nil {
						return
					}
				}
			}
		}()
	}
	wg.Wait()
	if err := ctx.Err(); err != nil {
		return nil, err
	}
	for _, w := range ws {
		if w.err != nil {
			return nil, w.err
		}
	}
	r := &Result{Turns: opts.Turns, Counts: make([]int, countBuckets)}
	var itl, tol hist
	var streams []int64
	if ld != nil {
		streams = make([]int64, srv.Sessions+1)
	}
	for _, w := range ws {
		itl.merge(&w.itl)
		tol.merge(&w.tol)
		r.Unbounded += int(w.unbound)
		for k, n := range w.streams {
			streams[k] += n
		}
	}
	if ld != nil {
		q := counted(streams)
		r.Streams = &q
	}
	perMinute := make([]float64, 0, len(stats))
	tpots := make([]float64, 0, len(stats))
	for i := range stats {
		s := &stats[i]
		r.SpeechSeconds += s.speech
		r.Interruptions += int(s.interruptions)
		r.Glitches += int(s.glitches)
		r.InterruptionMs += s.interruptionS * 1000
		r.ToolSilences += int(s.toolSilences)
		r.ToolSilenceMs += s.toolSilenceS * 1000
		if s.interruptions > 0 {
			r.Interrupted++
		}
		r.Counts[min(int(s.interruptions), countBuckets-1)]++
		if s.speech > 0 {
			perMinute = append(perMinute, float64(s.interruptions)/(s.speech/60))
		}
		if !math.IsNaN(s.tpot) {
			tpots = append(tpots, s.tpot)
		}
	}
	good := r.Turns - r.Interrupted
	r.Goodput = float64(good) / float64(r.Turns)
	r.GoodputLow, r.GoodputHigh = Wilson(good, r.Turns, 1.959963984540054)
	if r.SpeechSeconds > 0 {
		r.InterruptionsRate = float64(r.Interruptions) / (r.SpeechSeconds / 60)
	}
	r.PerMinute = exact(perMinute)
	r.TPOT = exact(tpots)
	r.ITL = itl.quantiles()
	r.Tolerance = tol.quantiles()
	r.Positions = int(tol.total()) + r.Unbounded
	if r.Positions > 0 {
		for _, q := range []struct {
			name string
			ms   float64
		}{{"p99", r.ITL.P99}, {"p99.9", r.ITL.P999}, {"max", r.ITL.Max}} {
			excess := max(0, q.ms-r.ITL.P50)
			e := Exposure{Quantile: q.name, ITLMs: q.ms, ExcessMs: excess}
			e.Exposed = tol.below(time.Duration(excess*1e6)) / float64(r.Positions)
			r.Exposure = append(r.Exposure, e)
		}
	}
	return r, nil
}

// turn plays turn i and records it.
func (w *worker) turn(i int, s *turnStat) error {
	t := w.stream.Turn(i)
	InsertToolCalls(t, w.tools)
	p := w.playout
	if w.load != nil {
		n := w.load.streams(w.pcg, i)
		w.streams[n]++
		if p = w.playouts[n]; p == nil {
			cfg := w.load.cfg
			cfg.Synth.TTFA, cfg.Synth.RTF = w.load.server.At(n)
			var err error
			if p, err = pipeline.NewPlayout(cfg, ""); err != nil {
				return fmt.Errorf("tts server at %d streams: %w", n, err)
			}
			w.playouts[n] = p
		}
	}
	if err := p.PlayTurn(t); err != nil {
		return fmt.Errorf("simulated turn %d: %w", i, err)
	}
	s.speech = p.Speech().Seconds()
	for _, u := range p.Underruns {
		if u.Cause == pipeline.CauseTool {
			s.toolSilences++
			s.toolSilenceS += u.Duration.Seconds()
			continue // no underrun: reported apart
		}
		if u.Class == pipeline.Interruption {
			s.interruptions++
			s.interruptionS += u.Duration.Seconds()
		} else {
			s.glitches++
		}
	}
	// one pass over the chunks: ITLs, tolerances after the start, and
	// the token count TPOT divides by
	chunks := t.Chunks
	start, started := p.Started()
	tols := p.Tolerance[:len(chunks)]
	tokens := 0
	tools := t.ToolPauses()
	for k := range chunks {
		c := &chunks[k]
		tokens += c.TokenCount()
		if k > 0 {
			from := chunks[k-1].At
			w.itl.add(c.At - from - tools.Within(from, c.At))
		}
		if !started || c.At < start {
			continue
		}
		if tol := tols[k]; tol == pipeline.Unbounded {
			w.unbound++
		} else {
			w.tol.add(tol)
		}
	}
	s.tpot = math.NaN()
	if t.OutputTokens > 0 {
		tokens = t.OutputTokens // as Turn.Tokens counts
	}
	if v, ok := t.TPOTOver(tokens); ok {
		s.tpot = v * 1000
	}
	return nil
}

// exact summarizes values exactly (numpy-linear percentiles), sorting
// them in place.
func exact(v []float64) Quantiles {
	if len(v) == 0 {
		return Quantiles{}
	}
	slices.Sort(v)
	var sum float64
	for _, x := range v {
		sum += x
	}
	return Quantiles{
		Mean: sum / float64(len(v)), Min: v[0], Max: v[len(v)-1],
		P1: pipeline.Percentile(v, 1), P10: pipeline.Percentile(v, 10), P50: pipeline.Percentile(v, 50),
		P90: pipeline.Percentile(v, 90), P99: pipeline.Percentile(v, 99), P999: pipeline.Percentile(v, 99.9),
	}
}

// counted summarizes integers given as counts (counts[v] values equal
// to v) exactly as exact would summarize the values themselves.
func counted(counts []int64) Quantiles {
	var n, sum int64
	lo, hi := -1, 0
	for v, c := range counts {
		if c == 0 {
			continue
		}
		if lo < 0 {
			lo = v
		}
		hi = v
		n += c
		sum += int64(v) * c
	}
	if n == 0 {
		return Quantiles{}
	}
	// at returns the value of rank r (0-based) in sorted order
	at := func(r int64) float64 {
		for v, c := range counts {
			if r < c {
				return float64(v)
			}
			r -= c
		}
		return float64(hi)
	}
	pct := func(p float64) float64 {
		h := float64(n-1) * p / 100
		f := math.Floor(h)
		x := at(int64(f))
		if f+1 < float64(n) {
			x += (h - f) * (at(int64(f)+1) - x)
		}
		return x
	}
	return Quantiles{
		Mean: float64(sum) / float64(n), Min: float64(lo), Max: float64(hi),
		P1: pct(1), P10: pct(10), P50: pct(50), P90: pct(90), P99: pct(99), P999: pct(99.9),
	}
}

// Wilson returns the Wilson score interval for k successes in n trials at
// the normal quantile z (1.96 for 95%).
func Wilson(k, n int, z float64) (lo, hi float64) {
	if n == 0 {
		return 0, 1
	}
	nf := float64(n)
	p := float64(k) / nf
	z2 := z * z
	den := 1 + z2/nf
	center := (p + z2/(2*nf)) / den
	half := z / den * math.Sqrt(p*(1-p)/nf+z2/(4*nf*nf))
	return max(0, center-half), min(1, center+half)
}
