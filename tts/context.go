package tts

import (
	"fmt"
	"time"
	"unicode"
	"unicode/utf8"
)

// A real engine speaks a word inside its sentence shorter than alone: each
// utterance has its own onset and final fall, so espeak-ng's durations of
// a sentence's words synthesized one by one add up to 1.14-1.46 times the
// sentence. Measured in context, a chunk's audio is its share of its
// sentence's: the sentence is synthesized once, whole, and its samples are
// apportioned to the chunks that hold it in proportion to the voice
// model's audio of each part (letters and pauses), so that a turn's
// measured speech is that of its sentences whatever the chunking.

// Sentences returns the context units of text: spans [from, to) that cover
// it end to end, each a sentence with the white space after it (a sentence
// ends at sentence punctuation, with any closing quotes or brackets, before
// white space or the end of the text).
func Sentences(text string) [][2]int {
	var out [][2]int
	from, ended := 0, false
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		switch {
		case IsSentenceEnd(r):
			ended = true
		case ended && isCloser(r):
		case unicode.IsSpace(r):
			if ended {
				// the sentence takes the white space after it
				j := i
				for j < len(text) {
					r2, s2 := utf8.DecodeRuneInString(text[j:])
					if !unicode.IsSpace(r2) {
						break
					}
					j += s2
				}
				out = append(out, [2]int{from, j})
				from, ended = j, false
				i = j
				continue
			}
		default:
			ended = false
		}
		i += size
	}
	if from < len(text) {
		out = append(out, [2]int{from, len(text)})
	}
	return out
}

// WithVoice sets the voice whose model apportions a sentence's audio to
// its chunks (InContext); the default is DefaultVoice. It returns c.
func (c *Cache) WithVoice(v Voice) *Cache {
	c.voice = v
	return c
}

// InContext returns how long the engine speaks text[from:to] as part of
// text: the chunk's share of the audio of every sentence it overlaps,
// each sentence synthesized whole (once). Pieces of one sentence add up
// to that sentence's audio exactly. It makes the Cache a
// pipeline.ContextDurations.
func (c *Cache) InContext(text string, from, to int) (time.Duration, error) {
	var d time.Duration
	err := c.eachShare(text, from, to, func(a Audio, s0, s1 int) {
		d += Audio{Samples: a.Samples[s0:s1], Rate: a.Rate}.Duration()
	})
	return d, err
}

// AudioInContext returns the samples of text[from:to] spoken as part of
// text: the slices of its sentences' audio that InContext counts.
func (c *Cache) AudioInContext(text string, from, to int) (Audio, error) {
	var out Audio
	err := c.eachShare(text, from, to, func(a Audio, s0, s1 int) {
		out.Rate = a.Rate
		out.Samples = append(out.Samples, a.Samples[s0:s1]...)
	})
	return out, err
}

// eachShare calls share with the audio of each sentence that
// text[from:to] overlaps and the samples [s0, s1) of it that are the
// chunk's.
func (c *Cache) eachShare(text string, from, to int, share func(a Audio, s0, s1 int)) error {
	if from < 0 || to > len(text) || from > to {
		return fmt.Errorf("%w: chunk at bytes %d..%d of a %d-byte text", ErrEngine, from, to, len(text))
	}
	v := c.voice
	if v.WPM == 0 {
		v = DefaultVoice()
	}
	for _, u := range Sentences(text) {
		lo, hi := max(from, u[0]), min(to, u[1])
		if lo >= hi {
			continue
		}
		sentence := text[u[0]:u[1]]
		a, err := c.Audio(sentence)
		if err != nil {
			return err
		}
		if a.Rate <= 0 {
			continue
		}
		n := len(a.Samples)
		// sample boundary of byte offset x of the sentence: its share of
		// the voice model's audio of the sentence
		total := v.Duration(sentence)
		at := func(x int) int {
			if x >= len(sentence) {
				return n
			}
			if total <= 0 {
				return n * x / len(sentence)
			}
			return int(int64(n) * int64(v.Duration(sentence[:x])) / int64(total))
		}
		share(a, at(lo-u[0]), at(hi-u[0]))
	}
	return nil
}
