package pipeline

import (
	"unicode"
	"unicode/utf8"
)

// TokensPerWordNotSpeech is how many tokens a turn may have per word
// boundary and still count as speech: above it (fewer than one boundary
// per 20 tokens, as the random datasets of the benchmarks give: 256 tokens
// of one unbroken "word" of 1,024 characters) the text cannot be spoken.
const TokensPerWordNotSpeech = 20

// NotSpeech reports whether the spoken text of a turn cannot be speech:
// 20 tokens or more, and fewer than one word per TokensPerWordNotSpeech
// tokens. A word begins after white space; each Han, Hiragana or Katakana
// character counts as one, as those scripts put no spaces between words.
func NotSpeech(t *Turn) bool {
	tokens, words, inWord := 0, 0, false
	for _, c := range t.Chunks {
		if c.Reasoning || c.Textless {
			continue
		}
		tokens += c.TokenCount()
		for i := 0; i < len(c.Text); {
			r, n := rune(c.Text[i]), 1
			if r >= utf8.RuneSelf {
				r, n = utf8.DecodeRuneInString(c.Text[i:])
			}
			i += n
			switch {
			case unicode.IsSpace(r):
				inWord = false
			case r >= utf8.RuneSelf && unicode.In(r, unicode.Han, unicode.Hiragana, unicode.Katakana):
				words++
				inWord = false
			case !inWord:
				words++
				inWord = true
			}
		}
	}
	return tokens >= TokensPerWordNotSpeech && words*TokensPerWordNotSpeech < tokens
}

// SpeakPerToken makes every spoken chunk of t text-less, so that each of
// its tokens is spoken for the voice's per-token time instead of its text
// being read as words.
func SpeakPerToken(t *Turn) {
	for i := range t.Chunks {
		if c := &t.Chunks[i]; !c.Reasoning && !c.Textless {
			c.Text, c.Textless = "", true
		}
	}
}
