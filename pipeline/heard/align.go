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
}

// boundaries returns the places between the words of text, with the
// articulation time (the voice's, its pauses left out) before each, and
// the articulation time of the whole text.
func boundaries(text string, v tts.Voice) ([]boundary, time.Duration) {
	v.CommaPause, v.SentencePause = 0, 0
	m := v.Meter()
	var out []boundary
	var art time.Duration
	last := 0 // text metered so far
	inWord, seen := false, false
	place := AtWord
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		word := unicode.IsLetter(r) || unicode.IsDigit(r) || (inWord && (r == '\'' || r == '’'))
		switch {
		case word && !inWord && seen:
			art += m.Add(text[last:i])
			last = i
			out = append(out, boundary{off: i, place: place, art: art})
			place = AtWord
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

// align places each run at a boundary (its index) or inside a word (-1):
// the placement that makes the sound between silences fit the voice's
// articulation time of the text between their places best (the voice's
// rate scaled to the recording's), with punctuation and the underruns the
// engine predicts from the trace expected to be heard as silence (a long
// gap before a word would otherwise slide to the clause end a word on,
// where a silence costs nothing). Dynamic programming over (run, boundary), in a band around
// where the rate puts each run.
func align(runs []run, total time.Duration, bs []boundary, art time.Duration) []int {
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
		case AtClause:
			c = costMissClause
		}
		if b.gap >= predictedHeard {
			c += costMissGap
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
		sigma := 0.04 + 0.1*math.Max(ds, da)
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
		if g := bs[j].gap; g >= predictedHeard && runs[k].length >= g/2 {
			return 0 // the silence the engine predicts there
		}
		if bs[j].place == AtWord {
			return costAtWord
		}
		return 0
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
