package tokens

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// MaxPiece is the longest run of letters Split keeps as one token.
const MaxPiece = 6

// Split splits text into pieces the way a BPE tokenizer roughly does for
// English: a word with its leading space is one token, words longer than
// MaxPiece letters are split into pieces of up to MaxPiece letters, and
// each punctuation mark is a token of its own. English prose comes out at
// about 1.3 tokens per word. Concatenating the pieces gives the text back.
func Split(text string) []string {
	out := make([]string, 0, Count(text))
	each(text, func(piece string) { out = append(out, piece) })
	return out
}

// Count returns how many pieces Split makes of text, without making them.
func Count(text string) int {
	n := 0
	each(text, func(string) { n++ })
	return n
}

// each calls f with every piece of text, in order. Trailing white space
// belongs to the last piece (or is the only one).
func each(text string, f func(piece string)) {
	i := 0
	var pending string // the last piece, held back for trailing space
	emit := func(p string) {
		if pending != "" {
			f(pending)
		}
		pending = p
	}
	for i < len(text) {
		start := i
		// leading white space joins the next word
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if !unicode.IsSpace(r) {
				break
			}
			i += size
		}
		if i == len(text) {
			// white space at the end joins the last piece
			pending = text[len(text)-len(pending)-(i-start):]
			break
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += size
			emit(text[start:i])
			continue
		}
		letters := 0
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'') || letters == MaxPiece {
				break
			}
			i += size
			letters++
		}
		emit(text[start:i])
	}
	if pending != "" {
		f(pending)
	}
}

// FillerText is what Filler speaks, piece by piece, over and over.
const FillerText = "The quick brown fox jumps over the lazy dog, and then it rests for a while."

var fillerPieces = Split(FillerText)

// Filler gives words to tokens whose text was not recorded (benchmark
// files often keep only timings): the pieces of FillerText in turn, so
// that a server can stream text and a synthesizer can speak it. The zero
// value starts at the first piece. A Filler is not safe for concurrent
// use.
type Filler struct {
	next int
}

// Text returns the next n pieces, joined.
func (f *Filler) Text(n int) string {
	if n == 1 {
		p := fillerPieces[f.next%len(fillerPieces)]
		f.next++
		return p
	}
	var b strings.Builder
	for range n {
		b.WriteString(fillerPieces[f.next%len(fillerPieces)])
		f.next++
	}
	return b.String()
}
