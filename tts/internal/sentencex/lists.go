package sentencex

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// listFamily is a kind of list marker. A paragraph's list items are the
// markers of one family only.
type listFamily uint8

const (
	bulletOrParenFamily listFamily = iota // • ◦ ▪ ... and (1) (a) (ii): one at a line start is a list
	dashFamily                            // * + - (at line starts only)
	numberFamily                          // 1. 1) 1.)
	letterParenFamily                     // a) A) a.)
	letterDotFamily                       // a. (lower case)
	romanFamily                           // ii. iii) ii.)
	familyCount
)

// listBullets are the bullet characters that make a list on their own.
const listBullets = "•◦▪▫■□●○⁃⁌⁍◆◇★☆➤➢➣▶▸►"

// listCandidate is a marker that may start a list item.
type listCandidate struct {
	pos       int
	family    listFamily
	first     byte
	lineStart bool
}

// minListGap is the least distance in bytes between two markers of a
// family for the second to count ("e. e. cummings" is no list).
const minListGap = 4

// listItemStarts returns where a paragraph's list items start, in order.
func listItemStarts(text string) []int {
	var cands []listCandidate
	lineStart := 0
	for lineStart < len(text) {
		end := len(text)
		if i := strings.IndexByte(text[lineStart:], '\n'); i >= 0 {
			end = lineStart + i + 1
		}
		cands = scanListLine(text, lineStart, end, cands)
		lineStart = end
	}
	if len(cands) == 0 {
		return nil
	}
	slices.SortStableFunc(cands, func(a, b listCandidate) int {
		if a.pos != b.pos {
			return a.pos - b.pos
		}
		switch {
		case a.lineStart == b.lineStart:
			return 0
		case a.lineStart:
			return -1
		}
		return 1
	})
	cands = slices.CompactFunc(cands, func(a, b listCandidate) bool { return a.pos == b.pos })
	// single roman-looking letters count as roman numerals once a longer
	// numeral is seen (i.) ... ii.))
	if slices.ContainsFunc(cands, func(c listCandidate) bool { return c.family == romanFamily }) {
		for i := range cands {
			if c := &cands[i]; (c.family == letterDotFamily || c.family == letterParenFamily) && isRomanByte(c.first) {
				c.family = romanFamily
			}
		}
	}
	var last [familyCount]int
	for i := range last {
		last[i] = -1
	}
	kept := cands[:0]
	for _, c := range cands {
		if l := last[c.family]; l >= 0 && c.pos-l < minListGap {
			continue
		}
		last[c.family] = c.pos
		kept = append(kept, c)
	}
	winner, ok := listWinner(kept)
	if !ok {
		return nil
	}
	var out []int
	for _, c := range kept {
		if c.family == winner {
			out = append(out, c.pos)
		}
	}
	return out
}

// listWinner picks the paragraph's list family: bullets and parenthesised
// markers on one line start or twice anywhere, else the family with the
// most markers (two at least), the earliest first on a tie.
func listWinner(cands []listCandidate) (listFamily, bool) {
	var count [familyCount]int
	var first [familyCount]int
	for i := range first {
		first[i] = -1
	}
	atLineStart := false
	for _, c := range cands {
		count[c.family]++
		if first[c.family] < 0 {
			first[c.family] = c.pos
		}
		if c.family == bulletOrParenFamily && c.lineStart {
			atLineStart = true
		}
	}
	if atLineStart || count[bulletOrParenFamily] >= 2 {
		return bulletOrParenFamily, true
	}
	best, found := listFamily(0), false
	for f := dashFamily; f < familyCount; f++ {
		if count[f] < 2 {
			continue
		}
		if !found || count[f] > count[best] || count[f] == count[best] && first[f] < first[best] {
			best, found = f, true
		}
	}
	return best, found
}

// scanListLine adds the markers of the line text[start:end] (its newline
// included): one at its start, and, where the line has ) or a bullet, one
// after each run of spaces or tabs.
func scanListLine(text string, start, end int, out []listCandidate) []listCandidate {
	content := skipBlanks(text, start, end)
	if c, ok := lineMarker(text[content:end]); ok {
		c.pos, c.lineStart = start, true
		out = append(out, c)
	}
	rest := text[content:end]
	if !strings.ContainsRune(rest, ')') && strings.IndexByte(rest, 0xe2) < 0 {
		return out
	}
	cur := content
	for {
		i := strings.IndexAny(text[cur:end], " \t")
		if i < 0 {
			break
		}
		pos := skipBlanks(text, cur+i, end)
		if pos >= end || text[pos] == '\n' || text[pos] == '\r' {
			break
		}
		if c, ok := inlineMarker(text[pos:end]); ok {
			c.pos = pos
			out = append(out, c)
		}
		cur = pos
	}
	return out
}

func skipBlanks(text string, i, end int) int {
	for i < end && isBlank(text[i]) {
		i++
	}
	return i
}

// lineMarker classifies a marker at the start of a line: one followed by
// blanks and some content.
func lineMarker(s string) (listCandidate, bool) {
	if s == "" {
		return listCandidate{}, false
	}
	f, n, ok := consumeMarker(s)
	if !ok {
		return listCandidate{}, false
	}
	if _, ok := contentAfter(s[n:]); !ok {
		return listCandidate{}, false
	}
	return listCandidate{family: f, first: s[0]}, true
}

// inlineMarker classifies a marker after blanks inside a line: not one
// ending in a bare period, not dashes, and not before a lower-case letter.
func inlineMarker(s string) (listCandidate, bool) {
	if s == "" {
		return listCandidate{}, false
	}
	f, n, ok := consumeMarker(s)
	if !ok {
		return listCandidate{}, false
	}
	if s[n-1] == '.' && (f == numberFamily || f == letterDotFamily || f == romanFamily) {
		return listCandidate{}, false
	}
	r, ok := contentAfter(s[n:])
	if !ok || unicode.IsLower(r) || unicode.Is(unicode.Other_Lowercase, r) || f == dashFamily {
		return listCandidate{}, false
	}
	return listCandidate{family: f, first: s[0]}, true
}

// contentAfter returns the first character after the blanks that follow a
// marker: there must be blanks, and then content, not a line's end.
func contentAfter(s string) (rune, bool) {
	n := skipBlanks(s, 0, len(s))
	if n == 0 || n == len(s) {
		return 0, false
	}
	r, _ := utf8.DecodeRuneInString(s[n:])
	return r, r != '\n' && r != '\r'
}

// consumeMarker returns the family and length of the marker that s starts
// with, by priority: bullets and parenthesised markers, roman numerals of
// two letters or more, numbers, dashes, a letter with ), a lower-case
// letter with a period.
func consumeMarker(s string) (listFamily, int, bool) {
	if r, size := utf8.DecodeRuneInString(s); s[0] == 0xe2 && strings.ContainsRune(listBullets, r) {
		return bulletOrParenFamily, size, true
	}
	if n, ok := parenMarker(s); ok {
		return bulletOrParenFamily, n, true
	}
	if n := countPrefix(s, isRomanByte); n >= 2 {
		if c, ok := closerLen(s, n); ok {
			return romanFamily, n + c, true
		}
	}
	if n := countPrefix(s, isASCIIDigit); n > 0 {
		if c, ok := closerLen(s, n); ok {
			return numberFamily, n + c, true
		}
	}
	switch s[0] {
	case '*', '+', '-':
		return dashFamily, 1, true
	}
	if len(s) >= 2 && isASCIILetter(s[0]) {
		switch {
		case s[1] == ')':
			return letterParenFamily, 2, true
		case s[1] == '.' && len(s) > 2 && s[2] == ')':
			return letterParenFamily, 3, true
		}
	}
	if len(s) >= 2 && s[0] >= 'a' && s[0] <= 'z' && s[1] == '.' {
		return letterDotFamily, 2, true
	}
	return 0, 0, false
}

// parenMarker matches (1), (12), (a), (ii): one or two digits, one letter,
// or roman letters, in parentheses.
func parenMarker(s string) (int, bool) {
	if s[0] != '(' {
		return 0, false
	}
	closing := strings.IndexByte(s[1:], ')')
	if closing < 0 {
		return 0, false
	}
	inner := s[1 : 1+closing]
	digits := len(inner) >= 1 && len(inner) <= 2 && countPrefix(inner, isASCIIDigit) == len(inner)
	letter := len(inner) == 1 && isASCIILetter(inner[0])
	roman := inner != "" && countPrefix(inner, isRomanByte) == len(inner)
	return closing + 2, digits || letter || roman
}

// closerLen matches a marker's closer at s[i:]: ".)", "." or ")".
func closerLen(s string, i int) (int, bool) {
	if i >= len(s) {
		return 0, false
	}
	switch s[i] {
	case '.':
		if i+1 < len(s) && s[i+1] == ')' {
			return 2, true
		}
		return 1, true
	case ')':
		return 1, true
	}
	return 0, false
}

func countPrefix(s string, f func(byte) bool) int {
	n := 0
	for n < len(s) && f(s[n]) {
		n++
	}
	return n
}

func isASCIILetter(c byte) bool { return c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z' }

func isRomanByte(c byte) bool {
	switch c | 0x20 {
	case 'i', 'v', 'x', 'l', 'c', 'd', 'm':
		return true
	}
	return false
}
