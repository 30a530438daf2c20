package sentencex

import (
	"slices"
	"strings"
	"unicode"
	"unicode/utf8"
)

// bigText is the length over which sentencex cuts a text at paragraph
// separators into pieces of at most this many bytes, each split alone.
const bigText = 10 * 1024

// Segment returns the pieces sentencex's segment function cuts English
// text into: its sentences, each with the white space after it, and the
// paragraph separators (a newline, any carriage returns, a newline) as
// pieces of their own, so that they join to the text. A text over 10 KiB
// is cut at paragraph separators into parts of at most that many bytes
// (a paragraph longer stays whole), each split alone, and the separators
// between the parts are left out, as sentencex does.
func Segment(text string) []string {
	if len(text) <= bigText {
		return segmentText(text, nil)
	}
	var out []string
	for _, part := range bigTextParts(text) {
		out = segmentText(part, out)
	}
	return out
}

// paragraphBreaks returns the paragraph separators of text: \n, any \r, \n.
func paragraphBreaks(text string) []span {
	var out []span
	for i := 0; i < len(text); {
		j := strings.IndexByte(text[i:], '\n')
		if j < 0 {
			break
		}
		nl := i + j
		end := nl + 1
		for end < len(text) && text[end] == '\r' {
			end++
		}
		if end < len(text) && text[end] == '\n' {
			out = append(out, span{nl, end + 1})
			i = end + 1
			continue
		}
		i = nl + 1
	}
	return out
}

// bigTextParts cuts a big text at paragraph separators into parts of at
// most bigText bytes, each of whole paragraphs and the separators between
// them.
func bigTextParts(text string) []string {
	var paras []span
	next := 0
	for _, b := range paragraphBreaks(text) {
		paras = append(paras, span{next, b.start})
		next = b.end
	}
	if next < len(text) {
		paras = append(paras, span{next, len(text)})
	}
	var out []string
	cur, have := span{}, false
	for _, p := range paras {
		if have && p.end-cur.start <= bigText {
			cur.end = p.end
			continue
		}
		if have {
			out = append(out, text[cur.start:cur.end])
		}
		cur, have = p, true
	}
	if have {
		out = append(out, text[cur.start:cur.end])
	}
	return out
}

// segmentText appends the sentences and separators of text to out.
func segmentText(text string, out []string) []string {
	var ranges []skipRange
	start := 0
	for _, sep := range paragraphBreaks(text) {
		out, ranges = appendSentences(out, text[start:sep.start], ranges)
		out = append(out, text[sep.start:sep.end])
		start = sep.end
	}
	out, _ = appendSentences(out, text[start:], ranges)
	return out
}

// appendSentences appends the sentences of a paragraph to out.
func appendSentences(out []string, p string, ranges []skipRange) ([]string, []skipRange) {
	b, ranges := sentenceBreaks(p, ranges)
	for i := 1; i < len(b); i++ {
		if b[i] > b[i-1] {
			out = append(out, p[b[i-1]:b[i]])
		}
	}
	return out, ranges
}

// sentenceBreaks returns where the sentences of a paragraph start, from 0,
// and its length: at each run of sentence punctuation that ends a
// sentence, after the white space that follows it, except inside a
// quotation, a parenthesis, an e-mail address or a list item (where a
// sentence ends only at punctuation right before a quotation's closer, and
// then after the closer), and past an orphan closing quotation mark; and
// where each list item starts. ranges is scratch space.
func sentenceBreaks(p string, ranges []skipRange) ([]int, []skipRange) {
	b := []int{0}
	runs := terminatorRuns(p)
	ranges = skippableRanges(p, ranges)
	items := listItemStarts(p)
	for i, s := range items {
		end := len(p)
		if i+1 < len(items) {
			end = items[i+1]
		}
		ranges = append(ranges, skipRange{start: s, end: end, kind: listItemRange})
	}
	var orphans orphanClosers
	for _, run := range runs {
		boundary, ok := findBoundary(p, run.start, run.end)
		if !ok {
			continue
		}
		at, ok := 0, true
		if r := containingRange(p, boundary, run, ranges); r != nil {
			at, ok = innerTerminatorEnd(p, r, boundary)
		} else {
			at = pastOrphanCloser(p, boundary, ranges, &orphans)
		}
		if ok && at > b[len(b)-1] {
			b = append(b, at)
		}
	}
	if len(items) > 0 {
		for _, s := range items {
			if s > 0 {
				b = append(b, s)
			}
		}
		slices.Sort(b)
		b = slices.Compact(b)
	}
	if b[len(b)-1] != len(p) {
		b = append(b, len(p))
	}
	return b, ranges
}

// containingRange returns the first range that has boundary strictly
// inside and is not a symmetric quotation paired across a sentence end by
// mistake, or nil.
func containingRange(p string, boundary int, run span, ranges []skipRange) *skipRange {
	for i := range ranges {
		r := &ranges[i]
		if !r.contains(boundary) {
			continue
		}
		switch r.mispair {
		case certain:
			continue
		case possible:
			if strongBreak(p, run.start, run.end) {
				continue
			}
		}
		return r
	}
	return nil
}

// strongBreak: a single period after a word that is no initial nor
// abbreviation, before a capital, where the word is a symmetric closing
// mark or the next a sentence starter.
func strongBreak(p string, start, end int) bool {
	if end-start != 1 || p[start] != '.' {
		return false
	}
	next := trimLeftSpace(nextWords(p, start+1))
	if next == "" || !isASCIIUpper(next[0]) {
		return false
	}
	head := p[:start]
	lw := lastWord(head)
	if lw == "" || len(lw) == 1 && isASCIIUpper(lw[0]) {
		return false
	}
	if isAbbreviation(lw) || multiDotAbbreviation(head, len(lw)) {
		return false
	}
	return isSymmetricCloser(lw) || nextIsStarter(next)
}

// findBoundary returns where a sentence ends for the run of sentence
// punctuation text[start:end], or false where it does not end there: after
// the run, numbered references ([1][2]) after it and the white space after
// it.
func findBoundary(text string, start, end int) (int, bool) {
	head, run, next := text[:start], text[start:end], nextWords(text, end)
	if strings.IndexByte(next, '[') >= 0 {
		if n, ok := numberedReferences(next); ok {
			return end + n, true
		}
	}
	if runContinues(run, head, next) {
		return 0, false
	}
	lw := lastWord(head)
	if run == "." && (codeLikeNumber(head, next) || periodSuppressed(head, lw, next)) {
		return 0, false
	}
	if lw == "Yahoo" || lw == "Yum" { // "Yahoo!" and "Yum!" are names
		return 0, false
	}
	return end + len(next) - len(trimLeftSpace(next)), true
}

// numberedReferences returns the length of the references ([1] [23])
// that s starts with, white space before each, or false.
func numberedReferences(s string) (int, bool) {
	n := 0
	for {
		i := skipSpace(s, n)
		if i >= len(s) || s[i] != '[' {
			break
		}
		j := i + 1
		for j < len(s) {
			r, size := utf8.DecodeRuneInString(s[j:])
			if !unicode.Is(unicode.Nd, r) {
				break
			}
			j += size
		}
		if j == i+1 || j >= len(s) || s[j] != ']' {
			break
		}
		n = j + 1
	}
	return n, n > 0
}

// runContinues: the sentence goes on after the run: after a run of two or
// more, a lower-case word or digit after white space (or English "I"), or
// right after it; after one mark, a lower-case letter or digit or a comma
// (a symmetric quotation mark before it passed over), or, after a ! or ?
// that follows a blank, a lower-case letter or digit after any non-word
// characters ("Father Came Too ! is a film").
func runContinues(run, head, next string) bool {
	if utf8.RuneCountInString(run) >= 2 {
		if ellipsisContinues(next) {
			return true
		}
		r, ok := lastRune(head)
		return ok && !isSpace(r) && startsLowerOrDigit(next)
	}
	if continuesInNextWord(next) {
		return true
	}
	return (run == "!" || run == "?") && head != "" && isBlank(head[len(head)-1]) && continuesAfterNonWord(next)
}

// ellipsisContinues: white space, then a lower-case letter or digit, or
// the word I.
func ellipsisContinues(next string) bool {
	t := trimLeftSpace(next)
	if len(t) == len(next) {
		return false
	}
	if startsLowerOrDigit(t) {
		return true
	}
	if t == "" || t[0] != 'I' {
		return false
	}
	r, ok := firstRune(t[1:])
	return !ok || isSpace(r) || r == '\'' || r == '’'
}

// continuesInNextWord: a lower-case letter or digit, or a comma (a
// symmetric quotation mark before it passed over).
func continuesInNextWord(s string) bool {
	return startsLowerOrDigit(s) || strings.HasPrefix(peelQuote(s), ",")
}

// codeLikeNumber: a digit, the period, then a word with a digit (the
// chess move 7.Bg5).
func codeLikeNumber(head, next string) bool {
	if head == "" || !isASCIIDigit(head[len(head)-1]) {
		return false
	}
	r, ok := firstRune(next)
	return ok && isAlphabetic(r) && strings.ContainsAny(next, "0123456789")
}

// periodSuppressed: the period after the last word is no sentence end: an
// initial, an abbreviation or a trailing marker, unless the marker's rule
// or a sentence starter after it says otherwise.
func periodSuppressed(head, lw, next string) bool {
	suppress := isNameInitial(head, lw, next) || isAbbreviation(lw)
	mm, hasMarker := trailingMarker(head)
	if !suppress && !hasMarker {
		return false
	}
	starter := nextIsStarter(next)
	if hasMarker && markerBreaks(mm, next, starter) {
		return false
	}
	return !overridesSuppression(head, lw, starter)
}

func isAbbreviation(w string) bool { return w != "" && abbreviations.hasFolded(w) }

// multiDotAbbreviation: the last word with its inner periods (U.S, w.e.f),
// longer than the word after its last period, is an abbreviation.
func multiDotAbbreviation(head string, tailLen int) bool {
	w := lastWordWhole(head)
	return len(w) > tailLen && abbreviations.hasFolded(w)
}

// isNameInitial: the last word is one ASCII capital and the word before it
// is capitalised (Albert I.), or the next is an initial too (J. R. R.).
func isNameInitial(head, lw, next string) bool {
	if len(lw) != 1 || !isASCIIUpper(lw[0]) {
		return false
	}
	prefix := strings.TrimRightFunc(head[:len(head)-len(lw)], func(r rune) bool { return isSpace(r) || r == '.' || r == '/' })
	if w := lastWord(prefix); w != "" && isASCIIUpper(w[0]) {
		return true
	}
	t := trimLeftSpace(next)
	if len(t) < 2 || !isASCIIUpper(t[0]) || t[1] != '.' {
		return false
	}
	r, ok := firstRune(t[2:])
	return !ok || isSpace(r)
}

// nextIsStarter: the next word (up to white space, a comma or sentence
// punctuation) is a sentence starter.
func nextIsStarter(next string) bool {
	t := trimLeftSpace(next)
	end := strings.IndexFunc(t, func(r rune) bool { return isSpace(r) || r == ',' || isTerminator(r) })
	if end < 0 {
		end = len(t)
	}
	return end > 0 && starters.has(t[:end])
}

// overridesSuppression: before a sentence starter, a capitalised last
// word, a multi-period abbreviation or a longer abbreviation in lower case
// (etc., man.) ends the sentence after all.
func overridesSuppression(head, lw string, starter bool) bool {
	if !starter {
		return false
	}
	if lw != "" && isASCIIUpper(lw[0]) || multiDotAbbreviation(head, len(lw)) {
		return true
	}
	return utf8.RuneCountInString(lw) >= 2 && abbreviations.has(lw)
}
