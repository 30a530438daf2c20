package sentencex

import (
	_ "embed"
	"strings"
	"unicode"
	"unicode/utf8"
)

var (
	//go:embed english/abbreviations.txt
	abbreviationsTxt string
	//go:embed english/starters.txt
	startersTxt string
	//go:embed english/fronting.txt
	frontingTxt string
	//go:embed english/markers.txt
	markersTxt string
)

// wordLines returns the words of an embedded list, one a line, comment
// lines (#) and blank lines left out.
func wordLines(src string) []string {
	var out []string
	for line := range strings.Lines(src) {
		line = strings.TrimSpace(line)
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		out = append(out, line)
	}
	return out
}

// wordSet is a set of words.
type wordSet map[string]struct{}

func newWordSet(words []string, fold bool) wordSet {
	s := make(wordSet, len(words))
	for _, w := range words {
		if fold {
			w = lower(w)
		}
		s[w] = struct{}{}
	}
	return s
}

func (s wordSet) has(w string) bool { _, ok := s[w]; return ok }

// hasFolded looks a word up in a set of lower-case words, lower-casing it
// first (ASCII only for ASCII words, as sentencex does).
func (s wordSet) hasFolded(w string) bool {
	if !hasUpper(w) {
		return s.has(w)
	}
	return s.has(lower(w))
}

// lower is Rust's str::to_lowercase as far as the word lists can tell:
// Unicode's lower case, with İ (U+0130) becoming i and a combining dot.
func lower(w string) string {
	return strings.ToLower(strings.ReplaceAll(w, "İ", "i\u0307"))
}

// hasUpper reports whether w has an upper-case letter, or any non-ASCII
// byte (which is then lower-cased by Unicode's rules).
func hasUpper(w string) bool {
	for i := 0; i < len(w); i++ {
		if c := w[i]; c >= utf8.RuneSelf || c >= 'A' && c <= 'Z' {
			return true
		}
	}
	return false
}

// marker is a word that usually trails a number or a name (a.m., Ph.D.,
// ft.), whose period ends a sentence only where the next word says so.
type marker struct {
	suffix      string
	foldCase    bool // ASCII case ignored
	digitOnly   bool // a digit must come before it (in., gal.)
	digitBreaks bool // a digit after it starts a new sentence
	upperBreaks bool // an upper-case word after it starts a new sentence
}

func parseMarkers(src string) []marker {
	var out []marker
	for _, line := range wordLines(src) {
		f := strings.Split(line, "|")
		for i := range f {
			f[i] = strings.TrimSpace(f[i])
		}
		m := marker{suffix: f[0], foldCase: f[1] == "i", digitBreaks: f[2] == "break", upperBreaks: true}
		if len(f) > 3 {
			m.upperBreaks = f[3] == "break"
		}
		if len(f) > 4 {
			m.digitOnly = f[4] == "digit-only"
		}
		out = append(out, m)
	}
	return out
}

var (
	abbreviations = newWordSet(wordLines(abbreviationsTxt), true)
	starters      = newWordSet(wordLines(startersTxt), false)
	fronting      = newWordSet(wordLines(frontingTxt), true)
	markers       = parseMarkers(markersTxt)
)

// isWordRune is \w of a Unicode regular expression in Rust's regex crate:
// alphabetic, a mark, a decimal digit, connector punctuation or a joiner.
func isWordRune(r rune) bool {
	if r < utf8.RuneSelf {
		return r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9' || r == '_'
	}
	return isAlphabetic(r) || unicode.IsMark(r) || unicode.Is(unicode.Nd, r) ||
		unicode.Is(unicode.Pc, r) || r == 0x200c || r == 0x200d
}

// isAlphabetic is Unicode's Alphabetic property (Rust's char::is_alphabetic).
func isAlphabetic(r rune) bool {
	return unicode.IsLetter(r) || unicode.Is(unicode.Nl, r) || unicode.Is(unicode.Other_Alphabetic, r)
}

// isAlphanumeric is Rust's char::is_alphanumeric.
func isAlphanumeric(r rune) bool { return isAlphabetic(r) || unicode.IsNumber(r) }

// isSpace is Unicode's White_Space (Rust's char::is_whitespace and \s).
func isSpace(r rune) bool { return unicode.IsSpace(r) }

func isBlank(c byte) bool { return c == ' ' || c == '\t' }

func isASCIIUpper(c byte) bool { return c >= 'A' && c <= 'Z' }

func isASCIIDigit(c byte) bool { return c >= '0' && c <= '9' }

// lastRune returns the last character of s, or false for "".
func lastRune(s string) (rune, bool) {
	if s == "" {
		return 0, false
	}
	r, _ := utf8.DecodeLastRuneInString(s)
	return r, true
}

// firstRune returns the first character of s, or false for "".
func firstRune(s string) (rune, bool) {
	if s == "" {
		return 0, false
	}
	r, _ := utf8.DecodeRuneInString(s)
	return r, true
}

func trimSpace(s string) string      { return strings.TrimFunc(s, isSpace) }
func trimLeftSpace(s string) string  { return strings.TrimLeftFunc(s, isSpace) }
func trimRightSpace(s string) string { return strings.TrimRightFunc(s, isSpace) }

// lastWord is the last word of text: white space at its end left out, the
// text after its last white space, period or slash.
func lastWord(text string) string {
	text = trimRightSpace(text)
	i := strings.LastIndexFunc(text, func(r rune) bool { return isSpace(r) || r == '.' || r == '/' })
	if i < 0 {
		return text
	}
	_, size := utf8.DecodeRuneInString(text[i:])
	return text[i+size:]
}

// lastWordWhole is lastWord with its periods kept (U.S, w.e.f).
func lastWordWhole(text string) string {
	text = trimRightSpace(text)
	i := strings.LastIndexFunc(text, func(r rune) bool { return isSpace(r) || r == '/' })
	if i < 0 {
		return text
	}
	_, size := utf8.DecodeRuneInString(text[i:])
	return text[i+size:]
}

// nextWords is the text after a terminator that the rules look at: up to
// 30 bytes from start, to the end of the character there.
func nextWords(text string, start int) string {
	if start >= len(text) {
		return ""
	}
	end := min(start+30, len(text))
	for end < len(text) && !utf8.RuneStart(text[end]) {
		end++
	}
	return text[start:end]
}

// startsLowerOrDigit: the text starts with an ASCII lower-case letter or digit.
func startsLowerOrDigit(s string) bool {
	return s != "" && (s[0] >= 'a' && s[0] <= 'z' || isASCIIDigit(s[0]))
}

// continuesAfterNonWord: after any characters that are not word
// characters, an ASCII lower-case letter or digit (^\W*[0-9a-z]).
func continuesAfterNonWord(s string) bool {
	for _, r := range s {
		if isWordRune(r) {
			return r >= 'a' && r <= 'z' || r >= '0' && r <= '9'
		}
	}
	return false
}
