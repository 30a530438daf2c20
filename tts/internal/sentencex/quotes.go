package sentencex

import (
	"cmp"
	"regexp"
	"slices"
	"strings"
	"unicode/utf8"
)

// quotePair is a pair of quotation marks. Ambiguous ones (' and `, which
// are also apostrophes and code ticks) pair only where they stand apart
// from the words around them.
type quotePair struct {
	open, close string
	ambiguous   bool
}

// symmetric: the same mark opens and closes.
func (p *quotePair) symmetric() bool { return p.open == p.close }

// quotePairs in sentencex's order of preference: at a position, the first
// pair that matches wins.
var quotePairs = quotePairsArray[:]

var quotePairsArray = [...]quotePair{
	{"``", "''", false},
	{"``", "``", false},
	{"''", "''", false},
	{"`", "'", true},
	{"`", "`", true},
	{"'", "'", true},
	{`"`, `"`, false},
	{"«", "»", false},
	{"‘", "’", false},
	{"‚", "‚", false},
	{"“", "”", false},
	{"‛", "‛", false},
	{"„", "“", false},
	{"»", "«", false},
	{"‟", "‟", false},
	{"‹", "›", false},
	{"《", "》", false},
	{"「", "」", false},
}

// closersByLength are the closing marks, longest (in bytes) first.
var closersByLength = func() []string {
	var out []string
	for _, p := range quotePairs {
		if !slices.Contains(out, p.close) {
			out = append(out, p.close)
		}
	}
	slices.SortStableFunc(out, func(a, b string) int { return cmp.Compare(len(b), len(a)) })
	return out
}()

// isSymmetricCloser: s closes a pair that it also opens.
func isSymmetricCloser(s string) bool {
	for i := range quotePairs {
		if p := &quotePairs[i]; p.symmetric() && p.close == s {
			return true
		}
	}
	return false
}

// noCloser remembers, per pair, from where on a text has no closer of it
// that the pair could end at (a search that found none there finds none
// later), so that many openers without a closer cost one search each.
type noCloser [len(quotePairsArray)]int

func newNoCloser(n int) *noCloser {
	var nc noCloser
	for i := range nc {
		nc[i] = n + 1
	}
	return &nc
}

// quoteMatch finds the quotation sentencex's quote pattern matches first
// in text at or after from: the leftmost start, and there the first pair
// (in quotePairs' order, then the line-anchored forms of the ambiguous
// ones) that matches. It returns the match and its pair, or false.
func quoteMatch(text string, from int, nc *noCloser) (span, *quotePair, bool) {
	for i := from; i < len(text); {
		for k := range quotePairs {
			if end, ok := quoteAt(text, i, &quotePairs[k], &nc[k]); ok {
				return span{i, end}, &quotePairs[k], true
			}
		}
		for k := range quotePairs {
			if p := &quotePairs[k]; p.ambiguous {
				if end, ok := quoteLineAt(text, i, p); ok {
					return span{i, end}, p, true
				}
			}
		}
		_, size := utf8.DecodeRuneInString(text[i:])
		i += size
	}
	return span{}, nil, false
}

// quoteAt matches pair p at i: its opener, the shortest text, its closer.
// An ambiguous opener must follow a non-word character (or the start) and
// be followed by a word character, and its closer must follow a character
// that is neither white space nor the closer, and be followed by a
// non-word character (or the end).
func quoteAt(text string, i int, p *quotePair, none *int) (int, bool) {
	if !strings.HasPrefix(text[i:], p.open) {
		return 0, false
	}
	from := i + len(p.open)
	if from >= *none {
		return 0, false
	}
	if !p.ambiguous {
		j := strings.Index(text[from:], p.close)
		if j < 0 {
			*none = from
			return 0, false
		}
		return from + j + len(p.close), true
	}
	if r, ok := lastRune(text[:i]); ok && isWordRune(r) {
		return 0, false
	}
	if r, ok := firstRune(text[from:]); !ok || !isWordRune(r) {
		return 0, false
	}
	_, size := utf8.DecodeRuneInString(text[from:])
	if from+size >= *none {
		return 0, false
	}
	for k := from + size; k <= len(text); {
		prev, _ := utf8.DecodeLastRuneInString(text[:k])
		if !isSpace(prev) && !strings.ContainsRune(p.close, prev) && strings.HasPrefix(text[k:], p.close) {
			end := k + len(p.close)
			if r, ok := firstRune(text[end:]); !ok || !isWordRune(r) {
				return end, true
			}
		}
		if k == len(text) {
			break
		}
		_, size := utf8.DecodeRuneInString(text[k:])
		k += size
	}
	*none = from + size
	return 0, false
}

// quoteLineAt matches an ambiguous pair p as a whole line: its opener at
// the start of a line, at least one character, its closer at the line's
// end.
func quoteLineAt(text string, i int, p *quotePair) (int, bool) {
	if i > 0 && text[i-1] != '\n' || !strings.HasPrefix(text[i:], p.open) {
		return 0, false
	}
	from := i + len(p.open)
	if from >= len(text) || text[from] == '\n' {
		return 0, false
	}
	_, size := utf8.DecodeRuneInString(text[from:])
	for k := from + size; k < len(text) && text[k-1] != '\n'; {
		if strings.HasPrefix(text[k:], p.close) {
			end := k + len(p.close)
			if end == len(text) || text[end] == '\n' {
				return end, true
			}
		}
		if text[k] == '\n' {
			break
		}
		_, size := utf8.DecodeRuneInString(text[k:])
		k += size
	}
	return 0, false
}

// quoteMatches are all the quotations of text, as sentencex's quote
// pattern finds them one after another.
func quoteMatches(text string, f func(span, *quotePair)) {
	nc := newNoCloser(len(text))
	for from := 0; from < len(text); {
		s, p, ok := quoteMatch(text, from, nc)
		if !ok {
			return
		}
		f(s, p)
		from = s.end
	}
}

// rangeKind is what a range that sentence punctuation inside does not end
// the sentence is.
type rangeKind uint8

const (
	quoteRange rangeKind = iota
	parensRange
	emailRange
	listItemRange
)

// mispairing says whether a symmetric quotation may have been paired
// across a real sentence end.
type mispairing uint8

const (
	paired   mispairing = iota
	certain             // it crosses the edge of a parenthesis
	possible            // the paragraph has an odd number of its marks
)

// skipRange is a range of a paragraph inside which sentence punctuation
// does not end the sentence (or ends it after the range's closer).
type skipRange struct {
	start, end int
	kind       rangeKind
	pair       *quotePair // for a quotation
	mispair    mispairing
}

// contains: x lies strictly inside the range.
func (r *skipRange) contains(x int) bool { return x > r.start && x < r.end }

func (r *skipRange) isQuote() bool { return r.kind == quoteRange }

func (r *skipRange) isSymmetricQuote() bool { return r.pair != nil && r.pair.symmetric() }

// quoteRanges appends the quotations of text to out.
func quoteRanges(text string, out []skipRange) []skipRange {
	if !strings.ContainsAny(text, "'`") && strings.IndexByte(text, 0xe3) < 0 {
		return plainQuoteRanges(text, out)
	}
	quoteMatches(text, func(s span, _ *quotePair) {
		out = append(out, skipRange{start: s.start, end: s.end, kind: quoteRange, pair: pairOpening(text[s.start:])})
	})
	return spacedQuoteRanges(text, out)
}

// pairOpening returns the first pair whose opener s starts with. A
// quotation is tagged with it, not with the pair that matched it: one
// matched as “ ... “ is taken as opened by “ of “ ... ”, which is not
// symmetric.
func pairOpening(s string) *quotePair {
	for k := range quotePairs {
		if strings.HasPrefix(s, quotePairs[k].open) {
			return &quotePairs[k]
		}
	}
	return nil
}

// plainQuoteRanges finds the quotations of a text without ', ` and the
// CJK brackets: each opener to the first closer of its pair after it.
func plainQuoteRanges(text string, out []skipRange) []skipRange {
	nc := newNoCloser(len(text))
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		p := plainOpener(r)
		if p == nil {
			i += size
			continue
		}
		from := i + len(p.open)
		none := &nc[pairIndex(p)]
		j := -1
		if from < *none {
			if j = strings.Index(text[from:], p.close); j < 0 {
				*none = from
			}
		}
		if j < 0 {
			i = from
			continue
		}
		out = append(out, skipRange{start: i, end: from + j + len(p.close), kind: quoteRange, pair: p})
		i = from + j + len(p.close)
	}
	return out
}

// pairIndex returns the index of p in quotePairs.
func pairIndex(p *quotePair) int {
	for k := range quotePairs {
		if &quotePairs[k] == p {
			return k
		}
	}
	return -1
}

// plainOpener returns the pair that r opens, among the pairs of one
// character without ' or ` whose opener starts with the bytes the fast
// scan looks for (", or the lead bytes 0xC2 and 0xE2), or nil.
func plainOpener(r rune) *quotePair {
	if r != '"' && r < 0x80 {
		return nil
	}
	return plainOpeners[r]
}

var plainOpeners = func() map[rune]*quotePair {
	out := map[rune]*quotePair{}
	for k := range quotePairs {
		p := &quotePairs[k]
		if strings.ContainsAny(p.open+p.close, "'`") || utf8.RuneCountInString(p.open) != 1 {
			continue
		}
		if lead := p.open[0]; lead != '"' && lead != 0xc2 && lead != 0xe2 {
			continue
		}
		if o, _ := utf8.DecodeRuneInString(p.open); out[o] == nil {
			out[o] = p
		}
	}
	return out
}()

// spacedQuoteRanges appends the pairs of ' and of ` that the pattern
// leaves alone because white space pads them ("' word '").
func spacedQuoteRanges(text string, out []skipRange) []skipRange {
	for k := range quotePairs {
		p := &quotePairs[k]
		if !p.ambiguous || !p.symmetric() || !strings.Contains(text, p.close) {
			continue
		}
		tok := p.close
		pending := -1
		for i := 0; i < len(text); i++ {
			if text[i] != tok[0] || !isQuoteCandidate(text, i, tok, out) {
				continue
			}
			if pending >= 0 && shouldPair(text, pending, i, tok, out) {
				out = append(out, skipRange{start: pending, end: i + len(tok), kind: quoteRange, pair: p})
				pending = -1
			} else {
				pending = i
			}
		}
	}
	return out
}

// inQuoteRange: idx lies in a quotation of ranges (its opener included),
// as sentencex finds out: by a binary search for the ranges that start at
// or before idx, then any quotation among them that ends after idx. The
// ranges are not always sorted by start (pairs found after the pattern's
// are appended, and list items after all), and the search then takes in
// ranges that start after idx, or leaves out ones before; this is kept.
func inQuoteRange(ranges []skipRange, idx int) bool {
	n := partitionPoint(len(ranges), func(i int) bool { return ranges[i].start <= idx })
	for i := range n {
		if r := &ranges[i]; r.isQuote() && idx < r.end {
			return true
		}
	}
	return false
}

// partitionPoint is Rust's slice::partition_point (the binary search of
// its standard library since 1.78): the index of the first element for
// which pred is false, for a slice partitioned by pred; for one that is
// not, the index this search arrives at.
func partitionPoint(n int, pred func(int) bool) int {
	if n == 0 {
		return 0
	}
	base, size := 0, n
	for size > 1 {
		half := size / 2
		if mid := base + half; pred(mid) {
			base = mid
		}
		size -= half
	}
	if pred(base) {
		return base + 1
	}
	return base
}

// neighbours returns the characters before idx and after the token there.
func neighbours(text string, idx int, tok string) (prev rune, hasPrev bool, next rune, hasNext bool) {
	prev, hasPrev = lastRune(text[:idx])
	next, hasNext = firstRune(text[idx+len(tok):])
	return
}

// isContraction: the mark at idx stands between two letters or digits (wasn't).
func isContraction(text string, idx int, tok string) bool {
	p, hp, n, hn := neighbours(text, idx, tok)
	return hp && isAlphanumeric(p) && hn && isAlphanumeric(n)
}

func isQuoteCandidate(text string, idx int, tok string, ranges []skipRange) bool {
	return !inQuoteRange(ranges, idx) && !isContraction(text, idx, tok)
}

// openerShaped: white space (or the start) before the mark, white space after it.
func openerShaped(text string, idx int, tok string) bool {
	p, hp, n, hn := neighbours(text, idx, tok)
	return (!hp || isSpace(p)) && hn && isSpace(n)
}

// mayBreakInside: a period, then spaces or tabs, then an ASCII capital.
func mayBreakInside(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] != '.' {
			continue
		}
		j := i + 1
		for j < len(s) && isBlank(s[j]) {
			j++
		}
		if j > i+1 && j < len(s) && isASCIIUpper(s[j]) {
			return true
		}
	}
	return false
}

// startsUtterance: text[from:] is spaces or tabs, then an ASCII capital.
func startsUtterance(text string, from int) bool {
	t := text[from:]
	rest := strings.TrimLeft(t, " \t")
	return len(rest) < len(t) && rest != "" && isASCIIUpper(rest[0])
}

// opensCleanSpan: the mark at idx is opener-shaped and the next candidate
// mark after it closes a span without a possible sentence end inside.
func opensCleanSpan(text string, idx int, tok string, ranges []skipRange) bool {
	if !openerShaped(text, idx, tok) {
		return false
	}
	from := idx + len(tok)
	for y := from; y < len(text); y++ {
		if strings.HasPrefix(text[y:], tok) && isQuoteCandidate(text, y, tok, ranges) {
			return !mayBreakInside(text[from:y])
		}
	}
	return false
}

// shouldPair: the marks at opener and closer pair, unless they hold two
// utterances and the closer itself opens a clean quotation further on.
func shouldPair(text string, opener, closer int, tok string, ranges []skipRange) bool {
	if !openerShaped(text, opener, tok) {
		return false
	}
	backToBack := startsUtterance(text, closer+len(tok)) && mayBreakInside(text[opener+len(tok):closer])
	return !backToBack || !opensCleanSpan(text, closer, tok, ranges)
}

// parensPattern and emailPattern are sentencex's, ASCII and free of word
// boundaries, so Go's leftmost-first matching finds what Rust's does.
var (
	parensPattern = regexp.MustCompile(`[\(（<{\[](?:[^\)\]}>）]|\\[\)\]}>）])*[\)\]}>）]`)
	emailPattern  = regexp.MustCompile(`[A-Za-z0-9._%+-]+@[A-Za-z0-9.-]+\.[A-Z|a-z]{2,7}`)
)

// skippableRanges returns the quotations, parentheses and e-mail addresses
// of a paragraph, by start, each quotation tagged with its mispairing.
func skippableRanges(text string, out []skipRange) []skipRange {
	out = quoteRanges(text, out[:0])
	if strings.ContainsAny(text, "(（<{[") {
		for _, m := range parensPattern.FindAllStringIndex(text, -1) {
			out = append(out, skipRange{start: m[0], end: m[1], kind: parensRange})
		}
	}
	if strings.IndexByte(text, '@') >= 0 {
		for _, m := range emailPattern.FindAllStringIndex(text, -1) {
			out = append(out, skipRange{start: m[0], end: m[1], kind: emailRange})
		}
	}
	slices.SortStableFunc(out, func(a, b skipRange) int { return cmp.Compare(a.start, b.start) })
	tagMispairing(text, out)
	return out
}

// tagMispairing marks each symmetric quotation that crosses the edge of a
// parenthesis as certainly, and each whose mark the paragraph holds an odd
// number of as possibly, paired across a sentence end.
func tagMispairing(text string, ranges []skipRange) {
	var parens []skipRange
	for _, r := range ranges {
		if r.kind == parensRange {
			parens = append(parens, r)
		}
	}
	for i := range ranges {
		r := &ranges[i]
		if !r.isQuote() || !r.isSymmetricQuote() {
			continue
		}
		switch {
		case crossesParens(r, parens):
			r.mispair = certain
		case strings.Count(text, r.pair.open)%2 == 1:
			r.mispair = possible
		}
	}
}

// parenAround returns the parenthesis strictly around x, or nil.
func parenAround(parens []skipRange, x int) *skipRange {
	i, _ := slices.BinarySearchFunc(parens, x, func(p skipRange, x int) int {
		if p.start < x {
			return -1
		}
		return 1
	})
	if i == 0 || x >= parens[i-1].end {
		return nil
	}
	return &parens[i-1]
}

// crossesParens: the quotation starts inside a parenthesis and ends after
// it, or ends inside one that starts after it.
func crossesParens(q *skipRange, parens []skipRange) bool {
	if p := parenAround(parens, q.start); p != nil && p.end < q.end {
		return true
	}
	if p := parenAround(parens, q.end); p != nil && p.start > q.start {
		return true
	}
	return false
}

// peelQuote returns s without its leading white space and, where a
// symmetric mark comes next, without that mark and the white space after it.
func peelQuote(s string) string {
	t := trimLeftSpace(s)
	if t == "" {
		return t
	}
	if c := t[0]; c < utf8.RuneSelf && c != '\'' && c != '"' && c != '`' {
		return t
	}
	for i := range quotePairs {
		if p := &quotePairs[i]; p.symmetric() && strings.HasPrefix(t, p.close) {
			return trimLeftSpace(t[len(p.close):])
		}
	}
	return t
}

// innerTerminatorEnd returns where the sentence ends for punctuation at
// boundary that sits right before quotation r's closer ("... end.") or
// false when it does not, or when the text after the closer goes on.
func innerTerminatorEnd(text string, r *skipRange, boundary int) (int, bool) {
	if !r.isQuote() || boundary >= r.end {
		return 0, false
	}
	inner := false
	for _, c := range closersByLength {
		if strings.HasSuffix(text[:r.end], c) && boundary+len(c) == r.end {
			inner = true
			break
		}
	}
	if !inner {
		return 0, false
	}
	ext, ok := boundaryExtent(nextWords(text, r.end))
	return r.end + ext, ok
}

// boundaryExtent returns how many bytes of white space and sentence
// punctuation start word, or false where word goes on with the sentence.
func boundaryExtent(word string) (int, bool) {
	if continuesInNextWord(trimSpace(word)) || continuesAfterNonWord(word) {
		return 0, false
	}
	n := 0
	for _, r := range word {
		if !isSpace(r) && !isTerminator(r) {
			break
		}
		n += utf8.RuneLen(r)
	}
	return n, true
}

// orphanClosers counts a paragraph's candidate marks of one token.
type orphanClosers struct {
	counted   bool
	token     string
	positions []int
}

// beforeAndTotal returns how many candidate marks tok has before boundary
// and in all.
func (o *orphanClosers) beforeAndTotal(text, tok string, boundary int, ranges []skipRange) (int, int) {
	if !o.counted || o.token != tok {
		o.counted, o.token, o.positions = true, tok, o.positions[:0]
		for i := 0; i+len(tok) <= len(text); {
			j := strings.Index(text[i:], tok)
			if j < 0 {
				break
			}
			if idx := i + j; isQuoteCandidate(text, idx, tok, ranges) {
				o.positions = append(o.positions, idx)
			}
			i += j + len(tok)
		}
	}
	before, _ := slices.BinarySearch(o.positions, boundary)
	return before, len(o.positions)
}

// isOrphan: the closer at boundary has no opener: an asymmetric closer
// the pattern left unpaired, or a symmetric one after an odd number of its
// candidates, or the only one.
func (o *orphanClosers) isOrphan(text string, boundary int, closer string, ranges []skipRange) bool {
	if !isSymmetricCloser(closer) {
		return true
	}
	before, total := o.beforeAndTotal(text, closer, boundary, ranges)
	return before%2 == 1 || before == 0 && total-before == 1
}

// closerOpensNext: the symmetric mark at boundary, with white space (or
// the start) before it and a capitalised word after, opens the next
// sentence, as the same mark already opened a quotation before.
func closerOpensNext(text string, boundary int, closer string, ranges []skipRange) bool {
	if !isSymmetricCloser(closer) {
		return false
	}
	if r, ok := lastRune(text[:boundary]); ok && !isSpace(r) {
		return false
	}
	if !startsUtterance(text, boundary+len(closer)) {
		return false
	}
	for i := range ranges {
		r := &ranges[i]
		if r.end <= boundary && r.isSymmetricQuote() && strings.HasPrefix(text[r.start:], closer) {
			return true
		}
	}
	return false
}

// pastOrphanCloser moves a sentence end at boundary past an orphan closing
// mark there, the white space after it and any punctuation stranded after
// that.
func pastOrphanCloser(text string, boundary int, ranges []skipRange, o *orphanClosers) int {
	for i := range ranges {
		if ranges[i].start == boundary {
			return boundary
		}
	}
	closer := ""
	for _, c := range closersByLength {
		if strings.HasPrefix(text[boundary:], c) && o.isOrphan(text, boundary, c, ranges) {
			closer = c
			break
		}
	}
	if closer == "" || closerOpensNext(text, boundary, closer, ranges) {
		return boundary
	}
	b := skipSpace(text, boundary+len(closer))
	for b < len(text) {
		end, ok := terminatorAt(text, b)
		if !ok {
			break
		}
		b = skipSpace(text, end)
	}
	return b
}

// skipSpace returns the end of the white space at i.
func skipSpace(text string, i int) int {
	return len(text) - len(trimLeftSpace(text[i:]))
}
