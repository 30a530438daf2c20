package sentencex

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// markerMatch is a trailing marker found at the end of the text before a
// period, and the text before the marker.
type markerMatch struct {
	prefix string
	m      *marker
}

// trailingMarker returns the first marker (in the list's order) that head,
// white space at its end left out, ends with, after white space, a digit
// or nothing (so "clause 5.a.m" has none); a digit-only marker needs a
// digit before it.
func trailingMarker(head string) (markerMatch, bool) {
	t := trimRightSpace(head)
	if len(t) < 2 || !markerEndings[markerEnding(t)] {
		return markerMatch{}, false
	}
	for i := range markers {
		m := &markers[i]
		if len(t) < len(m.suffix) {
			continue
		}
		tail := t[len(t)-len(m.suffix):]
		if m.foldCase && !strings.EqualFold(asciiOnly(tail), m.suffix) || !m.foldCase && tail != m.suffix {
			continue
		}
		prefix := t[:len(t)-len(m.suffix)]
		var ok bool
		if m.digitOnly {
			r, has := lastRune(trimRightSpace(prefix))
			ok = has && r >= '0' && r <= '9'
		} else {
			r, has := lastRune(prefix)
			ok = !has || isSpace(r) || r >= '0' && r <= '9'
		}
		if ok {
			return markerMatch{prefix: prefix, m: m}, true
		}
	}
	return markerMatch{}, false
}

// markerEndings holds the last two bytes of every marker, ASCII case
// folded: a text that ends otherwise ends in none.
var markerEndings = func() map[[2]byte]bool {
	out := map[[2]byte]bool{}
	for _, m := range markers {
		out[markerEnding(m.suffix)] = true
	}
	return out
}()

// markerEnding returns the last two bytes of s (two at least), ASCII case folded.
func markerEnding(s string) [2]byte {
	fold := func(c byte) byte {
		if isASCIIUpper(c) {
			return c + 'a' - 'A'
		}
		return c
	}
	return [2]byte{fold(s[len(s)-2]), fold(s[len(s)-1])}
}

// asciiOnly returns s if it is ASCII, else a string no ASCII suffix equals
// ignoring case (strings.EqualFold folds beyond ASCII; sentencex does not).
func asciiOnly(s string) string {
	for i := 0; i < len(s); i++ {
		if s[i] >= 0x80 {
			return "\x00"
		}
	}
	return s
}

// markerBreaks decides whether the word after a marker starts a new
// sentence: not an initial ("P."), nor a lower-case word or punctuation; a
// digit as the marker says; a capitalised word if it is a sentence starter,
// or where the marker breaks before capitals and the text before it is
// neither a capitalised word nor an adverbial lead-in ("In the evening at
// 7 p.m. Tom ...").
func markerBreaks(mm markerMatch, next string, nextIsStarter bool) bool {
	t := trimLeftSpace(next)
	if len(t) >= 2 && isASCIIUpper(t[0]) && t[1] == '.' {
		return false
	}
	r, ok := firstRune(t)
	switch {
	case !ok:
		return false
	case r >= '0' && r <= '9':
		return mm.m.digitBreaks
	case isUpper(r):
		return nextIsStarter || mm.m.upperBreaks && !capitalisedBefore(mm.prefix) && !frontingOnly(mm.prefix)
	}
	return false
}

// isUpper is Unicode's Uppercase property (Rust's char::is_uppercase).
func isUpper(r rune) bool { return unicode.IsUpper(r) || unicode.Is(unicode.Other_Uppercase, r) }

// capitalisedBefore: the word before the marker (digits, colons and white
// space at its end left out) starts with an ASCII capital.
func capitalisedBefore(prefix string) bool {
	t := strings.TrimRightFunc(prefix, func(r rune) bool { return r >= '0' && r <= '9' || r == ':' || isSpace(r) })
	if i := strings.LastIndexFunc(t, isSpace); i >= 0 {
		_, size := utf8.DecodeRuneInString(t[i:])
		t = t[i+size:]
	}
	return t != "" && isASCIIUpper(t[0])
}

// quoteOpenerByte: a byte that some quotation opener starts with.
func quoteOpenerByte(c byte) bool {
	switch c {
	case '`', '\'', '"', 0xc2, 0xe2, 0xe3:
		return true
	}
	return false
}

// frontingOnly: the text before a marker is an adverbial lead-in only (On
// Jan. 5, at 6 a.m.): split at white space, commas, semicolons and dashes,
// each word (its periods at the end left out) is digits and colons, or
// capitalised, or a lead-in word, or an abbreviation; quotations are
// passed over.
func frontingOnly(prefix string) bool {
	plain := true
	for i := 0; i < len(prefix); i++ {
		if quoteOpenerByte(prefix[i]) {
			plain = false
			break
		}
	}
	if plain {
		return frontingWords(prefix)
	}
	cur, ok := 0, true
	quoteMatches(prefix, func(s span, _ *quotePair) {
		if ok && !frontingWords(prefix[cur:s.start]) {
			ok = false
		}
		cur = s.end
	})
	return ok && frontingWords(prefix[cur:])
}

func frontingWords(seg string) bool {
	for tok := range strings.FieldsFuncSeq(seg, func(r rune) bool {
		return isSpace(r) || r == ',' || r == ';' || r == '—' || r == '–'
	}) {
		bare := strings.TrimRight(tok, ".")
		if bare == "" || strings.Trim(bare, "0123456789:") == "" {
			continue
		}
		if r, _ := firstRune(bare); isUpper(r) {
			continue
		}
		if fronting.hasFolded(bare) || abbreviations.hasFolded(bare) {
			continue
		}
		return false
	}
	return true
}
