package corpus

import (
	"fmt"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/tts"
)

// Part says what a voice, text or condition of the corpus is for.
type Part string

// The parts of the corpus.
const (
	// Tune is what a detector may be tuned on.
	Tune Part = "tune"
	// HeldOut is kept apart to report on: a recording is held out when
	// its voice or its condition is.
	HeldOut Part = "held-out"
)

// Texts are the answers the corpus speaks, by part: tuning voices speak
// the first (those of cmd/underrun's evaluation of speak's recordings),
// held-out voices the second. Both have commas, sentence ends,
// lists and numbers; the held-out ones also questions, a semicolon, a
// dash and longer sentences.
var Texts = map[Part][]string{
	Tune: testkit.Answers,
	HeldOut: {
		"Of course. Your appointment is on Monday at half past ten; please arrive a few minutes early.",
		"The museum is closed today, but tomorrow it opens at ten in the morning. Tickets cost twelve dollars.",
		"I checked your account. The last payment went through on the third, so nothing is overdue.",
		"Take the second exit at the roundabout, then keep left for two miles. The hotel is on your right.",
		"Do you want the large one or the small one? The large one holds about four litres of water.",
		"Here is the plan: we leave at seven, stop for lunch in the valley, and reach the lake by three.",
		"Your flight is delayed by forty minutes. The new boarding time is eleven fifteen, at gate twelve.",
		"That recipe needs two eggs, a cup of milk and some flour — nothing else. It takes half an hour.",
	},
}

// Policies are the chunking rules the corpus chunks by: the plain rules
// and the framework presets of tts.ParsePolicy, and Clause, a rule of
// the corpus's own.
var Policies = []string{"sentence", Clause, "word", "token", "pipecat", "livekit"}

// Clause is the corpus's own chunking rule: the text up to each clause or
// sentence punctuation mark is released as it arrives.
const Clause = "clause"

// policy returns the chunker of a policy of Policies.
func policy(name string) (tts.Chunker, error) {
	if name == Clause {
		return &clauseChunker{}, nil
	}
	p, err := tts.ParsePolicy(name)
	if err != nil {
		return nil, err
	}
	return p.NewChunker(), nil
}

// clauseChunker releases the text up to each clause or sentence mark the
// moment it arrives.
type clauseChunker struct{ n, released int }

var _ tts.Chunker = (*clauseChunker)(nil)

func (c *clauseChunker) Append(_ time.Duration, text string) int {
	for i, r := range text {
		if tts.IsClauseEnd(r) || tts.IsSentenceEnd(r) {
			c.released = c.n + i + utf8.RuneLen(r)
		}
	}
	c.n += len(text)
	return c.released
}
func (c *clauseChunker) Deadline() (time.Duration, bool) { return 0, false }
func (c *clauseChunker) Expire(time.Duration) int        { return c.released }
func (c *clauseChunker) Flush() int                      { c.released = c.n; return c.n }
func (c *clauseChunker) Reset()                          { *c = clauseChunker{} }

// Place is the kind of place in the text where a gap falls: before the
// speech chunk that the player waited for.
type Place string

// The places of a gap.
const (
	// First is after the turn's first speech chunk, wherever that ends.
	First Place = "first"
	// Sentence, ClauseEnd and Word are after a sentence end, after a
	// clause mark, and between two words with no punctuation.
	Sentence  Place = "sentence"
	ClauseEnd Place = "clause"
	Word      Place = "word"
	// InWord is inside a word (token chunking splits long words).
	InWord Place = "in_word"
)

// Places lists the places in the order tables show them.
var Places = []Place{First, Sentence, ClauseEnd, Word, InWord}

// placeAt returns the place of byte offset off of text, where a chunk
// starts: what ends before it.
func placeAt(text string, off int) Place {
	if off <= 0 || off >= len(text) {
		return Sentence
	}
	space := false
	for k := off; k > 0; {
		r, size := utf8.DecodeLastRuneInString(text[:k])
		k -= size
		switch {
		case unicode.IsSpace(r):
			space = true
			continue
		case tts.IsSentenceEnd(r):
			return Sentence
		case tts.IsClauseEnd(r):
			return ClauseEnd
		case r == '"' || r == '\'' || r == ')':
			continue
		}
		break
	}
	r, _ := utf8.DecodeRuneInString(text[off:])
	if space || unicode.IsSpace(r) {
		return Word
	}
	return InWord
}

// chunk is one speech chunk: the text from byte From to To, released by
// the arrival of token Release.
type chunk struct {
	From, To, Release int
}

// chunks returns the speech chunks policy makes of the tokens: each
// release of text with a letter or digit in it is a chunk; punctuation
// released alone joins the chunk before it (a synthesizer speaks no audio
// of it).
func chunks(policyName string, toks []string) ([]chunk, error) {
	c, err := policy(policyName)
	if err != nil {
		return nil, err
	}
	var text strings.Builder
	var out []chunk
	from := 0
	add := func(to, release int) {
		if to <= from {
			return
		}
		s := text.String()[from:to]
		if !strings.ContainsFunc(s, func(r rune) bool { return unicode.IsLetter(r) || unicode.IsDigit(r) }) && len(out) > 0 {
			out[len(out)-1].To, out[len(out)-1].Release = to, release
		} else {
			out = append(out, chunk{From: from, To: to, Release: release})
		}
		from = to
	}
	for i, tok := range toks {
		text.WriteString(tok)
		// the times do not matter to the policies the corpus uses
		add(c.Append(time.Duration(i)*time.Millisecond, tok), i)
	}
	add(c.Flush(), len(toks)-1)
	if len(out) == 0 {
		return nil, fmt.Errorf("policy %s: no speech in %q", policyName, text.String())
	}
	return out, nil
}
