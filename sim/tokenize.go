package sim

import (
	"unicode"
	"unicode/utf8"
)

// maxPiece is the longest run of letters Tokenize keeps as one token.
const maxPiece = 6

// Tokenize splits text into pieces the way a BPE tokenizer roughly does
// for English: a word with its leading space is one token, words longer
// than six letters are split into pieces of up to six letters, and each
// punctuation mark is a token of its own. English prose comes out at about
// 1.3 tokens per word. Concatenating the pieces gives the text back.
func Tokenize(text string) []string {
	var out []string
	i := 0
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
			if start < i {
				if len(out) > 0 {
					out[len(out)-1] += text[start:]
				} else {
					out = append(out, text[start:])
				}
			}
			break
		}
		r, size := utf8.DecodeRuneInString(text[i:])
		if !unicode.IsLetter(r) && !unicode.IsDigit(r) {
			i += size
			out = append(out, text[start:i])
			continue
		}
		letters := 0
		for i < len(text) {
			r, size := utf8.DecodeRuneInString(text[i:])
			if !(unicode.IsLetter(r) || unicode.IsDigit(r) || r == '\'') || letters == maxPiece {
				break
			}
			i += size
			letters++
		}
		out = append(out, text[start:i])
	}
	return out
}
