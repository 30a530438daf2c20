package tts

import (
	"strings"
	"unicode"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/tts/internal/sentencex"
)

// sentencexWindow bounds the text sentencex is run on, as splitWindow does
// for Punkt. sentencex's rules look further back than Punkt's (a quotation
// or parenthesis opened earlier, the number of quotation marks and the
// list markers of the paragraph), so the window is wider; text held this
// long without a sentence end is rare in speech (each earlier candidate
// was already decided against, with the words after it complete).
const sentencexWindow = 8192

// sentencexEndOfSentence is Pipecat's match_endofsentence from 1.12.0 on
// (utils/string.py, language unset: English): the end of the first
// sentence of text by sentencex, or 0. sentencex's pieces are regrouped
// as Pipecat's _sent_tokenize does (white space between them goes with the
// next sentence); where the first sentence ends in a quoted word and a
// period ('She said, "Dr.'), the opening quotation marks are blanked and
// sentencex asked again, so that it may take the word for an
// abbreviation. A text that sentencex keeps whole counts when it ends in
// sentence punctuation, otherwise at its first unambiguous non-Latin
// sentence mark.
func sentencexEndOfSentence(text []byte) int { return sentencexEnd(text, firstMarkEnd(text), 0) }

// sentencexEnd is sentencexEndOfSentence given the end of text's first
// unambiguous non-Latin sentence mark (0: none), which the chunker keeps
// track of as text comes, rather than scanning all it holds at each check,
// and the window (0: sentencexWindow).
func sentencexEnd(text []byte, mark, window int) int {
	text = trimPySpace(text)
	if len(text) == 0 {
		return 0
	}
	if window == 0 {
		window = sentencexWindow
	}
	w := 0
	if len(text) > window {
		w = windowStartAt(text, window)
	}
	seen := string(text[w:])
	first, count := firstSentence(seen)
	if count > 1 {
		if qs, qe, ok := quotedWordEnd(seen[:first]); ok {
			n := utf8.RuneCountInString(seen[qs:qe])
			blanked := seen[:qs] + strings.Repeat(" ", n) + seen[qe:]
			var end int
			end, count = firstSentence(blanked)
			first = byteOffset(seen, utf8.RuneCountInString(blanked[:end]))
		}
	}
	switch {
	case count > 1:
		return w + first
	case count == 1:
		if r, _ := utf8.DecodeLastRune(text); isPipecatSentenceEnd(r) {
			return len(text)
		}
		return mark
	}
	return 0
}

// firstSentence returns, for Pipecat's sentences of text (sentencex's
// pieces, each piece of white space only joined to the next), the end of
// the first without the white space after it, and how many there are. A
// lone sentence counts only if it is the whole text: sentencex drops the
// paragraph separators where it cuts a text over 10 KiB, and Pipecat then
// compares the two and finds no sentence.
func firstSentence(text string) (end, count int) {
	pieces := sentencex.Segment(text)
	at := 0
	for _, p := range pieces {
		if strings.TrimFunc(p, isPySpace) != "" {
			if count == 0 {
				end = len(strings.TrimRightFunc(text[:min(at+len(p), len(text))], isPySpace))
			}
			count++
		}
		at += len(p)
	}
	if count == 1 && at != len(text) {
		return 0, 0
	}
	return end, count
}

// quotedWordEnd finds Pipecat's _QUOTED_WORD_END in a first sentence: a
// run of opening quotation marks (not right after a word character), then
// word characters and periods to the end, the last a period. It returns
// the marks' byte range.
func quotedWordEnd(s string) (int, int, bool) {
	q := len(s)
	for q > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:q])
		if !isPyWord(r) && r != '.' {
			break
		}
		q -= size
	}
	if !strings.HasSuffix(s, ".") || utf8.RuneCountInString(s[q:]) < 2 {
		return 0, 0, false
	}
	p := q
	for p > 0 {
		r, size := utf8.DecodeLastRuneInString(s[:p])
		if !strings.ContainsRune(`"'“‘«‹„‟「『`, r) {
			break
		}
		p -= size
	}
	if p == q {
		return 0, 0, false
	}
	if r, _ := utf8.DecodeLastRuneInString(s[:p]); p > 0 && isPyWord(r) {
		// the match starts at the second mark, after a non-word character
		_, size := utf8.DecodeRuneInString(s[p:])
		p += size
		if p == q {
			return 0, 0, false
		}
	}
	return p, q, true
}

// isPyWord is \w of Python's regular expressions on text: a letter, a
// number or the underscore.
func isPyWord(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) || r == '_' }

// byteOffset returns the byte offset of the n-th character of s.
func byteOffset(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}
