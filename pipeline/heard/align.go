package heard

import (
	"math"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/tts"
)

// Place says where in the text a silence fell, which decides the pause
// the voice makes there on its own.
type Place string

// The places of a silence.
const (
	// AtWord is between two words with no punctuation: most voices make
	// little or no pause there.
	AtWord Place = "word"
	// AtClause is after , ; : or a dash: the voice's comma pause.
	AtClause Place = "clause"
	// AtSentence is after . ! ? or an ellipsis: the sentence pause.
	AtSentence Place = "sentence"
	// InWord is inside a word (a stop consonant's closure, or the
	// synthesizer starving the player mid chunk).
	InWord Place = "in_word"
	// Unknown is where there is no text to say (no trace).
	Unknown Place = "unknown"
)

// boundary is a place between two words of a turn's spoken text.
type boundary struct {
	off   int           // byte offset of the next word's first byte
	place Place         // AtWord, AtClause or AtSentence
	art   time.Duration // the voice's articulation time of the text before off
	gap   time.Duration // the underrun the engine predicts before the word, 0 if none
	gapAt time.Duration // where it begins, in the turn's time
	// chunk is the speech chunk the next word is in, and opens whether
	// that chunk begins here (a place where the synthesizer's audio of
	// one chunk ends and the next begins: its own padding, or a gap);
	// earliest is when, in the turn's time, the engine has that chunk's
	// first audio ready (its text released, and the synthesizer's
	// latency): its sound cannot begin before.
	chunk    int
	opens    bool
	earliest time.Duration
}

// boundaries returns the places between the words of text, and at each
// offset of splits that falls inside a word (a speech chunk that begins
// mid-word: token chunking), with the articulation time (the voice's, its
// pauses left out) before each, and the articulation time of the whole
// text.
func boundaries(text string, v tts.Voice, splits ...int) ([]boundary, time.Duration) {
	v.CommaPause, v.SentencePause = 0, 0
	m := v.Meter()
	var out []boundary
	var art time.Duration
	last := 0 // text metered so far
	inWord, seen := false, false
	place := AtWord
	split := 0
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || (inWord && (r == '\'' || r == '’'))
		for split < len(splits) && splits[split] < i {
			split++
		}
		switch {
		case word && !inWord && seen:
			art += m.Add(text[last:i])
			last = i
			out = append(out, boundary{off: i, place: place, art: art})
			place = AtWord
		case word && inWord && split < len(splits) && splits[split] == i:
			art += m.Add(text[last:i])
			last = i
			out = append(out, boundary{off: i, place: InWord, art: art})
		case !word && seen:
			switch {
			case tts.IsSentenceEnd(r):
				place = AtSentence
			case tts.IsClauseEnd(r) && place != AtSentence:
				place = AtClause
			}
		}
		if word {
			seen = true
		}
		inWord = word
		i += size
	}
	art += m.Add(text[last:])
	return out, art
}

// run is a silence of one turn's speech, with the sound before it.
type run struct {
	sound  time.Duration // sound (silences taken out) from the turn's first sound to the run
	length time.Duration
	end    time.Duration // where it ends, in the turn's time (the recording's offset taken out)
}

// Costs of the alignment: how unlikely each thing is, in units of a
// squared standard deviation of timing.
const (
	costMissSentence = 4.0                    // a sentence end with no silence heard
	costMissClause   = 1.5                    // a clause end with no silence heard
	costAtWord       = 1.0                    // a silence between words without punctuation
	costInWord       = 1.5                    // a short silence inside a word
	costMissGap      = 4.0                    // an underrun the engine predicts, heard as no silence
	predictedHeard   = 100 * time.Millisecond // the shortest predicted underrun sure to be heard
	inWordShort      = 60 * time.Millisecond
	maxInWordRun     = 3 // silences inside words in a row
)

// alignOpts are what the alignment knows of the voice and the timing.
type alignOpts struct {
	// missChunk is the cost of a speech chunk's start heard with no
	// silence: 0 for a voice that runs one chunk's audio into the next,
	// more for one that pads each chunk with silence of its own.
	missChunk float64
	// timed says whether the boundaries' earliest times hold (the turn's
	// place in the recording is known), and slack how far off they may
	// be.
	timed bool
	slack time.Duration
	// padded says the voice pads each chunk: a long silence where a chunk
	// begins is its own.
	padded bool
	// k is where a chunk's sound begins against the engine's timing when
	// it plays as soon as it is ready, known within window.
	k, window time.Duration
	// missSentence and missClause, when set, are the costs of a sentence
	// or clause end heard with no silence, as the voice leaves them (0:
	// the defaults).
	missSentence, missClause float64
}

// missCost is the cost of a place heard with no silence where the voice
// leaves one at share heard of its places of that kind.
func missCost(heard float64) float64 {
	return max(0.2, min(costMissSentence, -2*math.Log(1.05-heard)))
}

// costResumed is the reward for placing a silence where a chunk begins
// whose audio the timing says was ready just as the silence ended.
const costResumed = 4.0

// atWord is the cost of a silence of length l between two words with no
// punctuation: voices pause there briefly, and seldom long.
func atWord(l time.Duration) float64 {
	switch {
	case l <= 80*time.Millisecond:
		return 0.5 * costAtWord
	case l <= 200*time.Millisecond:
		return costAtWord
	}
	return 2.5 * costAtWord
}

// timingSigma scales the cost of a word heard before its chunk's audio
// can have been there.
const timingSigma = 20 * time.Millisecond

// align places each run at a boundary (its index) or inside a word (-1):
// the placement that makes the sound between silences fit the voice's
// articulation time of the text between their places best (the voice's
// rate scaled to the recording's), with punctuation and the underruns the
// engine predicts from the trace expected to be heard as silence (a long
// gap before a word would otherwise slide to the clause end a word on,
// where a silence costs nothing). Dynamic programming over (run, boundary), in a band around
// where the rate puts each run.
func align(runs []run, total time.Duration, bs []boundary, art time.Duration, ao alignOpts) []int {
	out := make([]int, len(runs))
	for i := range out {
		out[i] = -1
	}
	if len(runs) == 0 || len(bs) == 0 || art <= 0 || total <= 0 {
		return out
	}
	scale := float64(total) / float64(art)
	pos := func(j int) float64 { // where boundary j lies in sound time, seconds
		if j < 0 {
			return 0
		}
		if j >= len(bs) {
			return total.Seconds()
		}
		return float64(bs[j].art) * scale / float64(time.Second)
	}
	// missing[j] is the cost of boundaries 0..j-1 heard with no silence
	missing := make([]float64, len(bs)+1)
	for j, b := range bs {
		c := 0.0
		switch b.place {
		case AtSentence:
			c = costMissSentence
			if ao.missSentence > 0 {
				c = ao.missSentence
			}
		case AtClause:
			c = costMissClause
			if ao.missClause > 0 {
				c = ao.missClause
			}
		}
		if b.gap >= predictedHeard {
			c += costMissGap
		}
		if b.opens {
			c += ao.missChunk
		}
		missing[j+1] = missing[j] + c
	}
	missed := func(from, to int) float64 { // boundaries from..to-1 unheard
		if to <= from {
			return 0
		}
		return missing[to] - missing[from]
	}
	seg := func(ds, da float64) float64 {
		sigma := 0.05 + 0.2*math.Max(ds, da)
		d := (ds - da) / sigma
		return d * d
	}
	inWord := func(l time.Duration) float64 {
		if l <= inWordShort {
			return costInWord
		}
		return costInWord + float64(l-inWordShort)/float64(20*time.Millisecond)
	}
	emit := func(k, j int) float64 { // run k placed at boundary j
		c := 0.0
		// the sound after the silence is the next word's: it cannot begin
		// before the engine has its chunk's audio (within the slack of the
		// engine's timing and the recording's offset)
		if v := bs[j].earliest - ao.slack - runs[k].end; ao.timed && v > 0 {
			d := float64(v) / float64(timingSigma)
			c += d * d
		}
		// a silence whose sound resumed as soon as the chunk's audio can
		// have been ready is most likely the wait for it
		if d := runs[k].end - bs[j].earliest - ao.k; ao.timed && bs[j].opens && d > -ao.window && d < ao.window && runs[k].length >= 2*DefaultMinSilence {
			c -= costResumed
		}
		if g := bs[j].gap; g >= predictedHeard && runs[k].length >= g/2 {
			return c // the silence the engine predicts there
		}
		switch {
		case bs[j].place != AtWord:
		case bs[j].opens && ao.padded:
		case bs[j].opens:
			// a chunk begins there: a stall's gap is as likely as a pause
			c += atWord(runs[k].length) / 2
		default:
			c += atWord(runs[k].length)
		}
		return c
	}
	sound := func(k int) float64 {
		if k < 0 {
			return 0
		}
		return runs[k].sound.Seconds()
	}
	// candidates of each run: the boundaries within the band
	cands := make([][]int, len(runs))
	for k, r := range runs {
		s := r.sound.Seconds()
		band := 0.4 + 0.15*s
		for j := range bs {
			if math.Abs(pos(j)-s) <= band {
				cands[k] = append(cands[k], j)
			}
		}
		if len(cands[k]) == 0 { // the nearest
			best := 0
			for j := range bs {
				if math.Abs(pos(j)-s) < math.Abs(pos(best)-s) {
					best = j
				}
			}
			cands[k] = []int{best}
		}
	}
	type state struct {
		cost         float64
		prevK, prevJ int // -1: the start
		ok           bool
	}
	dp := make([][]state, len(runs))
	for k := range runs {
		dp[k] = make([]state, len(cands[k]))
		for ci, j := range cands[k] {
			best := state{cost: math.Inf(1)}
			skip := 0.0
			for kp := k - 1; kp >= -1 && k-kp-1 <= maxInWordRun; kp-- {
				if kp == -1 {
					c := skip + seg(sound(k), pos(j)) + missed(0, j) + emit(k, j)
					if c < best.cost {
						best = state{cost: c, prevK: -1, prevJ: -1, ok: true}
					}
					break
				}
				for cj, jp := range cands[kp] {
					if jp >= j || !dp[kp][cj].ok {
						continue
					}
					c := dp[kp][cj].cost + skip + seg(sound(k)-sound(kp), pos(j)-pos(jp)) + missed(jp+1, j) + emit(k, j)
					if c < best.cost {
						best = state{cost: c, prevK: kp, prevJ: cj, ok: true}
					}
				}
				skip += inWord(runs[kp].length)
			}
			dp[k][ci] = best
		}
	}
	// the end: the last run placed at a boundary, the runs after it inside
	// words
	bestK, bestC, bestCost := -1, -1, math.Inf(1)
	skip := 0.0
	for k := len(runs) - 1; k >= -1 && len(runs)-1-k <= maxInWordRun; k-- {
		if k == -1 {
			if c := skip + seg(total.Seconds(), total.Seconds()) + missed(0, len(bs)); c < bestCost {
				bestK, bestC, bestCost = -1, -1, c
			}
			break
		}
		for ci, j := range cands[k] {
			if !dp[k][ci].ok {
				continue
			}
			c := dp[k][ci].cost + skip + seg(total.Seconds()-sound(k), total.Seconds()-pos(j)) + missed(j+1, len(bs))
			if c < bestCost {
				bestK, bestC, bestCost = k, ci, c
			}
		}
		skip += inWord(runs[k].length)
	}
	for k, ci := bestK, bestC; k >= 0; {
		out[k] = cands[k][ci]
		st := dp[k][ci]
		k, ci = st.prevK, st.prevJ
	}
	return out
}
