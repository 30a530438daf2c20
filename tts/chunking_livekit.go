package tts

import (
	"bytes"
	"regexp"
	"strings"
	"time"
	"unicode/utf8"
)

// LiveKit's sentence streaming, reproduced from LiveKit Agents' own code
// (github.com/livekit/agents, livekit-agents/livekit/agents/tokenize/):
// token_stream.py BufferedSentenceStream over a sentence splitter, the
// splitter being blingfire.py _split_sentences (the default since 1.2.0)
// or _basic_sent.py split_sentences (tokenize.basic).

// DefaultLiveKitContext is LiveKit's stream_context_len: the stream does
// not split until it holds this many characters.
const DefaultLiveKitContext = 10

// sentenceSpan is one sentence of a splitter: its length in characters as
// LiveKit counts the sentence's text, and its end in bytes.
type sentenceSpan struct{ chars, end int }

// liveKitChunker is BufferedSentenceStream.push_text: after each token,
// once it holds at least minCtx characters, it splits what it holds into
// sentences and, while there are two or more, takes the first into the
// chunk being built (sentences joined by a space), handing the chunk over
// once it reaches minLen characters. The last sentence is always held
// back. Splitting runs only where its answer can change: when the text
// holds a sentence mark whose following words are still arriving.
type liveKitChunker struct {
	split  func(text string, minLen int, spans []sentenceSpan) []sentenceSpan
	minLen int

	buf      []byte // text held since the last sentence taken
	bufStart int    // offset of buf[0]
	released int    // end of the last chunk handed over
	outChars int    // characters of the chunk being built (0: none)
	spans    []sentenceSpan
	// tail counts the characters that are not white space since the last
	// sentence mark in buf (-1: no mark held).
	tail   int
	scan   int  // bytes of buf whose characters tail has counted
	always bool // split after every token, as LiveKit does (tests)
}

// liveKitQuiet is how many characters other than white space after the
// last sentence mark a splitter may look at: past it, more text cannot
// change its answer (basic's longest look-ahead is an acronym's space and
// "However" with the white space after it; blingfireSplit looks at the
// next word and the first character after it).
const liveKitQuiet = 10

func newLiveKitChunker(split func(string, int, []sentenceSpan) []sentenceSpan) *liveKitChunker {
	return &liveKitChunker{split: split, minLen: DefaultLiveKitMinSentence, tail: -1}
}

func (c *liveKitChunker) Append(_ time.Duration, text string) int {
	dirty := c.always || c.tail >= 0 && c.tail < liveKitQuiet
	c.buf = append(c.buf, text...)
	// a character cut between two tokens is counted when it is whole
	for c.scan < len(c.buf) && utf8.FullRune(c.buf[c.scan:]) {
		r, size := utf8.DecodeRune(c.buf[c.scan:])
		c.scan += size
		switch {
		case isLiveKitMark(r):
			c.tail, dirty = 0, true
		case c.tail >= 0 && !isPySpace(r):
			c.tail++
		}
	}
	if !dirty || utf8.RuneCount(c.buf) < DefaultLiveKitContext {
		return c.released
	}
	for {
		w := windowStart(c.buf)
		c.spans = c.split(string(c.buf[w:]), c.minLen, c.spans[:0])
		if len(c.spans) <= 1 {
			break
		}
		first := c.spans[0]
		if w > 0 {
			// the first sentence began before the window: its length is
			// that of all the text up to its end
			end := w + first.end
			c.spans = c.split(string(c.buf[:end]), c.minLen, c.spans[:0])
			first = sentenceSpan{chars: c.spans[0].chars, end: end}
		}
		if c.outChars > 0 {
			c.outChars++
		}
		c.outChars += first.chars
		if c.outChars >= c.minLen {
			c.released, c.outChars = c.bufStart+first.end, 0
		}
		c.bufStart += first.end
		c.buf = c.buf[:copy(c.buf, c.buf[first.end:])]
		c.scan = max(0, c.scan-first.end)
	}
	c.tail = -1
	if last := bytes.LastIndexFunc(c.buf[:c.scan], isLiveKitMark); last >= 0 {
		_, size := utf8.DecodeRune(c.buf[last:])
		after := c.buf[last+size : c.scan]
		c.tail = utf8.RuneCount(after) - countSpaces(after)
	}
	return c.released
}

// countSpaces counts the characters of b that are white space.
func countSpaces(b []byte) int {
	n := 0
	for len(b) > 0 {
		r, size := utf8.DecodeRune(b)
		if isPySpace(r) {
			n++
		}
		b = b[size:]
	}
	return n
}

// isLiveKitMark reports whether r may end a sentence for either of
// LiveKit's splitters (basic and blingfire): . ! ? … and the full-width 。！？.
func isLiveKitMark(r rune) bool {
	switch r {
	case '.', '!', '?', '。', '！', '？', '…':
		return true
	}
	return false
}

func (c *liveKitChunker) Deadline() (time.Duration, bool) { return 0, false }
func (c *liveKitChunker) Expire(time.Duration) int        { return c.released }
func (c *liveKitChunker) Flush() int {
	c.bufStart += len(c.buf)
	c.buf = c.buf[:0]
	c.released, c.outChars, c.tail, c.scan = c.bufStart, 0, -1, 0
	return c.released
}
func (c *liveKitChunker) Reset() {
	*c = liveKitChunker{split: c.split, minLen: c.minLen, buf: c.buf[:0], spans: c.spans[:0], tail: -1, always: c.always}
}

// runeToByte returns the byte offset of the n-th character of s.
func runeToByte(s string, n int) int {
	for i := range s {
		if n == 0 {
			return i
		}
		n--
	}
	return len(s)
}

// Python's \s, for the patterns of _basic_sent.py.
const pySpace = `[\t\n\v\f\r \x{1c}-\x{1f}\x{85}\p{Z}]`

// basicRule is one substitution of LiveKit's split_sentences; it can
// match only where one of hints occurs (nil: anywhere), which saves
// running it on most texts.
type basicRule struct {
	re    *regexp.Regexp
	repl  string
	hints []string
}

func (r basicRule) apply(s string) string {
	if r.hints != nil && !containsAny(s, r.hints) {
		return s
	}
	return r.re.ReplaceAllString(s, r.repl)
}

func containsAny(s string, subs []string) bool {
	for _, sub := range subs {
		if strings.Contains(s, sub) {
			return true
		}
	}
	return false
}

// The rules of LiveKit's split_sentences (_basic_sent.py), in its order.
var basicRules = []basicRule{
	{regexp.MustCompile(`(Mr|St|Mrs|Ms|Dr)[.]`), "${1}<prd>", []string{"Mr.", "St.", "Mrs.", "Ms.", "Dr."}},
	{regexp.MustCompile(`[.](com|net|org|io|gov|edu|me)`), "<prd>${1}", []string{".com", ".net", ".org", ".io", ".gov", ".edu", ".me"}},
	{regexp.MustCompile(`([0-9])[.]([0-9])`), "${1}<prd>${2}", []string{"."}},
}

var (
	basicMultiDots  = regexp.MustCompile(`\.{2,}`)
	basicSpaceAlpha = regexp.MustCompile(pySpace + `([A-Za-z])[.] `)
	basicStarters   = `(Mr|Mrs|Ms|Dr|Prof|Capt|Cpt|Lt|He` + pySpace + `|She` + pySpace + `|It` + pySpace + `|They` + pySpace + `|Their` + pySpace + `|Our` + pySpace + `|We` + pySpace + `|But` + pySpace + `|However` + pySpace + `|That` + pySpace + `|This` + pySpace + `|Wherever)`
	suffixHints     = []string{" Inc.", " Ltd.", " Jr.", " Sr.", " Co."}
	basicLate       = []basicRule{
		{regexp.MustCompile(`([A-Z][.][A-Z][.](?:[A-Z][.])?) ` + basicStarters), "${1}<stop> ${2}", []string{". "}},
		{regexp.MustCompile(`([A-Za-z])[.]([A-Za-z])[.]([A-Za-z])[.]`), "${1}<prd>${2}<prd>${3}<prd>", []string{"."}},
		{regexp.MustCompile(`([A-Za-z])[.]([A-Za-z])[.]`), "${1}<prd>${2}<prd>", []string{"."}},
		{regexp.MustCompile(` (Inc|Ltd|Jr|Sr|Co)[.] ` + basicStarters), " ${1}<stop> ${2}", suffixHints},
		{regexp.MustCompile(` (Inc|Ltd|Jr|Sr|Co)[.]`), " ${1}<prd>", suffixHints},
		{regexp.MustCompile(` ([A-Za-z])[.]`), " ${1}<prd>", []string{"."}},
		{regexp.MustCompile(`([.!?。！？])(["”])`), "${1}${2}<stop>", []string{`"`, "”"}},
	}
)

// basicSplit is LiveKit's split_sentences (tokenize.basic) with
// retain_format off: rule-based sentence ends, and sentences of at most
// minLen characters merged into the next.
func basicSplit(text string, minLen int, spans []sentenceSpan) []sentenceSpan {
	s := strings.ReplaceAll(text, "\n", " ")
	for _, r := range basicRules {
		s = r.apply(s)
	}
	if strings.Contains(s, "..") {
		s = basicMultiDots.ReplaceAllStringFunc(s, func(m string) string { return strings.Repeat("<prd>", len(m)) })
	}
	if strings.Contains(s, "Ph.D") {
		s = strings.ReplaceAll(s, "Ph.D.", "Ph<prd>D<prd>")
	}
	if strings.Contains(s, ". ") {
		s = basicSpaceAlpha.ReplaceAllString(s, " ${1}<prd> ")
	}
	for _, r := range basicLate {
		s = r.apply(s)
	}
	// ([.!?。！？])(?!["”]) -> \1<stop>: Go's regexp has no lookahead
	var b strings.Builder
	for i, r := range s {
		b.WriteRune(r)
		if strings.ContainsRune(".!?。！？", r) {
			if next, _ := utf8.DecodeRuneInString(s[i+utf8.RuneLen(r):]); next != '"' && next != '”' {
				b.WriteString("<stop>")
			}
		}
	}
	s = strings.ReplaceAll(b.String(), "<prd>", ".")
	total := utf8.RuneCountInString(strings.ReplaceAll(s, "<stop>", ""))
	buff, endPos := 0, 0 // buff: characters of " "+sentence pieces
	for piece := range strings.SplitSeq(s, "<stop>") {
		sentence := strings.TrimFunc(piece, isPySpace)
		if sentence == "" {
			continue
		}
		buff += 1 + utf8.RuneCountInString(sentence)
		endPos += utf8.RuneCountInString(piece)
		if buff > minLen {
			spans = append(spans, sentenceSpan{chars: buff - 1, end: endPos})
			buff = 0
		}
	}
	if buff > 0 {
		spans = append(spans, sentenceSpan{chars: buff - 1, end: total})
	}
	for i := range spans {
		spans[i].end = runeToByte(text, spans[i].end)
	}
	return spans
}
