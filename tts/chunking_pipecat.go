package tts

import (
	"time"
	"unicode"
	"unicode/utf8"
)

// Pipecat's sentence aggregation, reproduced from Pipecat's own code
// (github.com/pipecat-ai/pipecat, src/pipecat/utils/string.py
// match_endofsentence and src/pipecat/utils/text/simple_text_aggregator.py
// SimpleTextAggregator): from 1.12.0 on with sentencex (package
// internal/sentencex), before that with NLTK's Punkt (englishPunkt).

// isPipecatSentenceEnd reports whether r is in Pipecat's
// SENTENCE_ENDING_PUNCTUATION (the same set from v0.0.77 on).
func isPipecatSentenceEnd(r rune) bool {
	switch r {
	case '.', '!', '?', ';', '…',
		'。', '？', '！', '；', '．', '｡',
		'।', '॥',
		'؟', '؛', '۔', '؏',
		'၊', '။',
		'។', '៕',
		'໌',
		'།', '༎',
		'։', '՜', '՞',
		'።', '፧', '፨':
		return true
	}
	return false
}

// isPipecatUnambiguous reports whether r is in Pipecat's
// UNAMBIGUOUS_SENTENCE_ENDING_PUNCTUATION: its sentence punctuation less
// the Latin . ! ? ; and the ellipsis.
func isPipecatUnambiguous(r rune) bool {
	switch r {
	case '.', '!', '?', ';', '…':
		return false
	}
	return isPipecatSentenceEnd(r)
}

// isPySpace reports whether Python's str.isspace holds for r (Go's
// unicode.IsSpace plus the information separators U+001C-U+001F).
func isPySpace(r rune) bool { return unicode.IsSpace(r) || r >= 0x1c && r <= 0x1f }

// trimPySpace is Python's str.rstrip() with no argument.
func trimPySpace(s []byte) []byte {
	for len(s) > 0 {
		r, size := utf8.DecodeLastRune(s)
		if !isPySpace(r) {
			break
		}
		s = s[:len(s)-size]
	}
	return s
}

// matchEndOfSentence is Pipecat's match_endofsentence from v0.0.77 to
// 1.11.x: the end of the first sentence of text by Punkt, or 0. A text that
// Punkt keeps whole counts when it ends in sentence punctuation; with
// lookahead (v0.0.97 on), otherwise at its first unambiguous non-Latin
// sentence mark.
//
// Punkt runs on the last splitWindow bytes of text only (see windowStart).
func matchEndOfSentence(text []byte, lookahead bool) int {
	text = trimPySpace(text)
	if len(text) == 0 {
		return 0
	}
	w := windowStart(text)
	first, count := englishPunkt().split(string(text[w:]))
	switch {
	case count > 1:
		return w + first
	case count == 1:
		if r, size := utf8.DecodeLastRune(text); isPipecatSentenceEnd(r) && size > 0 {
			return len(text)
		}
		if lookahead {
			for i, r := range string(text) {
				if isPipecatUnambiguous(r) {
					return i + utf8.RuneLen(r)
				}
			}
		}
	}
	return 0
}

// splitWindow bounds the text a sentence splitter is run on, so that a
// turn that goes on for long without a sentence end costs time in
// proportion to its length, not to its square (the frameworks split all
// they hold, again and again). Text held that long without a sentence end
// has no sentence end to find before its last few words: each earlier
// candidate was decided, as not one, with the words after it complete.
// The window starts at a word, so it is exact unless a single word runs
// across its start.
const splitWindow = 512

// windowStart returns where in text the splitter's window starts: 0 for
// text within splitWindow, else the start of the first word that begins
// in the last splitWindow bytes.
func windowStart(text []byte) int { return windowStartAt(text, splitWindow) }

// windowStartAt is windowStart for a window of size bytes.
func windowStartAt(text []byte, size int) int {
	if len(text) <= size {
		return 0
	}
	from := len(text) - size
	i := from
	for i < len(text) {
		r, size := utf8.DecodeRune(text[i:])
		if isPySpace(r) {
			break
		}
		i += size
	}
	for i < len(text) {
		r, size := utf8.DecodeRune(text[i:])
		if !isPySpace(r) {
			return i
		}
		i += size
	}
	// one word fills the window: start it at a character boundary
	for from < len(text) && !utf8.RuneStart(text[from]) {
		from++
	}
	return from
}

// pipecatPunktChunker is Pipecat's SimpleTextAggregator from v0.0.97 to
// 1.11.x, in SENTENCE mode: text is taken a character at a time; after
// sentence punctuation it waits for the next character that is not white
// space and then asks match_endofsentence about everything it holds,
// releasing the first sentence if there is one (and only that: the rest
// waits for the next sentence punctuation). Punkt runs only there.
type pipecatPunktChunker struct {
	buf       []byte // text held since the last release
	start     int    // offset of buf[0]
	scan      int    // bytes of buf taken character by character so far
	lookahead bool   // sentence punctuation seen, waiting for a non-space
}

func (c *pipecatPunktChunker) Append(_ time.Duration, text string) int {
	c.buf = append(c.buf, text...)
	// a character cut between two tokens is taken when it is whole
	for c.scan < len(c.buf) && utf8.FullRune(c.buf[c.scan:]) {
		r, size := utf8.DecodeRune(c.buf[c.scan:])
		c.scan += size
		if c.lookahead {
			if !isPySpace(r) {
				c.lookahead = false
				if end := matchEndOfSentence(c.buf[:c.scan], true); end > 0 {
					c.start, c.scan = cutHeld(&c.buf, c.start, c.scan, end)
				}
			}
			continue
		}
		c.lookahead = isPipecatSentenceEnd(r)
	}
	return c.start
}

// cutHeld releases the first end bytes of the text held in *buf (from
// offset start, taken character by character up to scan) and returns the
// new start and scan.
func cutHeld(buf *[]byte, start, scan, end int) (int, int) {
	*buf = (*buf)[:copy(*buf, (*buf)[end:])]
	return start + end, max(0, scan-end)
}

func (c *pipecatPunktChunker) Deadline() (time.Duration, bool) { return 0, false }
func (c *pipecatPunktChunker) Expire(time.Duration) int        { return c.start }
func (c *pipecatPunktChunker) Flush() int {
	c.start, c.scan = cutHeld(&c.buf, c.start, c.scan, len(c.buf))
	return c.start
}
func (c *pipecatPunktChunker) Reset() { *c = pipecatPunktChunker{buf: c.buf[:0]} }

// lookahead is where Pipecat's aggregator (1.12 on) stands after sentence
// punctuation.
type lookahead uint8

const (
	lookIdle      lookahead = iota // no sentence end pending
	lookFirstChar                  // punctuation seen, waiting for a character that is not white space
	lookWordStart                  // asked at a quotation mark or symbol; waiting for the word to begin
	lookInWord                     // asked at the first character of a word, or waiting for it to end
)

// pipecatChunker is Pipecat's SimpleTextAggregator from 1.12.0 on (the
// pinned pipecat-ai 1.14.0), in SENTENCE mode: text is taken a character
// at a time; after sentence punctuation the first character that is not
// white space or punctuation asks match_endofsentence about everything
// held ("Hello. N" releases "Hello."), and, where that finds no end, the
// end of the word that follows asks again once ("Albert I. Douglas" is
// decided with "Douglas" whole); a sentence mark that ends that word asks
// about the text before it. Only the first sentence is released; the rest
// waits.
type pipecatChunker struct {
	buf   []byte
	start int
	scan  int
	state lookahead
	mark  int // end of the first unambiguous non-Latin sentence mark in buf[:scan], 0 if none
	// window is the text sentencex is run on at most (0:
	// sentencexWindow; the tests set it wider)
	window int
}

func (c *pipecatChunker) Append(_ time.Duration, text string) int {
	c.buf = append(c.buf, text...)
	for c.scan < len(c.buf) && utf8.FullRune(c.buf[c.scan:]) {
		r, size := utf8.DecodeRune(c.buf[c.scan:])
		c.scan += size
		punct := isPipecatSentenceEnd(r)
		if c.mark == 0 && isPipecatUnambiguous(r) {
			c.mark = c.scan
		}
		ask := false
		switch c.state {
		case lookFirstChar:
			if !isPySpace(r) && !punct {
				ask = true
				c.state = lookWordStart
				if isPyAlnum(r) {
					c.state = lookInWord
				}
			}
		case lookWordStart:
			if isPyAlnum(r) {
				c.state = lookInWord
			}
		case lookInWord:
			if isPySpace(r) || punct {
				ask = true
				c.state = lookIdle
			}
		}
		if ask {
			held, mark := c.buf[:c.scan], c.mark
			if punct { // "...I. Did?": the earlier period, without the "?"
				held = c.buf[:c.scan-size]
				if mark > len(held) {
					mark = 0
				}
			}
			if end := sentencexEnd(held, mark, c.window); end > 0 {
				c.start, c.scan = cutHeld(&c.buf, c.start, c.scan, end)
				c.state = lookIdle
				c.mark = firstMarkEnd(c.buf[:c.scan])
			}
		}
		if punct {
			c.state = lookFirstChar
		}
	}
	return c.start
}

func (c *pipecatChunker) Deadline() (time.Duration, bool) { return 0, false }
func (c *pipecatChunker) Expire(time.Duration) int        { return c.start }
func (c *pipecatChunker) Flush() int {
	c.start, c.scan = cutHeld(&c.buf, c.start, c.scan, len(c.buf))
	c.mark = 0
	return c.start
}

// firstMarkEnd returns the end of the first unambiguous non-Latin sentence
// mark in text, or 0.
func firstMarkEnd(text []byte) int {
	for i, r := range string(text) {
		if isPipecatUnambiguous(r) {
			return i + utf8.RuneLen(r)
		}
	}
	return 0
}
func (c *pipecatChunker) Reset() { *c = pipecatChunker{buf: c.buf[:0], window: c.window} }

// isPyAlnum is Python's str.isalnum for one character: a letter or a
// number.
func isPyAlnum(r rune) bool { return unicode.IsLetter(r) || unicode.IsNumber(r) }

// pipecat096Chunker is Pipecat's SimpleTextAggregator from v0.0.77 to
// v0.0.96: after each streamed chunk it asks match_endofsentence about
// everything it holds (without the lookahead and the non-Latin fallback)
// and releases at most one sentence, so a sentence ends at the token that
// carries its punctuation. Punkt's answer can change only where a sentence
// end (. ! ?) or the word after it is being streamed, where the held text
// ends in sentence punctuation, or right after a release; Punkt runs only
// then.
type pipecat096Chunker struct {
	buf   []byte
	start int
	// after is 0 when the text since the last . ! ? is settled (its next
	// word is complete), 1 right after one, 2 in white space after it, 3 in
	// the word after that.
	after   int
	recheck bool
	always  bool // ask Punkt after every token, as Pipecat does (tests)
}

func (c *pipecat096Chunker) Append(_ time.Duration, text string) int {
	ask := c.always || c.recheck || c.after != 0
	for _, r := range text {
		switch {
		case r == '.' || r == '!' || r == '?':
			c.after = 1
		case isPySpace(r):
			switch c.after {
			case 1:
				c.after = 2
			case 3:
				c.after = 0
			}
		case c.after == 2:
			c.after = 3
		}
		ask = ask || c.after != 0
	}
	c.buf = append(c.buf, text...)
	if !ask {
		if r, _ := utf8.DecodeLastRune(trimPySpace(c.buf)); !isPipecatSentenceEnd(r) {
			return c.start
		}
	}
	c.recheck = false
	if end := matchEndOfSentence(c.buf, false); end > 0 {
		c.start += end
		c.buf = c.buf[:copy(c.buf, c.buf[end:])]
		c.recheck = true
	}
	return c.start
}

func (c *pipecat096Chunker) Deadline() (time.Duration, bool) { return 0, false }
func (c *pipecat096Chunker) Expire(time.Duration) int        { return c.start }
func (c *pipecat096Chunker) Flush() int {
	c.start += len(c.buf)
	c.buf = c.buf[:0]
	return c.start
}
func (c *pipecat096Chunker) Reset() { *c = pipecat096Chunker{buf: c.buf[:0], always: c.always} }
