package tts

import (
	"strings"
	"unicode"
	"unicode/utf8"
)

// blingfireSplit stands in for LiveKit's default sentence splitter
// (tokenize/blingfire.py _split_sentences over BlingFire's
// text_to_sentences_with_offsets), which is a compiled statistical model.
// Its rules were read off that model (BlingFire's npm addon, which passes
// LiveKit's own blingfire tests) on short texts and on the tune set of
// testdata/chunking: a sentence ends after . ! ? … (with closing quotes,
// brackets and Markdown asterisks) when white space and then an upper-case
// or uncased letter follow, or an opening quote, bracket or asterisk (before one, or before
// anything yet), or
// a dash after a space; after a closing quote whatever follows; after the
// full-width 。！？ always. Not after a single letter, a dotted
// abbreviation (U.S., p.m., e.g.) or a word of blingfireAbbreviations, and
// never before a lower-case letter, a digit or a symbol. Sentences under
// minLen characters merge into the next, as LiveKit merges them.
func blingfireSplit(text string, minLen int, spans []sentenceSpan) []sentenceSpan {
	start := 0
	add := func(end int) {
		raw := text[start:end]
		n := blingfireChars(raw)
		if n == 0 || n < minLen {
			return
		}
		spans = append(spans, sentenceSpan{chars: n, end: end})
		start = end
	}
	for i := 0; i < len(text); {
		r, size := utf8.DecodeRuneInString(text[i:])
		if !isLiveKitMark(r) {
			i += size
			continue
		}
		e := i + size
		quoted := false
		for e < len(text) {
			r2, s2 := utf8.DecodeRuneInString(text[e:])
			if !isLiveKitMark(r2) && !isBlingfireCloser(r2) {
				break
			}
			quoted = quoted || isQuoteCloser(r2)
			e += s2
		}
		if blingfireBreak(text, i, r, e, quoted) {
			add(e)
		}
		i = e
	}
	if strings.TrimFunc(text[start:], isPySpace) != "" {
		spans = append(spans, sentenceSpan{chars: utf8.RuneCountInString(strings.TrimFunc(text[start:], isPySpace)), end: len(text)})
	}
	return spans
}

// blingfireChars is len(re.sub(r"\s*\n+\s*", " ", raw).strip()).
func blingfireChars(raw string) int {
	n, pendingSpace := 0, false
	for _, r := range strings.TrimFunc(raw, isPySpace) {
		if isPySpace(r) {
			if !pendingSpace {
				n++
			}
			pendingSpace = true
			continue
		}
		pendingSpace = false
		n++
	}
	// runs of white space holding a newline become one space; other runs
	// keep their length
	return n + blingfireKeptSpaces(strings.TrimFunc(raw, isPySpace))
}

// blingfireKeptSpaces counts the characters a run of white space without
// a newline keeps beyond the one blingfireChars counted.
func blingfireKeptSpaces(s string) int {
	extra, run, newline := 0, 0, false
	flush := func() {
		if run > 1 && !newline {
			extra += run - 1
		}
		run, newline = 0, false
	}
	for _, r := range s {
		if isPySpace(r) {
			run++
			newline = newline || r == '\n'
			continue
		}
		flush()
	}
	flush()
	return extra
}

func isBlingfireCloser(r rune) bool {
	switch r {
	case '"', '\'', '”', '’', ')', ']', '}', '»', '」', '』', '）', '】', '*':
		return true
	}
	return false
}

func isQuoteCloser(r rune) bool {
	switch r {
	case '"', '”', '’', '»', '」', '』':
		return true
	}
	return false
}

// blingfireBreak decides a sentence end after the marks text[i:e], the
// first of them r.
func blingfireBreak(text string, i int, r rune, e int, quoted bool) bool {
	if r == '。' || r == '！' || r == '？' {
		return true
	}
	n := e
	newline := false
	for n < len(text) {
		r2, s2 := utf8.DecodeRuneInString(text[n:])
		if !isPySpace(r2) {
			break
		}
		newline = newline || r2 == '\n'
		n += s2
	}
	if n == e || n == len(text) {
		return false // no white space after the marks, or nothing yet after it
	}
	if quoted {
		return true
	}
	if r == '.' && e == i+1 && blingfireAbbreviation(text[:i]) {
		// after an abbreviation, only once the next word is complete and
		// is one that starts sentences (not a name)
		w, rest, ok := nextWord(text[n:])
		if !ok {
			return false
		}
		_, starter := blingfireStarters[w]
		return starter && rest
	}
	if newline && isListNumber(text[n:]) {
		return true
	}
	f, fs := utf8.DecodeRuneInString(text[n:])
	switch {
	case f == '-' && !newline:
		next := strings.TrimLeftFunc(text[n+fs:], isPySpace)
		g, _ := utf8.DecodeRuneInString(next)
		return len(next) < len(text[n+fs:]) && startsSentence(g)
	case isBlingfireOpener(f):
		after := strings.TrimLeftFunc(text[n:], isBlingfireOpener)
		g, _ := utf8.DecodeRuneInString(after)
		return after == "" || startsSentence(g) // "great. (" breaks before its word comes
	}
	return startsSentence(f)
}

// isBlingfireOpener reports whether r opens a quote, a bracket or
// Markdown emphasis before the first word of a sentence.
func isBlingfireOpener(r rune) bool { return strings.ContainsRune("\"'“‘([¿¡«「『*", r) }

// startsSentence reports whether a word beginning with r may start a
// sentence: an upper-case letter, or a letter of a script without case.
func startsSentence(r rune) bool {
	return unicode.IsUpper(r) || unicode.IsLetter(r) && !unicode.IsLower(r)
}

// blingfireAbbreviation reports whether the word that ends before's text
// (just before a period) is one BlingFire does not end a sentence after:
// a single letter, a dotted abbreviation, or one of its abbreviations.
func blingfireAbbreviation(before string) bool {
	w := before[strings.LastIndexFunc(before, isPySpace)+1:]
	w = strings.TrimLeft(w, "\"'“‘([")
	if w == "" {
		return false
	}
	if utf8.RuneCountInString(w) == 1 {
		// an initial, unless a number stands before it (9 h., 5 m.: a unit)
		prev := strings.TrimRightFunc(before[:len(before)-len(w)], isPySpace)
		prev = prev[strings.LastIndexFunc(prev, isPySpace)+1:]
		return unicode.IsLetter([]rune(w)[0]) && (prev == "" || strings.IndexFunc(prev, unicode.IsDigit) < 0)
	}
	if strings.Contains(w, ".") {
		return isDotted(w)
	}
	_, ok := blingfireAbbreviations[w]
	return ok
}

// isDotted reports whether w is a dotted abbreviation such as U.S, p.m,
// e.g or Ph.D (the final period left off): runs of one to three letters
// joined by periods.
func isDotted(w string) bool {
	parts := strings.Split(w, ".")
	if len(parts) < 2 {
		return false
	}
	for _, p := range parts {
		if p == "" || utf8.RuneCountInString(p) > 3 || strings.IndexFunc(p, func(r rune) bool { return !unicode.IsLetter(r) }) >= 0 {
			return false
		}
	}
	return true
}

// nextWord returns the word at the start of s (up to white space) and
// whether more text follows it; ok is false until white space ends it.
func nextWord(s string) (w string, rest, ok bool) {
	end := strings.IndexFunc(s, isPySpace)
	if end < 0 {
		return "", false, false
	}
	return s[:end], strings.TrimLeftFunc(s[end:], isPySpace) != "", true
}

// isListNumber reports whether s starts with a list number: digits, a
// period and white space.
func isListNumber(s string) bool {
	d := 0
	for d < len(s) && s[d] >= '0' && s[d] <= '9' {
		d++
	}
	return d > 0 && d+1 < len(s) && s[d] == '.' && isPySpace(rune(s[d+1]))
}

// blingfireStarters are words BlingFire ends a sentence before even after
// an abbreviation, once the word after them has begun.
var blingfireStarters = map[string]struct{}{}

// blingfireAbbreviations are words BlingFire keeps a sentence going after,
// as probed: titles, months, weekdays, company and address words, units
// and US state abbreviations.
var blingfireAbbreviations = map[string]struct{}{}

func init() {
	for _, w := range strings.Fields(`Mr Mrs Ms Dr St Gen Col Sgt Lt Capt Prof Rev Gov Sen Rep Hon Mt Ft Jr Sr
		Jan Feb Aug Sep Sept Oct Nov Dec Mon Tue Tues Wed Thu Thur Thurs Fri Sat Sun
		Inc Corp Ltd Co Ave Blvd Rd etc vs approx min tsp oz Fig No Me
		Ala Ariz Calif Colo Conn Fla Ga Ill Ind Kan Ky Md Mass Mich Minn Miss Mont Neb Nev Okla Ore Pa Tenn Tex Va Vt Wash Wis Wyo`) {
		blingfireAbbreviations[w] = struct{}{}
	}
	for _, w := range strings.Fields(`The Then This That These Those There They We You He She It I Please Take Let
		But So If In On At For What When Where Why How Who Our Your My His Her Its Their A An Do Is Are Can Will`) {
		blingfireStarters[w] = struct{}{}
	}
}
