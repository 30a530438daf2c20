package heard

import (
	"math"
	"slices"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// PauseStats are the lengths of the voice's own pauses at one kind of
// place, as measured on the recording where no gap can be.
type PauseStats struct {
	// N is how many pauses were measured; Median their median; Spread
	// how far above it they range (the distance from the median to the
	// upper quartile's mirror, at least minSpread).
	N      int
	Median time.Duration
	Spread time.Duration
}

// minSpread is the least spread a voice's pauses are taken to have: the
// detector's own edges move by a frame or two.
const minSpread = 10 * time.Millisecond

// pauseStatsOf measures pauses ls (sorted in place).
func pauseStatsOf(ls []time.Duration) PauseStats {
	if len(ls) == 0 {
		return PauseStats{}
	}
	slices.Sort(ls)
	at := func(q float64) time.Duration {
		h := q * float64(len(ls)-1)
		lo := int(math.Floor(h))
		if lo+1 >= len(ls) {
			return ls[len(ls)-1]
		}
		return ls[lo] + time.Duration((h-float64(lo))*float64(ls[lo+1]-ls[lo]))
	}
	m := at(0.5)
	return PauseStats{N: len(ls), Median: m, Spread: max(minSpread, at(0.8)-m)}
}

// placeKey is a kind of place: its punctuation, and whether a speech chunk
// begins there.
type placeKey struct {
	place Place
	opens bool
}

// voiceModel is what the recording says of its voice's own pauses.
type voiceModel struct {
	// inChunk are the pauses inside speech chunks, where the trace says no
	// gap can be; atChunk those where a chunk begins, where the timing
	// says none was (the chunk's audio was there well before it played).
	stats map[placeKey]PauseStats
	// lead is how long the near silence at a chunk's start lasts (its
	// padding), where the recording shows it apart from a gap's silence;
	// leadN how many showed it.
	lead  time.Duration
	leadN int
	// k is where, against the engine's timing, a chunk's sound begins when
	// it plays the moment its audio is ready (after a gap); kN how many
	// gaps measured it (0: the engine's timing as it is).
	k  time.Duration
	kN int
	// model is the voice model, and rate how much longer the recording's
	// voice takes to say the text than it (its pauses taken out)
	model tts.Voice
	rate  float64
}

// pause returns the voice's pause at a kind of place: measured there; or
// at the same punctuation on the other side of a chunk's start; or at the
// other punctuation (clause, sentence); or between words; or the voice
// model's own, at the recording's rate of speech. It says whether the
// pause was measured at that kind of place (inside a chunk, the same
// punctuation where a chunk begins counts).
func (v *voiceModel) pause(k placeKey) (PauseStats, bool) {
	if s, ok := v.stats[k]; ok && s.N >= 1 {
		return s, true
	}
	if s, ok := v.stats[placeKey{k.place, !k.opens}]; ok && s.N >= 1 && k.place != InWord {
		return s, !k.opens
	}
	// the other punctuation's: a voice's clause and sentence pauses differ
	// less where chunks join than its model's do
	if other := map[Place]Place{AtClause: AtSentence, AtSentence: AtClause}[k.place]; other != "" {
		for _, o := range []placeKey{{other, k.opens}, {other, !k.opens}} {
			if s, ok := v.stats[o]; ok && s.N >= 1 {
				return s, false
			}
		}
	}
	model := map[Place]time.Duration{AtClause: v.model.CommaPause, AtSentence: v.model.SentencePause}
	for _, o := range []placeKey{{AtWord, k.opens}, {AtWord, !k.opens}, {InWord, false}} {
		if s, ok := v.stats[o]; ok && s.N >= 1 {
			return s, false
		}
	}
	if m := model[k.place]; m > 0 {
		m = time.Duration(float64(m) * v.rate)
		return PauseStats{Median: m, Spread: max(minSpread, m/4)}, false
	}
	return PauseStats{Spread: minSpread}, false
}

// least returns the shortest pause measured where chunks begin (of any
// kind), or between words inside them where none was: the least a voice
// pauses where a chunk begins, for a kind of place never measured.
func (v *voiceModel) least() PauseStats {
	var best PauseStats
	found := false
	for _, opens := range []bool{true, false} {
		for k, s := range v.stats {
			if k.opens == opens && (opens || k.place == AtWord || k.place == InWord) && (!found || s.Median < best.Median) {
				best, found = s, true
			}
		}
		if found {
			return best
		}
	}
	return PauseStats{Spread: minSpread}
}
