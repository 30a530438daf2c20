package pipeline

import (
	"math"
	"slices"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/tts"
)

func (p *Playout) samples(d time.Duration) int64 {
	return int64(math.Round(d.Seconds() * float64(p.cfg.SampleRate)))
}

// Place puts u at start for d: its samples at c's sample rate, its class
// by c's interruption threshold.
func (c *Config) Place(u *Underrun, start, d time.Duration) {
	rate := float64(c.SampleRate)
	u.Start, u.Duration = start, d
	u.StartSample = int64(math.Round(start.Seconds() * rate))
	u.Samples = int64(math.Round((start+d).Seconds()*rate)) - u.StartSample
	u.Class = Glitch
	if d >= c.Interruption {
		u.Class = Interruption
	}
}

func (p *Playout) newUnderrun(chunk int, at, d time.Duration) Underrun {
	u := Underrun{Turn: p.turn, Chunk: chunk}
	p.cfg.Place(&u, at, d)
	return u
}

func (p *Playout) intraGap(chunk int, at, d time.Duration) {
	if p.interruptionsOnly && (d < p.cfg.Interruption || len(p.Underruns) > 0) {
		return
	}
	u := p.newUnderrun(chunk, at, d)
	u.Cause, u.Position = CauseSynthesizer, MidChunk
	u.Token = p.Chunks[chunk].First
	p.Underruns = append(p.Underruns, u)
	p.gapKinds = append(p.gapKinds, gapSynth)
}

func (p *Playout) itl(k int) time.Duration {
	if k <= 0 {
		return p.at[0]
	}
	return p.at[k] - p.at[k-1]
}

// How the text of a late chunk stood when the player ran dry; classify
// turns it into a Cause.
const (
	gapSynth   uint8 = iota // released in time; the synthesizer was late
	gapWaited               // all its text was in; the release waited for the trigger token
	gapPartial              // some of its text was in; the policy held it for the rest
	gapLate                 // none of its text was in
)

// gap records the gap before chunk i and finds its cause. A cause that
// depends on the turn's usual pace is settled provisionally from the
// chunks so far, and again at End from the whole turn.
func (p *Playout) gap(i int, at, d time.Duration) {
	if p.interruptionsOnly && (d < p.cfg.Interruption || len(p.Underruns) > 0) {
		return
	}
	u, kind := p.gapBefore(i, at, d)
	p.Underruns = append(p.Underruns, u)
	p.gapKinds = append(p.gapKinds, kind)
	if !p.replaying { // a replay settles every cause at End
		p.classify(len(p.at), len(p.Underruns)-1)
	}
}

// gapBefore accounts a gap of d at at before chunk i: the underrun with
// its token, ITL and tolerance, and how the chunk's text stood (the kind
// classify needs for its cause).
func (p *Playout) gapBefore(i int, at, d time.Duration) (Underrun, uint8) {
	u := p.newUnderrun(i, at, d)
	c := &p.Chunks[i]
	prev := &p.Chunks[i-1]
	u.Position = p.position(prev.To)
	first, last := p.spokenRange(c)
	kind := gapLate
	switch {
	case c.Release+p.latency(i) <= at:
		kind = gapSynth
		u.Token = c.First
	case p.readyIf(i, p.at[last]) <= at:
		kind = gapWaited
		u.Token = c.Trigger
	default:
		if p.readyIf(i, p.at[first]) <= at {
			kind = gapPartial
		}
		// the late token: the longest wait for the chunk's text, or for
		// the token whose arrival released it, after its text (a
		// sentence end waits for the next word: a stall right after a
		// sentence end holds the finished sentence back)
		last := c.Last
		if !c.Timer && c.Trigger > last && c.Trigger < len(p.at) {
			last = c.Trigger
		}
		j := c.Last
		for k := prev.Last + 1; k <= last; k++ {
			if p.itl(k) > p.itl(j) {
				j = k
			}
		}
		u.Token = j
	}
	u.ITL = p.itl(u.Token)
	if kind != gapSynth {
		u.Tolerance = max(0, u.ITL-d)
	}
	return u, kind
}

// spokenRange returns the streamed chunks holding the first and last
// non-space bytes of speech chunk c: white space that a policy releases
// with a chunk belongs to the token after it.
func (p *Playout) spokenRange(c *SpeechChunk) (first, last int) {
	from, to := c.From, c.To
	for to > from+1 && isSpaceByte(p.text[to-1]) {
		to--
	}
	for from < to-1 && isSpaceByte(p.text[from]) {
		from++
	}
	return p.recordAt(from), p.recordAt(to - 1)
}

func isSpaceByte(b byte) bool { return b == ' ' || b == '\n' || b == '\t' || b == '\r' }

// classify settles the cause of underrun i from the first n streamed
// chunks. An ITL is a stall when it exceeds StallFactor times the median
// ITL. A chunk whose text was in but whose release waited for a token, or
// one the policy held while the rest of it streamed, is held unless that
// token came after a stall. A chunk none of whose text was in is late for
// a stall, else for the stream's pace when the median ITL is longer than
// the audio a streamed chunk carries on average, else for start-up.
func (p *Playout) classify(n, i int) {
	p.classifyKind(&p.Underruns[i], p.gapKinds[i], n)
}

// classifyKind settles u's cause, its text having stood as kind, from
// the first n streamed chunks.
func (p *Playout) classifyKind(u *Underrun, kind uint8, n int) {
	if kind == gapSynth {
		u.Cause = CauseSynthesizer
		return
	}
	if _, ok := p.toolBefore(u); ok {
		u.Cause = CauseTool
		return
	}
	if p.Chunks[u.Chunk].Timer && kind == gapWaited {
		u.Cause = CauseHeld
		return
	}
	median := p.medianITL(n, u.Token)
	var stall bool
	if median > 0 {
		stall = float64(u.ITL) > p.cfg.StallFactor*float64(median)
	} else {
		stall = u.ITL > p.perRecordAudio(n)
	}
	switch {
	case stall:
		u.Cause = CauseStall
	case kind != gapLate:
		u.Cause = CauseHeld
	case median > p.perRecordAudio(n):
		u.Cause = CausePace
	default:
		u.Cause = CauseStartup
	}
}

// toolBefore returns the tool call that explains gap u: one that started
// after the text before u's chunk had streamed (the previous speech
// chunk's last token) and before the gap ended, the late token arriving
// after it started (the token at whose arrival the tool call started was
// not held up by it).
func (p *Playout) toolBefore(u *Underrun) (ToolCall, bool) {
	if len(p.tools) == 0 || u.Chunk < 1 || u.Token < 0 || u.Token >= len(p.at) {
		return ToolCall{}, false
	}
	from := time.Duration(0)
	if k := p.Chunks[u.Chunk-1].Last; k >= 0 && k < len(p.at) {
		from = p.at[k]
	}
	for _, tc := range p.tools {
		if tc.At >= from && tc.At < u.Start+u.Duration && p.at[u.Token] > tc.At {
			return tc, true
		}
	}
	return ToolCall{}, false
}

// ToolCallOf returns the tool call behind an underrun of CauseTool.
func (p *Playout) ToolCallOf(u *Underrun) (ToolCall, bool) {
	if u.Cause != CauseTool {
		return ToolCall{}, false
	}
	return p.toolBefore(u)
}

// perRecordAudio is the mean audio of a spoken streamed chunk so far.
func (p *Playout) perRecordAudio(n int) time.Duration {
	if n == 0 || p.spokenRecords == 0 {
		return 0
	}
	return p.audio[n-1] / time.Duration(p.spokenRecords)
}

// medianITL returns the median ITL of the first n streamed chunks, leaving
// out the ITL before chunk skip; 0 when there is none.
func (p *Playout) medianITL(n, skip int) time.Duration {
	// p.sortedITL holds the ITLs of the first p.sortedN chunks, sorted:
	// extended as n grows (classify asks with n growing, and at End for
	// every underrun with the same n), started again for a smaller n
	if n < p.sortedN || p.sortedN == 0 {
		p.sortedITL, p.sortedN = p.sortedITL[:0], 1
	}
	if added := n - p.sortedN; added > 0 {
		if added > 8 && added > len(p.sortedITL)/8 {
			for k := p.sortedN; k < n; k++ {
				p.sortedITL = append(p.sortedITL, p.at[k]-p.at[k-1])
			}
			slices.Sort(p.sortedITL)
		} else {
			for k := p.sortedN; k < n; k++ {
				d := p.at[k] - p.at[k-1]
				i, _ := slices.BinarySearch(p.sortedITL, d)
				p.sortedITL = slices.Insert(p.sortedITL, i, d)
			}
		}
		p.sortedN = n
	}
	s := p.sortedITL
	// the sorted ITLs without (one of the values equal to) the one before
	// skip: value i of them is s[i] below the place of that value, s[i+1]
	// from it on
	gone := len(s)
	if skip >= 1 && skip < n {
		gone, _ = slices.BinarySearch(s, p.at[skip]-p.at[skip-1])
	}
	m := len(s)
	if gone < len(s) {
		m--
	}
	at := func(i int) time.Duration {
		if i >= gone {
			return s[i+1]
		}
		return s[i]
	}
	if m == 0 {
		return 0
	}
	if m%2 == 1 {
		return at(m / 2)
	}
	return (at(m/2-1) + at(m/2)) / 2
}

// position classifies the place in the text where audio stopped at off.
func (p *Playout) position(off int) Position {
	if !p.hasText {
		return PositionUnknown
	}
	before := p.text[:off]
	trimmed := before
	for len(trimmed) > 0 {
		r, size := utf8.DecodeLastRune(trimmed)
		if !unicode.IsSpace(r) {
			break
		}
		trimmed = trimmed[:len(trimmed)-size]
	}
	for len(trimmed) > 0 {
		r, size := utf8.DecodeLastRune(trimmed)
		switch {
		case tts.IsSentenceEnd(r):
			return AtSentenceBoundary
		case r == '"' || r == '\'' || r == ')' || r == '”' || r == '’' || r == ']':
			trimmed = trimmed[:len(trimmed)-size]
			continue
		case r == ',' || r == ';' || r == ':' || r == '—' || r == '–':
			return AtClauseBoundary
		}
		break
	}
	if len(before) > 0 && off < len(p.text) {
		r1, _ := utf8.DecodeLastRune(before)
		r2, _ := utf8.DecodeRune(p.text[off:])
		if isWord(r1) && isWord(r2) {
			return MidWord
		}
	}
	return MidSentence
}

func isWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }
