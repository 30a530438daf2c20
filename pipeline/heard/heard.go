package heard

import (
	"context"
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// Kind says what a silence is.
type Kind string

// The kinds of silence.
const (
	// Pause is the voice's own pause (punctuation, a word boundary, a
	// consonant): the listener hears speech, not a gap.
	Pause Kind = "pause"
	// Gap is silence beyond the voice's own: the player had nothing to
	// play, an underrun.
	Gap Kind = "underrun"
)

// The decision's margins. A silence where a speech chunk begins is a gap
// when it is longer than the voice's own pause there (measured where the
// chunk's audio was there well before it played) by bigMargin, or by
// smallMargin when its sound resumed as soon as the chunk's audio can have
// been ready (the engine's timing, set to the recording by the gaps sure
// by length); inside a chunk, where the trace says no gap can be, only by
// hugeMargin.
const (
	smallMargin = 20 * time.Millisecond
	bigMargin   = 90 * time.Millisecond
	hugeMargin  = 250 * time.Millisecond
	// readyTolerance is how near the moment the chunk's audio can have
	// been ready its sound must resume to count as resumed by it.
	readyTolerance = 150 * time.Millisecond
	// safeSlack is how long before it played a chunk's audio must have
	// been ready for the silence before it to be the voice's own pause
	// for sure, against the engine's timing's error.
	safeSlack = 400 * time.Millisecond
	// timingSlack is how far the engine's timing of a chunk's first audio
	// may be off before the alignment is sure the chunk's sound cannot
	// lie there (the synthesizer's latency and padding, and the
	// recording's offset, none known to it).
	timingSlack = 300 * time.Millisecond
)

// Options configure Analyze.
type Options struct {
	// Detector finds the silences.
	Detector Detector
	// Offset is where the first turn's request (its time 0) lies in the
	// recording; with AutoOffset it is found instead: the recording's
	// first sound is the first turn's first audio as the engine plays it.
	Offset     time.Duration
	AutoOffset bool
	// Voice is the voice whose pauses are expected where no trace's text
	// says (no turns) and where the recording has too few of a kind to
	// measure them (zero: the engine configuration's voice).
	Voice tts.Voice
}

// Heard is one silence of the recording as Analyze classified it.
type Heard struct {
	Silence
	// Kind says whether it is the voice's own pause or an underrun;
	// Confidence (0.5 to 1) how sure that is.
	Kind       Kind    `json:"kind"`
	Confidence float64 `json:"confidence"`
	// Turn is the turn whose speech it fell in ("" without a trace).
	Turn string `json:"turn,omitempty"`
	// Place is where in the text it fell; Offset the byte offset of the
	// word after it in the turn's spoken text (-1: unknown), Before and
	// After the words around it. ChunkStart says whether a speech chunk
	// begins there: where the synthesizer's audio of one chunk ends and
	// the next's begins, the only place a trace's stall leaves a gap.
	Place         Place  `json:"place"`
	Offset        int    `json:"offset"`
	Before, After string `json:"-"`
	ChunkStart    bool   `json:"chunk_start"`
	// Expected is the pause the voice makes there on its own; GapLength
	// the silence beyond it (0 for a pause), which begins at GapStart in
	// the recording.
	Expected  time.Duration `json:"-"`
	GapLength time.Duration `json:"-"`
	GapStart  time.Duration `json:"-"`
	// Underrun is the gap as the engine accounts it (class, cause, token,
	// ITL: the same as analyze's), with a trace; nil for a pause.
	Underrun *pipeline.Underrun `json:"-"`

	predicted   time.Duration // the underrun the engine predicts at its place from the trace
	predictedAt time.Duration // where it begins, in the recording
	earliest    time.Duration // the engine's first audio of the chunk after it, in the recording
	chunk       int           // the speech chunk after it (-1: unknown)
}

// Turn is one turn of the trace as heard in the recording.
type Turn struct {
	// Turn is the trace's turn.
	Turn *pipeline.Turn
	// Playout is the engine's playout of the turn with the underruns
	// heard in the recording in place of those it predicts, for a
	// pipeline.Report; Predicted are the ones it predicts.
	Playout   *pipeline.Playout
	Predicted []pipeline.Underrun
	// Base is where the turn's request (its time 0) lies in the
	// recording; SpeechStart and SpeechEnd its first and last sound.
	Base, SpeechStart, SpeechEnd time.Duration
}

// Result is what Analyze found in a recording.
type Result struct {
	// Levels are the detector's measures of the recording, and Envelope
	// its waveform at a coarse step.
	Levels   Levels
	Envelope Envelope
	// Rate is the recording's sample rate.
	Rate int
	// Offset is where the first turn's request lies in the recording.
	Offset time.Duration
	// Pauses are the voice's own pauses by place inside a speech chunk,
	// and ChunkPauses where a chunk begins (its padding with the chunk
	// before's), as measured in the recording where no gap can be (the
	// voice model's where none could be measured); without a trace,
	// Pauses[Unknown] is the pause a gap is measured against.
	Pauses, ChunkPauses map[Place]time.Duration
	// Silences are every silence found, in order.
	Silences []Heard
	// Turns are the trace's turns (none without a trace).
	Turns []Turn

	voice voiceModel
	// places and heard count the places of each kind in the turns' text
	// and those the alignment found a silence at
	places, heard map[Place]int
	// unheard counts the chunk starts with no silence found, by kind
	unheard map[placeKey]int
	// sound and art are the recording's speech (its silences taken out)
	// and the voice model's articulation of the same text, over the
	// turns
	sound, art time.Duration
	// minSilence is the shortest silence the detector reports
	minSilence time.Duration
	// measured says the engine's timing is the synthesizer's as measured
	// (a speak recording): the gaps it predicts are the player's
	measured bool
}

// Gaps returns the silences that are underruns.
func (r *Result) Gaps() []Heard {
	var out []Heard
	for _, h := range r.Silences {
		if h.Kind == Gap {
			out = append(out, h)
		}
	}
	return out
}

// ErrRecording reports a recording that cannot be analyzed.
var ErrRecording = errors.New("invalid recording")

// Analyze finds the silences of the recording a and tells the voice's own
// pauses from underruns, as AnalyzeRecording does for a recording read as
// it is decoded.
func Analyze(a tts.Audio, turns []*pipeline.Turn, cfg pipeline.Config, opts Options) (*Result, error) {
	return AnalyzeRecording(context.Background(), &sliceReader{a.Samples}, a.Rate, turns, cfg, opts)
}

// AnalyzeRecording reads the recording r (rate samples a second) to its
// end, finds its silences and tells the voice's own pauses from
// underruns. Its memory does not grow with the recording's length beyond
// the silences found.
//
// Given the trace's turns (played through the engine cfg: its chunking,
// synthesizer and voice, and cfg.Measured where the synthesizer was
// measured), it aligns each turn's spoken text to the recording's speech,
// learns the voice's own pauses where the trace says no gap can be (inside
// a speech chunk, and where a chunk's audio was there well before it
// played), and judges each silence where a chunk begins by its length
// against those pauses and by whether its sound resumed as soon as the
// chunk's audio can have been ready. Each underrun is accounted as the
// engine does (pipeline.Playout.Explain). Without turns, a silence is an
// underrun when it is far longer than the recording's own pauses (see
// classifyAlone).
func AnalyzeRecording(ctx context.Context, r SampleReader, rate int, turns []*pipeline.Turn, cfg pipeline.Config, opts Options) (*Result, error) {
	if rate <= 0 {
		return nil, fmt.Errorf("%w: sample rate %d", ErrRecording, rate)
	}
	voice := opts.Voice
	if voice.WPM == 0 {
		voice = cfg.Voice
	}
	ps, err := playTurns(turns, cfg)
	if err != nil {
		return nil, err
	}
	scan, err := opts.Detector.Scan(ctx, r, rate)
	if err != nil {
		return nil, err
	}
	res := &Result{Levels: scan.Levels, Envelope: scan.Envelope, Rate: rate, Offset: opts.Offset,
		Pauses: map[Place]time.Duration{}, ChunkPauses: map[Place]time.Duration{}, measured: cfg.Measured != nil, minSilence: opts.Detector.minSilence()}
	if len(ps) == 0 {
		res.classifyAlone(scan.Silences, voice, cfg.Interruption)
		return res, nil
	}
	if opts.AutoOffset {
		at, ok := ps[0].p.Started()
		if !ok {
			return nil, fmt.Errorf("%w: turn %q speaks nothing in the engine: no first audio to align the recording by (give the offset)", ErrRecording, ps[0].t.ID)
		}
		res.Offset = scan.Levels.FirstSound - at - ps[0].base
	}
	// the alignment, then again with the timing set to the recording by
	// the gaps sure by their length
	ao := alignOpts{timed: true, slack: timingSlack, window: timingSlack}
	all := res.alignTurns(scan, ps, voice, ao)
	res.learn(all, voice)
	if res.voice.kN > 0 {
		ao.k, ao.slack, ao.window = res.voice.k, readyTolerance, readyTolerance
	}
	ao.missSentence, ao.missClause = res.heardShare(AtSentence), res.heardShare(AtClause)
	all = res.alignTurns(scan, ps, voice, ao)
	res.learn(all, voice)
	res.Silences = make([]Heard, 0, len(scan.Silences))
	for i, pl := range ps {
		text := pipeline.SpokenText(pl.t)
		var heard []pipeline.Underrun
		for _, h := range all[i] {
			res.classify(h)
			if h.Kind == Gap {
				u := explain(pl.p, text, h, res.Turns[i].Base)
				h.Underrun = &u
				heard = append(heard, u)
			}
			res.Silences = append(res.Silences, *h)
		}
		view := *pl.p
		view.Underruns = heard
		res.Turns[i].Playout = &view
		res.Turns[i].Predicted = pl.p.Underruns
	}
	res.report(voice)
	return res, nil
}

// played is a turn of the trace as the engine plays it, and where its
// request lies after the first turn's.
type played struct {
	t    *pipeline.Turn
	p    *pipeline.Playout
	base time.Duration
}

// playTurns plays each turn through the engine, in the order of their
// requests.
func playTurns(turns []*pipeline.Turn, cfg pipeline.Config) ([]played, error) {
	var first time.Time
	for _, t := range turns {
		if len(turns) > 1 && t.Start.IsZero() {
			return nil, fmt.Errorf("%w: turn %q has no start time: a recording of several turns needs each turn's start to find it", ErrRecording, t.ID)
		}
		if first.IsZero() || t.Start.Before(first) {
			first = t.Start
		}
	}
	var ps []played
	for _, t := range turns {
		if err := t.Validate(); err != nil {
			return nil, err
		}
		p, err := pipeline.Play(cfg, t)
		if err != nil {
			return nil, fmt.Errorf("turn %q: the engine: %w", t.ID, err)
		}
		var base time.Duration
		if !t.Start.IsZero() {
			base = t.Start.Sub(first)
		}
		ps = append(ps, played{t: t, p: p, base: base})
	}
	sort.SliceStable(ps, func(i, j int) bool { return ps[i].base < ps[j].base })
	return ps, nil
}

// alignTurns aligns every turn's text to the recording.
func (res *Result) alignTurns(scan *Scan, ps []played, voice tts.Voice, ao alignOpts) [][]*Heard {
	res.Turns, res.sound, res.art = res.Turns[:0], 0, 0
	res.places, res.heard, res.unheard = map[Place]int{}, map[Place]int{}, map[placeKey]int{}
	var all [][]*Heard
	for i := range ps {
		all = append(all, res.alignTurn(scan, ps, i, voice, ao))
	}
	return all
}

// alignTurn finds turn i's part of the recording (from its request to the
// next's: the silence across a boundary is between turns), aligns its
// spoken text to the sound there, and returns its silences with their
// places.
func (res *Result) alignTurn(scan *Scan, ps []played, i int, voice tts.Voice, ao alignOpts) []*Heard {
	pl := ps[i]
	lv := scan.Levels
	from := res.Offset + pl.base
	to := time.Duration(math.MaxInt64)
	if i+1 < len(ps) {
		to = res.Offset + ps[i+1].base
	}
	start, end := max(from, lv.FirstSound), min(to, lv.LastSound)
	for _, s := range scan.Silences {
		switch {
		case s.Start <= from && s.End > from:
			start = max(start, s.End) // silence before its first sound
		case s.Start < to && s.End >= to:
			end = min(end, s.Start)
		}
	}
	var own []Silence
	for _, s := range scan.Silences {
		if s.Start >= start && s.End <= end {
			own = append(own, s)
		}
	}
	res.Turns = append(res.Turns, Turn{Turn: pl.t, Base: from, SpeechStart: start, SpeechEnd: end})
	text := pipeline.SpokenText(pl.t)
	bs, art := boundaries(text, voice, chunkStarts(pl.p, text)...)
	expectGaps(bs, pl.p, text)
	markChunks(bs, pl.p, text)
	runs := make([]run, len(own))
	var quiet time.Duration
	for k, s := range own {
		runs[k] = run{sound: s.Start - start - quiet, length: s.Length(), end: s.End - from}
		quiet += s.Length()
	}
	sound := max(0, end-start-quiet)
	res.sound += sound
	res.art += art
	// a voice that pads each chunk with silence of its own leaves a
	// silence at nearly every chunk's start: the alignment then expects
	// one there
	place := align(runs, sound, bs, art, ao)
	if !ao.padded && padsChunks(bs, place, runs) {
		ao.missChunk, ao.padded = costMissSentence, true
		place = align(runs, sound, bs, art, ao)
	}
	at := map[int]bool{}
	for k, j := range place {
		if j >= 0 && runs[k].length >= 2*DefaultMinSilence {
			at[j] = true
		}
	}
	for j, b := range bs {
		res.places[b.place]++
		if at[j] {
			res.heard[b.place]++
		}
	}
	// a chunk start with no silence found at all paused for less than
	// the shortest silence the detector reports: no gap of that length
	// can be there, and the voice's pause there is as short
	found := map[int]bool{}
	for _, j := range place {
		found[j] = true
	}
	for j, b := range bs {
		if b.opens && !found[j] {
			res.unheard[placeKey{b.place, true}]++
		}
	}
	var out []*Heard
	for k, s := range own {
		h := &Heard{Silence: s, Turn: pl.t.ID, Place: InWord, Offset: -1, chunk: -1}
		if j := place[k]; j >= 0 {
			b := bs[j]
			h.Place, h.Offset, h.predicted, h.ChunkStart, h.chunk = b.place, b.off, b.gap, b.opens, b.chunk
			h.earliest, h.predictedAt = from+b.earliest, from+b.gapAt
		} else if prev := lastPlaced(place, k); prev >= 0 {
			h.Offset = bs[prev].off // inside a word after it
			h.chunk = bs[prev].chunk
		}
		h.Before, h.After = words(text, h.Offset)
		out = append(out, h)
	}
	return out
}

// heardShare returns the cost of a place of kind p heard with no silence,
// from the share of such places the last alignment found a silence of
// 2·MinSilence or more at (0: too few places to tell).
func (res *Result) heardShare(p Place) float64 {
	if res.places[p] < 3 {
		return 0
	}
	return missCost(float64(res.heard[p]) / float64(res.places[p]))
}

// padsChunks says whether the alignment found a silence of its own at
// most of the turn's chunk starts (more than at its other word
// boundaries): the voice pads each chunk.
func padsChunks(bs []boundary, place []int, runs []run) bool {
	at := map[int]bool{}
	for k, j := range place {
		if j >= 0 && runs[k].length >= 2*DefaultMinSilence {
			at[j] = true
		}
	}
	var opens, heard int
	for j, b := range bs {
		if b.opens {
			opens++
			if at[j] {
				heard++
			}
		}
	}
	return opens >= 2 && float64(heard) >= 0.75*float64(opens)
}

// chunkStarts returns where each speech chunk of p after the first begins
// in text (its first letter or digit).
func chunkStarts(p *pipeline.Playout, text string) []int {
	var out []int
	for _, c := range p.Chunks[min(1, len(p.Chunks)):] {
		from := c.From
		for from < c.To && from < len(text) && !isWordStart(text, from) {
			from++
		}
		if from < c.To && from < len(text) {
			out = append(out, from)
		}
	}
	return out
}

// markChunks marks on bs the speech chunk of p that holds each boundary's
// next word, whether the chunk begins there, and when the engine has its
// first audio ready.
func markChunks(bs []boundary, p *pipeline.Playout, text string) {
	c := 0
	for j := range bs {
		bs[j].chunk = -1
		for c < len(p.Chunks) && p.Chunks[c].To <= bs[j].off {
			c++
		}
		if c >= len(p.Chunks) || bs[j].off < p.Chunks[c].From {
			continue
		}
		ch := p.Chunks[c]
		from := ch.From
		for from < ch.To && from < len(text) && !isWordStart(text, from) {
			from++
		}
		bs[j].chunk, bs[j].opens, bs[j].earliest = c, c > 0 && from == bs[j].off, ch.Ready
	}
}

// isWordStart says whether a word (a letter or digit) begins at byte off
// of text.
func isWordStart(text string, off int) bool {
	r, _ := utf8.DecodeRuneInString(text[off:])
	return unicode.IsLetter(r) || unicode.IsDigit(r)
}

// learn measures the voice's own pauses on the silences of every turn:
// inside speech chunks (where the trace says no gap can be) by place, and
// at chunk starts where the timing says the chunk's audio was there well
// before it played. The timing is first set to the recording by the gaps
// sure by their length alone.
func (res *Result) learn(all [][]*Heard, voice tts.Voice) {
	v := voiceModel{stats: map[placeKey]PauseStats{}, model: voice, rate: 1}
	if res.art > 0 {
		v.rate = float64(res.sound) / float64(res.art)
	}
	by := map[placeKey][]time.Duration{}
	var starts []*Heard
	for _, hs := range all {
		for _, h := range hs {
			if h.ChunkStart {
				starts = append(starts, h)
				continue
			}
			if h.predicted == 0 {
				by[placeKey{h.Place, false}] = append(by[placeKey{h.Place, false}], h.Length())
			}
		}
	}
	for k, ls := range by {
		v.stats[k] = pauseStatsOf(ls)
	}
	// where a chunk's sound begins against the engine's timing when it
	// plays as soon as it is ready: the lowest of the silences at chunk
	// starts (a gap's sound resumes then; any other's later, by the time
	// its audio waited), within the engine's timing's error; or, with
	// none there, the lowest that several share (the engine's timing far
	// off: its chunking not the synthesizer's, its first audio a stall
	// late)
	var near, every []time.Duration
	for _, h := range starts {
		if h.Length() < 2*DefaultMinSilence {
			continue
		}
		y := h.End - h.earliest
		every = append(every, y)
		if y > -safeSlack && y < timingSlack {
			near = append(near, y)
		}
	}
	if low := lowest(near, 1); len(low) > 0 {
		v.k, v.kN = pauseStatsOf(low).Median, len(low)
	} else if low := lowest(every, 3); len(low) > 0 {
		v.k, v.kN = pauseStatsOf(low).Median, len(low)
	}
	// the pauses at chunk starts whose audio was surely there; where too
	// few were, those at every chunk start of the kind but where the
	// timing says a gap is likely (most are pauses; a gap only lengthens
	// one)
	safe := map[placeKey][]time.Duration{}
	some := map[placeKey][]time.Duration{}
	for _, h := range starts {
		k := placeKey{h.Place, true}
		z := h.End - h.earliest - v.k
		switch {
		case res.measured && h.predicted >= smallMargin, !res.measured && z < readyTolerance:
		case z > safeSlack:
			safe[k] = append(safe[k], h.Length())
			fallthrough
		default:
			some[k] = append(some[k], h.Length())
		}
	}
	for k, n := range res.unheard {
		for range n {
			safe[k] = append(safe[k], res.minSilence/2)
		}
		some[k] = append(some[k], safe[k][len(safe[k])-n:]...)
	}
	for k, ls := range some {
		if len(safe[k]) >= 2 {
			ls = safe[k]
		}
		v.stats[k] = pauseStatsOf(ls)
	}
	// the chunk's leading padding, where a silence shows it apart from
	// the floor
	var leads []time.Duration
	for _, h := range starts {
		if padded(h.Silence) {
			leads = append(leads, h.End-h.CoreEnd)
		}
	}
	if len(leads) > 0 {
		v.lead, v.leadN = pauseStatsOf(leads).Median, len(leads)
	}
	res.voice = v
}

// lowest returns the lowest of ys and those within readyTolerance of it,
// if there are at least n of them (ys is sorted in place).
func lowest(ys []time.Duration, n int) []time.Duration {
	slices.Sort(ys)
	for i := range ys {
		var low []time.Duration
		for _, y := range ys[i:] {
			if y-ys[i] <= readyTolerance {
				low = append(low, y)
			}
		}
		if len(low) >= n {
			return low
		}
		if n == 1 {
			break
		}
	}
	return nil
}

// classify sets h's kind, confidence and gap.
func (res *Result) classify(h *Heard) {
	v := &res.voice
	m, known := v.pause(placeKey{h.Place, h.ChunkStart})
	z := h.End - h.earliest - v.k
	// the sound resumed as soon as the chunk's audio can have been ready
	// (not long before: then the timing does not hold there)
	resumed := z < readyTolerance && z > -readyTolerance
	if h.ChunkStart && !known && !res.measured && resumed {
		// the sound resumed as soon as the chunk's audio was ready, at a
		// kind of chunk start never seen without a gap: the least pause
		// the voice makes where chunks begin is all it can be owed
		m = v.least()
	}
	h.Expected = m.Median
	excess := h.Length() - m.Median
	switch {
	case h.ChunkStart && res.measured:
		// the engine plays the synthesizer's measured timing: the gap it
		// predicts is the player's, where the silence holds it; any other
		// must be far longer than the pause to be one
		big := max(hugeMargin, 4*m.Spread+100*time.Millisecond)
		if h.predicted >= smallMargin && h.Length() >= h.predicted/2 {
			h.Kind, h.Confidence = decide(h.Length()-h.predicted/2, 0)
			h.GapLength = min(h.predicted, h.Length())
			h.GapStart = min(max(h.Start, h.predictedAt), h.End-h.GapLength)
			return
		}
		h.Kind, h.Confidence = decide(excess, big)
	case h.ChunkStart:
		big := max(bigMargin, 3*m.Spread)
		small := max(smallMargin, m.Spread)
		switch {
		case z > safeSlack:
			// the chunk's audio was there long before: a pause, however
			// long
			h.Kind, h.Confidence = decide(safeSlack-z, 0)
		case excess > big:
			h.Kind, h.Confidence = decide(excess, big)
		case resumed:
			h.Kind, h.Confidence = decide(excess, small)
		default:
			h.Kind, h.Confidence = decide(excess, big)
		}
	default:
		margin := max(hugeMargin, 4*m.Spread+100*time.Millisecond)
		if h.predicted >= predictedHeard {
			margin = max(smallMargin, m.Spread)
		}
		h.Kind, h.Confidence = decide(excess, margin)
	}
	if h.Kind != Gap {
		return
	}
	h.GapLength = min(h.Length(), max(0, excess))
	// where the silence shows near silence at its edges apart from a
	// core at the floor (the engines' padding is seldom digital silence;
	// a player's underrun is), the core is the gap
	if padded(h.Silence) && h.CoreEnd-h.CoreStart >= smallMargin {
		h.GapStart, h.GapLength = h.CoreStart, h.CoreEnd-h.CoreStart
		return
	}
	// else the gap ends where the next chunk's leading padding begins, as
	// the recording shows it at other gaps; where it shows none (noise
	// hides the padding), the voice's own pause is taken to lie half
	// before the gap and half after
	lead := (h.Length() - h.GapLength) / 2
	if v.leadN > 0 {
		lead = v.lead
	}
	lead = min(lead, h.Length()-h.GapLength)
	h.GapStart = h.End - lead - h.GapLength
}

// padEdge is the least near silence at a silence's edge that shows as
// padding apart from its core.
const padEdge = 15 * time.Millisecond

// padded says whether s shows near silence at its edges apart from a core
// at the floor.
func padded(s Silence) bool {
	return s.CoreEnd > s.CoreStart && (s.CoreStart-s.Start >= padEdge || s.End-s.CoreEnd >= padEdge)
}

// report sets the pauses the Result reports.
func (res *Result) report(voice tts.Voice) {
	model := map[Place]time.Duration{AtWord: 0, AtClause: voice.CommaPause, AtSentence: voice.SentencePause, InWord: 0}
	for p, d := range model {
		res.Pauses[p], res.ChunkPauses[p] = d, d
		if s, ok := res.voice.stats[placeKey{p, false}]; ok {
			res.Pauses[p] = s.Median
		}
		if s, ok := res.voice.stats[placeKey{p, true}]; ok {
			res.ChunkPauses[p] = s.Median
		}
	}
	delete(res.ChunkPauses, InWord)
}

// expectGaps marks on bs the underruns p predicts at the start of a
// speech chunk: the silence before the chunk's first word.
func expectGaps(bs []boundary, p *pipeline.Playout, text string) {
	for _, u := range p.Underruns {
		if u.Chunk < 0 || u.Chunk >= len(p.Chunks) || u.Position == pipeline.MidChunk || u.Position == pipeline.PositionUnknown {
			continue
		}
		c := p.Chunks[u.Chunk]
		from := c.From
		for from < c.To && from < len(text) && !isWordStart(text, from) {
			from++
		}
		j := sort.Search(len(bs), func(j int) bool { return bs[j].off >= from })
		if j < len(bs) && bs[j].off == from && u.Duration > bs[j].gap {
			bs[j].gap, bs[j].gapAt = u.Duration, u.Start
		}
	}
}

// lastPlaced returns the boundary of the last run before k placed at one,
// or -1.
func lastPlaced(place []int, k int) int {
	for i := k - 1; i >= 0; i-- {
		if place[i] >= 0 {
			return place[i]
		}
	}
	return -1
}

// words returns the words before and after byte offset off of text.
func words(text string, off int) (before, after string) {
	if off < 0 || off > len(text) {
		return "", ""
	}
	b := off
	for b > 0 && text[b-1] == ' ' {
		b--
	}
	a := b
	for a > 0 && text[a-1] != ' ' {
		a--
	}
	e := off
	for e < len(text) && text[e] != ' ' {
		e++
	}
	return text[a:b], text[off:e]
}

// decide says whether silence excess beyond the voice's pause, with the
// margin allowed, is a gap, and how sure that is: 0.5 at the margin,
// nearer 1 the further from it.
func decide(excess, margin time.Duration) (Kind, float64) {
	x := float64(excess-margin) / float64(max(margin/2, time.Millisecond))
	p := 1 / (1 + math.Exp(-x))
	if excess > margin {
		return Gap, p
	}
	return Pause, 1 - p
}

// classifyAlone classifies silences with no text to align: the voice's
// own long pauses are the bulk of the recording's silences of
// 2·MinSilence or more; a silence far longer than they (by the spread
// they show, and bigMargin at least) is an underrun. Its gap is measured
// as it lies, not shifted by a pause assumed: the whole silence, or its
// core at the floor where near silence at its edges shows the voice's
// padding apart from it.
func (r *Result) classifyAlone(silences []Silence, v tts.Voice, interruption time.Duration) {
	var ls []time.Duration
	for _, s := range silences {
		if s.Length() >= 2*DefaultMinSilence {
			ls = append(ls, s.Length())
		}
	}
	m := pauseStatsOf(ls)
	if m.N < 3 {
		m = PauseStats{Median: v.SentencePause, Spread: v.SentencePause / 4}
	}
	fence := max(bigMargin, 3*m.Spread)
	r.Pauses[Unknown] = m.Median
	r.Silences = make([]Heard, 0, len(silences))
	for _, s := range silences {
		h := Heard{Silence: s, Place: Unknown, Offset: -1, Expected: m.Median, chunk: -1}
		h.Kind, h.Confidence = decide(s.Length()-m.Median, fence)
		if h.Kind == Gap {
			h.GapStart, h.GapLength = s.Start, s.Length()
			if padded(s) {
				h.GapStart, h.GapLength = s.CoreStart, s.CoreEnd-s.CoreStart
			}
			u := pipeline.Underrun{Start: h.GapStart, Duration: h.GapLength, Class: pipeline.Glitch, Position: pipeline.PositionUnknown, Token: -1, Chunk: -1}
			if h.GapLength >= interruption {
				u.Class = pipeline.Interruption
			}
			h.Underrun = &u
		}
		r.Silences = append(r.Silences, h)
	}
}

// explain accounts gap h of a turn (spoken text text) whose request lies
// at base in the recording as the engine accounts an underrun there.
func explain(p *pipeline.Playout, text string, h *Heard, base time.Duration) pipeline.Underrun {
	at := h.GapStart - base
	chunk, inside := -1, h.Place == InWord
	for i, c := range p.Chunks {
		if h.Offset < c.From {
			// the word's own chunk had no audio of its own (a streaming
			// synthesizer gave it with a later one's): it is heard with
			// this chunk's, from its start
			if h.Offset >= 0 {
				chunk = i
			}
			break
		}
		if h.Offset < c.To {
			chunk = i
			from := c.From
			for from < c.To && from < len(text) && text[from] == ' ' {
				from++
			}
			if from != h.Offset {
				inside = true
			}
			break
		}
	}
	return p.Explain(chunk, at, h.GapLength, inside)
}
