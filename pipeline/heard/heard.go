package heard

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"sort"
	"strings"
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

// Silence margins: a silence is a gap when it is longer than the pause the
// voice makes at its place by more than DefaultMargin plus MarginShare of
// that pause.
const (
	DefaultMargin = 25 * time.Millisecond
	MarginShare   = 0.3
	// maxWordPause caps the pause a voice is taken to make between words.
	maxWordPause = 60 * time.Millisecond
	// inWordMargin is how much longer than the word pause a silence inside a
	// word must be to be a gap (a stop consonant's closure is silence).
	inWordMargin = 60 * time.Millisecond
	// WordMargin is the margin between words: a streaming synthesizer
	// that waited for the next word leaves a longer pause of its own
	// there (espeak-ng: up to 50 ms more than its usual).
	WordMargin = 60 * time.Millisecond
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
	// After the words around it.
	Place         Place  `json:"place"`
	Offset        int    `json:"offset"`
	Before, After string `json:"-"`
	// Expected is the pause the voice makes there on its own; GapLength
	// the silence beyond it (0 for a pause), which begins at GapStart in
	// the recording.
	Expected  time.Duration `json:"-"`
	GapLength time.Duration `json:"-"`
	GapStart  time.Duration `json:"-"`
	// Underrun is the gap as the engine accounts it (class, cause, token,
	// ITL: the same as analyze's), with a trace; nil for a pause.
	Underrun *pipeline.Underrun `json:"-"`

	predicted time.Duration // the underrun the engine predicts at its place from the trace
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
	// letter is the turn's sound time per letter of its spoken text: the
	// recording's rate of speech
	letter time.Duration
}

// Result is what Analyze found in a recording.
type Result struct {
	// Levels are the detector's measures of the recording.
	Levels Levels
	// Offset is where the first turn's request lies in the recording.
	Offset time.Duration
	// Pauses are the voice's own pauses by place, as measured in the
	// recording where it has enough of them, else the voice model's.
	Pauses map[Place]time.Duration
	// Silences are every silence found, in order.
	Silences []Heard
	// Turns are the trace's turns (none without a trace).
	Turns []Turn
	// wordEnd is the quiet end of a word a gap between words is taken to
	// begin after.
	wordEnd time.Duration
	// measured says which places' pauses were measured on the recording
	// (the others come from the voice model or the other place's).
	measured map[Place]bool
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
// pauses from underruns. Given the trace's turns (played through the
// engine cfg: its chunking, synthesizer and voice, and cfg.Measured where
// the synthesizer was measured), it aligns each turn's spoken text to the
// recording's speech, expects the voice's pauses at punctuation, and
// accounts each underrun as the engine does (pipeline.Playout.Explain).
// Without turns, a silence is an underrun when it is longer than the
// voice's sentence pause.
func Analyze(a tts.Audio, turns []*pipeline.Turn, cfg pipeline.Config, opts Options) (*Result, error) {
	if a.Rate <= 0 {
		return nil, fmt.Errorf("%w: sample rate %d", ErrRecording, a.Rate)
	}
	silences, lv := opts.Detector.Detect(a)
	res := &Result{Levels: lv, Offset: opts.Offset, Pauses: map[Place]time.Duration{}, wordEnd: opts.Detector.minSilence() / 2}
	voice := opts.Voice
	if voice.WPM == 0 {
		voice = cfg.Voice
	}
	if len(turns) == 0 {
		res.classifyAlone(silences, voice, cfg.Interruption)
		return res, nil
	}
	var first time.Time
	for _, t := range turns {
		if len(turns) > 1 && t.Start.IsZero() {
			return nil, fmt.Errorf("%w: turn %q has no start time: a recording of several turns needs each turn's start to find it", ErrRecording, t.ID)
		}
		if first.IsZero() || t.Start.Before(first) {
			first = t.Start
		}
	}
	type played struct {
		t    *pipeline.Turn
		p    *pipeline.Playout
		base time.Duration
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
	if opts.AutoOffset {
		at, ok := ps[0].p.Started()
		if !ok {
			return nil, fmt.Errorf("%w: turn %q speaks nothing in the engine: no first audio to align the recording by (give the offset)", ErrRecording, ps[0].t.ID)
		}
		res.Offset = lv.FirstSound - at - ps[0].base
	}
	// each turn's part of the recording: from its request to the next's;
	// the silence across a boundary is between turns
	var all [][]Silence
	var measured []*Heard
	for i, pl := range ps {
		from := res.Offset + pl.base
		to := time.Duration(math.MaxInt64)
		if i+1 < len(ps) {
			to = res.Offset + ps[i+1].base
		}
		start, end := max(from, lv.FirstSound), min(to, lv.LastSound)
		var own []Silence
		for _, s := range silences {
			switch {
			case s.Start <= from && s.End > from:
				start = max(start, s.End) // silence before its first sound
			case s.Start < to && s.End >= to:
				end = min(end, s.Start)
			}
		}
		for _, s := range silences {
			if s.Start >= start && s.End <= end {
				own = append(own, s)
			}
		}
		all = append(all, own)
		res.Turns = append(res.Turns, Turn{Turn: pl.t, Base: from, SpeechStart: start, SpeechEnd: end})
		text := pipeline.SpokenText(pl.t)
		bs, art := boundaries(text, voice)
		expectGaps(bs, pl.p, text)
		runs := make([]run, len(own))
		var quiet time.Duration
		for k, s := range own {
			runs[k] = run{sound: s.Start - start - quiet, length: s.Length()}
			quiet += s.Length()
		}
		sound := max(0, end-start-quiet)
		if n := letters(text); n > 0 {
			res.Turns[len(res.Turns)-1].letter = sound / time.Duration(n)
		}
		place := align(runs, sound, bs, art)
		for k, s := range own {
			h := &Heard{Silence: s, Turn: pl.t.ID, Place: InWord, Offset: -1}
			if j := place[k]; j >= 0 {
				h.Place, h.Offset, h.predicted = bs[j].place, bs[j].off, bs[j].gap
			} else if prev := lastPlaced(place, k); prev >= 0 {
				h.Offset = bs[prev].off // inside a word after it
			}
			h.Before, h.After = words(text, h.Offset)
			measured = append(measured, h)
		}
	}
	res.measurePauses(measured, voice, false)
	for _, h := range measured {
		res.classify(h)
	}
	// the pause between words measured again on the silences between
	// words that are not gaps: gaps among them (most gaps of word
	// chunking are) lengthen the lower quartile
	for range 3 {
		word := res.Pauses[AtWord]
		res.measurePauses(measured, voice, true)
		if res.Pauses[AtWord] == word {
			break
		}
		for _, h := range measured {
			res.classify(h)
		}
	}
	idx := 0
	for i, pl := range ps {
		var heard []pipeline.Underrun
		for range all[i] {
			h := measured[idx]
			idx++
			res.setGap(h, pl.p, pipeline.SpokenText(pl.t), res.Turns[i].Base, stopOnset(h.After, res.Turns[i].letter))
			if h.Kind == Gap {
				u := explain(pl.p, pipeline.SpokenText(pl.t), h, res.Turns[i].Base)
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
	return res, nil
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
		for from < c.To && from < len(text) && text[from] == ' ' {
			from++
		}
		j := sort.Search(len(bs), func(j int) bool { return bs[j].off >= from })
		if j < len(bs) && bs[j].off == from {
			bs[j].gap = max(bs[j].gap, u.Duration)
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

// measurePauses sets the voice's pause at each place: the median of the
// silences found at punctuation (the lower quartile between words), where there are at least two (most of a
// voice's pauses are its own, and an underrun only lengthens one) or one
// no longer than the model's, capped
// at twice the voice model's; else the sentence pause from the clause
// pause in the model's ratio, the clause pause as long as the sentence
// pause, or the voice model's.
//
// With pausesOnly, the silences between words already classified as gaps
// are left out of the pause between words.
func (r *Result) measurePauses(hs []*Heard, v tts.Voice, pausesOnly bool) {
	model := map[Place]time.Duration{AtWord: 0, AtClause: v.CommaPause, AtSentence: v.SentencePause}
	limit := map[Place]time.Duration{AtWord: maxWordPause, AtClause: 2 * v.CommaPause, AtSentence: 2 * v.SentencePause}
	measured := map[Place]bool{}
	defer func() { r.measured = measured }()
	for place, m := range model {
		var ls []time.Duration
		for _, h := range hs {
			if pausesOnly && place == AtWord && h.Kind == Gap {
				continue
			}
			if h.Place == place || place == AtWord && h.Place == InWord {
				ls = append(ls, h.Length())
			}
		}
		r.Pauses[place] = m
		// one silence at a kind of punctuation is the voice's own pause
		// when it is no longer than the model's (an underrun only
		// lengthens a pause)
		if len(ls) >= 2 || len(ls) == 1 && (place == AtWord || ls[0] <= m) {
			slices.Sort(ls)
			q := (len(ls) - 1) / 2 // the median at punctuation, whose pauses vary
			if place == AtWord {
				q = (len(ls) - 1) / 4
			}
			r.Pauses[place] = min(ls[q], limit[place])
			measured[place] = true
		}
	}
	// a voice's clause and sentence pauses keep the model's ratio: one
	// measured gives the other
	switch {
	case measured[AtClause] && !measured[AtSentence] && v.CommaPause > 0:
		r.Pauses[AtSentence] = time.Duration(float64(r.Pauses[AtClause]) * float64(v.SentencePause) / float64(v.CommaPause))
	case measured[AtSentence] && !measured[AtClause] && v.SentencePause > 0:
		r.Pauses[AtClause] = time.Duration(float64(r.Pauses[AtSentence]) * float64(v.CommaPause) / float64(v.SentencePause))
	}
	r.Pauses[InWord] = r.Pauses[AtWord]
}

// classify sets h's kind, confidence and gap from the pause expected at
// its place.
func (r *Result) classify(h *Heard) {
	h.Expected = r.Pauses[h.Place]
	margin := DefaultMargin + time.Duration(MarginShare*float64(h.Expected))
	switch h.Place {
	case InWord:
		margin = inWordMargin
	case AtWord:
		margin = WordMargin
	}
	// where the trace says the player ran dry for at least the margin, the
	// silence is nearer a gap than the pause from half of that on
	if h.predicted >= margin {
		margin = min(margin, h.predicted/2)
	}
	h.Kind, h.Confidence = decide(h.Length()-h.Expected, margin)
}

// setGap sets the gap of h, an underrun, in the playout p of the turn
// (spoken text text, its request at base in the recording): the silence
// beyond the pause the voice makes at its place. Between words that is
// the quiet end of the word before, shorter than the shortest silence the
// detector reports (or the voice's quiet between words would be found as
// silences): half of that, so that the gap's start is at most half of it
// off. At punctuation the pause is part of the audio of the
// speech chunk that holds the punctuation: when that chunk was ready
// before the silence (its text came in time), the voice paused first and
// the gap follows, ending where the silence ends; when it came late (the
// punctuation was the text the synthesizer waited for, or was held with
// it), the gap comes first and the pause after it. A gap after the pause
// ends onset before the silence does: the quiet start of the word after
// it (a voiceless stop's closure).
func (r *Result) setGap(h *Heard, p *pipeline.Playout, text string, base, onset time.Duration) {
	if h.Kind != Gap {
		return
	}
	natural := h.Expected
	if h.Place == AtWord || h.Place == InWord {
		natural = r.wordEnd
	}
	h.GapLength = max(0, h.Length()-natural)
	h.GapStart = h.End - h.GapLength
	if h.Place != AtClause && h.Place != AtSentence {
		return
	}
	// a voice's pauses of one kind vary (the word before ends more or less
	// quietly): the gap the engine predicts here from the trace's timing
	// splits the silence, the pause from half to all of the one expected
	// (all of it where no pause of the kind was measured on the recording:
	// the expected one is then the model's estimate)
	if u, ok := predictedIn(p, h.Start-base, h.End-base); ok {
		lo := h.Expected / 2
		if !r.measured[h.Place] {
			lo = 0
		}
		h.GapLength = h.Length() - min(h.Expected, max(lo, h.Length()-u.Duration))
		h.GapStart = h.End - h.GapLength
	}
	if c := punctuationChunk(p, text, h.Offset); c >= 0 && base+p.Chunks[c].Ready > h.Start+h.Length()/2 {
		h.GapStart = h.Start
		return
	}
	h.GapStart = max(h.Start, h.GapStart-onset)
}

// stopShare is how long a voiceless stop's closure at a word's start
// lasts, in the time the voice takes per letter: espeak-ng's "p", "t",
// "ch" after a pause are 21-30 ms of silence at 44 ms a letter; a voice's
// closures lengthen as it speaks slower.
const stopShare = 0.6

// stopOnset returns the quiet at the start of word: a voiceless stop's
// closure (p, t but not th, k, q, c before a hard vowel or consonant, ch)
// at letter time a letter, else none.
func stopOnset(word string, letter time.Duration) time.Duration {
	w := strings.ToLower(word)
	if w == "" {
		return 0
	}
	stop := false
	switch w[0] {
	case 'p', 'k', 'q':
		stop = true
	case 't':
		stop = !strings.HasPrefix(w, "th")
	case 'c':
		stop = len(w) > 1 && !strings.ContainsRune("eiy", rune(w[1]))
	}
	if !stop {
		return 0
	}
	return time.Duration(stopShare * float64(letter))
}

// letters counts the letters and digits of text.
func letters(text string) int {
	n := 0
	for _, r := range text {
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			n++
		}
	}
	return n
}

// predictedIn returns the longest underrun of p that overlaps the
// interval [from, to) of turn time.
func predictedIn(p *pipeline.Playout, from, to time.Duration) (pipeline.Underrun, bool) {
	var best pipeline.Underrun
	found := false
	for _, u := range p.Underruns {
		if u.Start < to && u.Start+u.Duration > from && (!found || u.Duration > best.Duration) {
			best, found = u, true
		}
	}
	return best, found
}

// punctuationChunk returns the speech chunk of p that holds the
// punctuation before byte offset off of text (the word after it), or -1.
func punctuationChunk(p *pipeline.Playout, text string, off int) int {
	if off <= 0 || off > len(text) {
		return -1
	}
	k := off
	for k > 0 {
		r, size := utf8.DecodeLastRuneInString(text[:k])
		k -= size
		if unicode.IsLetter(r) || unicode.IsDigit(r) {
			return -1
		}
		if tts.IsSentenceEnd(r) || tts.IsClauseEnd(r) {
			break
		}
	}
	for i, c := range p.Chunks {
		if k >= c.From && k < c.To {
			return i
		}
	}
	return -1
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

// classifyAlone classifies silences with no text to align: a silence is
// an underrun when it is longer than the voice's sentence pause (the
// longest it makes on its own) by the margin; its length beyond the
// sentence pause is the gap.
func (r *Result) classifyAlone(silences []Silence, v tts.Voice, interruption time.Duration) {
	r.Pauses[AtClause], r.Pauses[AtSentence] = v.CommaPause, v.SentencePause
	for _, s := range silences {
		h := Heard{Silence: s, Place: Unknown, Offset: -1, Expected: v.SentencePause}
		margin := DefaultMargin + time.Duration(MarginShare*float64(v.SentencePause))
		excess := s.Length() - v.SentencePause
		h.Kind, h.Confidence = decide(excess, margin)
		if h.Kind == Gap {
			h.GapLength, h.GapStart = excess, s.End-excess
			u := pipeline.Underrun{Start: h.GapStart, Duration: excess, Class: pipeline.Glitch, Position: pipeline.PositionUnknown, Token: -1, Chunk: -1}
			if excess >= interruption {
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
