package tts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
	"unicode"
	"unicode/utf8"
)

// TextlessToken is the text a chunker sees for a token that carries no
// text (benchmark files often keep only timings): one word of four
// characters with a leading space, as a BPE token usually looks.
const TextlessToken = " tok"

// Chunker decides when the text buffered for a turn is handed to the
// synthesizer. Offsets count bytes of the turn's text from its start, with
// TextlessToken standing in for each token without text.
//
// Append and Expire return the offset up to which text is released so far;
// it never decreases and never exceeds the text appended. Deadline reports
// when the chunker would release buffered text on its own if nothing else
// arrives; the caller calls Expire at that time. Flush releases everything
// at the end of the turn. A Chunker serves one turn at a time; Reset makes
// it ready for the next.
type Chunker interface {
	Append(at time.Duration, text string) int
	Deadline() (at time.Duration, ok bool)
	Expire(at time.Duration) int
	Flush() int
	Reset()
}

// Policy makes chunkers for one chunking rule.
type Policy interface {
	// Name is the policy as written on the command line.
	Name() string
	// NewChunker returns a chunker at the start of a turn.
	NewChunker() Chunker
}

// PolicyFunc adapts a function to Policy.
type PolicyFunc struct {
	Label string
	New   func() Chunker
	// Timed is true when the chunkers can release text on their own
	// (Deadline); the engine skips timer checks for the others.
	Timed bool
	// ByText is true when what the chunkers release depends on the text
	// appended alone, never on the times (they ignore Append's at and
	// have no timer): the engine may then reuse one turn's releases for
	// a turn with the same text.
	ByText bool
}

// HasTimer reports whether the policy's chunkers use Deadline.
func (p PolicyFunc) HasTimer() bool { return p.Timed }

// ReleasesByText reports whether the chunkers' releases depend on the text
// alone (ByText).
func (p PolicyFunc) ReleasesByText() bool { return p.ByText && !p.Timed }

// Name returns the label.
func (p PolicyFunc) Name() string { return p.Label }

// NewChunker calls New.
func (p PolicyFunc) NewChunker() Chunker { return p.New() }

// Defaults of the policies that have parameters.
const (
	// DefaultLiveKitMinSentence is LiveKit's min_sentence_len: shorter
	// sentences merge into the next.
	DefaultLiveKitMinSentence = 20
	// DefaultTimerDelay is the timer: policy's maximum buffer delay when
	// none is given.
	DefaultTimerDelay = 3 * time.Second
	// DefaultCartesiaDelay is Cartesia's documented default
	// max_buffer_delay_ms (3000 ms).
	DefaultCartesiaDelay = 3 * time.Second
)

// DefaultElevenLabsSchedule is ElevenLabs' default chunk length schedule in
// characters: the first chunk at 120 buffered characters, then 160, 250,
// and 290 for every chunk after.
var DefaultElevenLabsSchedule = []int{120, 160, 250, 290}

// ErrPolicy reports a chunking policy that cannot be parsed.
var ErrPolicy = errors.New("unknown chunking policy")

// PolicyNames lists the policies ParsePolicy accepts, for help texts.
const PolicyNames = "token, word, sentence (the plain rule: punctuation, white space, then the next word), " +
	"pipecat (Pipecat >= 1.12 sentence aggregation with sentencex, as in the pinned 1.14.0), " +
	"pipecat-1.11 (Pipecat 0.0.97-1.11 with NLTK Punkt), pipecat-0.0.96 (Pipecat 0.0.77-0.0.96), " +
	"livekit (LiveKit >= 1.2 default: blingfire sentences, 20-character minimum, last sentence held), " +
	"livekit-basic (LiveKit tokenize.basic), elevenlabs (what Pipecat sends ElevenLabs by default: client sentences, auto_mode), " +
	"elevenlabs-schedule[:120,160,250,290] (ElevenLabs' chunk_length_schedule over words), " +
	"cartesia[:3s] (Cartesia's buffering: sentence end or max_buffer_delay), timer:<max delay> (sentence end or the delay, e.g. timer:500ms)"

// ParsePolicy parses a policy as written on the command line.
func ParsePolicy(s string) (Policy, error) {
	name, arg, hasArg := strings.Cut(strings.TrimSpace(s), ":")
	name = strings.ToLower(name)
	if hasArg {
		switch name {
		case "timer", "cartesia", "elevenlabs-schedule":
		default:
			return nil, fmt.Errorf("%w %q: %s takes no parameter", ErrPolicy, s, name)
		}
	}
	switch name {
	case "token":
		return PolicyFunc{Label: "token", New: func() Chunker { return &tokenChunker{} }, ByText: true}, nil
	case "word":
		return PolicyFunc{Label: "word", New: func() Chunker { return &wordChunker{} }, ByText: true}, nil
	case "sentence":
		return PolicyFunc{Label: "sentence", New: func() Chunker { return &sentenceChunker{} }, ByText: true}, nil
	case "pipecat", "elevenlabs":
		return PolicyFunc{Label: name, New: func() Chunker { return &pipecatChunker{} }, ByText: true}, nil
	case "pipecat-1.11":
		return PolicyFunc{Label: name, New: func() Chunker { return &pipecatPunktChunker{} }, ByText: true}, nil
	case "pipecat-0.0.96":
		return PolicyFunc{Label: name, New: func() Chunker { return &pipecat096Chunker{} }, ByText: true}, nil
	case "livekit":
		return PolicyFunc{Label: name, New: func() Chunker { return newLiveKitChunker(blingfireSplit) }, ByText: true}, nil
	case "livekit-basic":
		return PolicyFunc{Label: name, New: func() Chunker { return newLiveKitChunker(basicSplit) }, ByText: true}, nil
	case "elevenlabs-schedule":
		schedule := DefaultElevenLabsSchedule
		if hasArg {
			var err error
			if schedule, err = parseSchedule(arg); err != nil {
				return nil, fmt.Errorf("%w %q: %w", ErrPolicy, s, err)
			}
		}
		label := "elevenlabs-schedule:" + formatSchedule(schedule)
		return PolicyFunc{Label: label, New: func() Chunker { return &scheduleChunker{schedule: schedule, end: -1} }, ByText: true}, nil
	case "timer", "cartesia":
		d := DefaultTimerDelay
		if name == "cartesia" {
			d = DefaultCartesiaDelay
		}
		if hasArg {
			var err error
			if d, err = time.ParseDuration(arg); err != nil || d <= 0 {
				return nil, fmt.Errorf("%w %q: %s takes a positive maximum buffer delay such as %s:500ms", ErrPolicy, s, name, name)
			}
		}
		return PolicyFunc{Label: name + ":" + d.String(), New: func() Chunker { return &timerChunker{max: d} }, Timed: true}, nil
	}
	return nil, fmt.Errorf("%w %q: want one of %s", ErrPolicy, s, PolicyNames)
}

// parseSchedule reads a chunk length schedule: comma-separated positive
// character counts.
func parseSchedule(arg string) ([]int, error) {
	var out []int
	for f := range strings.SplitSeq(arg, ",") {
		n, err := strconv.Atoi(strings.TrimSpace(f))
		if err != nil || n <= 0 {
			return nil, fmt.Errorf("schedule entry %q: want a positive number of characters, as in 120,160,250,290", f)
		}
		out = append(out, n)
	}
	return out, nil
}

func formatSchedule(schedule []int) string {
	parts := make([]string, len(schedule))
	for i, n := range schedule {
		parts[i] = strconv.Itoa(n)
	}
	return strings.Join(parts, ",")
}

// tokenChunker releases every token as it arrives.
type tokenChunker struct{ n int }

func (c *tokenChunker) Append(_ time.Duration, text string) int { c.n += len(text); return c.n }
func (c *tokenChunker) Deadline() (time.Duration, bool)         { return 0, false }
func (c *tokenChunker) Expire(time.Duration) int                { return c.n }
func (c *tokenChunker) Flush() int                              { return c.n }
func (c *tokenChunker) Reset()                                  { c.n = 0 }

// wordChunker releases text up to the white space that ends each word.
type wordChunker struct {
	n, released int
	inWord      bool
}

func (c *wordChunker) Append(_ time.Duration, text string) int {
	// the state in locals for the loop, stored once at the end
	inWord, released := c.inWord, c.released
	for i := 0; i < len(text); {
		space, size := false, 1
		if b := text[i]; b < utf8.RuneSelf {
			space = asciiClass[b] == classSpace
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:])
			space = unicode.IsSpace(r)
		}
		if space && inWord {
			released = c.n + i + size
		}
		inWord = !space
		i += size
	}
	c.inWord, c.released = inWord, released
	c.n += len(text)
	return released
}
func (c *wordChunker) Deadline() (time.Duration, bool) { return 0, false }
func (c *wordChunker) Expire(time.Duration) int        { return c.released }
func (c *wordChunker) Flush() int                      { c.released = c.n; return c.n }
func (c *wordChunker) Reset()                          { *c = wordChunker{} }

// sentenceChunker is the plain sentence rule: a sentence is released when
// its final punctuation (with any closing quotes or brackets) is followed
// by white space and then the next character that is not white space; the
// white space goes with the sentence.
type sentenceChunker struct {
	n, released int
	state       uint8 // inSentence, afterEnd, inGap
	pendingEnd  int   // offset where the candidate sentence ends
}

const (
	inSentence uint8 = iota
	afterEnd         // after sentence punctuation (and closers)
	inGap            // in the white space after it
)

// Character classes of the plain sentence rule.
const (
	classOther uint8 = iota
	classSpace
	classEnd
	classCloser
)

// asciiClass classifies the ASCII characters without decoding.
var asciiClass = func() (t [utf8.RuneSelf]uint8) {
	for r := range rune(utf8.RuneSelf) {
		t[r] = runeClass(r)
	}
	return t
}()

func runeClass(r rune) uint8 {
	switch {
	case unicode.IsSpace(r):
		return classSpace
	case IsSentenceEnd(r):
		return classEnd
	case isCloser(r):
		return classCloser
	}
	return classOther
}

func (c *sentenceChunker) Append(_ time.Duration, text string) int {
	// the state in locals for the loop, stored once at the end
	state, pendingEnd, released, n := c.state, c.pendingEnd, c.released, c.n
	for i := 0; i < len(text); {
		class, size := classOther, 1
		if b := text[i]; b < utf8.RuneSelf {
			class = asciiClass[b]
		} else {
			var r rune
			r, size = utf8.DecodeRuneInString(text[i:])
			class = runeClass(r)
		}
		switch {
		case class == classSpace:
			if state != inSentence {
				state = inGap
				pendingEnd = n + i + size
			}
		case class == classEnd:
			state = afterEnd
		case class == classCloser && state == afterEnd:
			// still the end of the sentence
		default:
			if state == inGap {
				released = pendingEnd
			}
			state = inSentence
		}
		i += size
	}
	c.state, c.pendingEnd, c.released, c.n = state, pendingEnd, released, n+len(text)
	return released
}

func isCloser(r rune) bool {
	switch r {
	case '"', '\'', ')', ']', '}', '”', '’', '»', '」', '』':
		return true
	}
	return false
}

func (c *sentenceChunker) Deadline() (time.Duration, bool) { return 0, false }
func (c *sentenceChunker) Expire(time.Duration) int        { return c.released }
func (c *sentenceChunker) Flush() int                      { c.released = c.n; return c.n }
func (c *sentenceChunker) Reset()                          { *c = sentenceChunker{} }

// scheduleChunker is ElevenLabs' chunk_length_schedule as LiveKit's
// ElevenLabs plugin drives it when a schedule is given (auto_mode off): the
// client sends each word of tokenize.basic's word stream, as "word ", once
// the next word has begun (livekit-plugins-elevenlabs tts.py over
// token_stream.py BufferedWordStream and _basic_word.py split_words), and
// ElevenLabs generates what it holds once that reaches the next length of
// the schedule in characters, the last length repeating (its documented
// rule); the end of the turn flushes the rest.
type scheduleChunker struct {
	schedule []int
	k        int // releases so far
	n        int // bytes appended
	released int
	held     int  // characters ElevenLabs holds
	inWord   bool // the text ends inside a word
	chars    int  // characters of the word being streamed or just ended
	end      int  // offset where the last complete word ends (-1: none pending)
}

func (c *scheduleChunker) Append(_ time.Duration, text string) int {
	for i, r := range text {
		if isPySpace(r) {
			if c.inWord {
				c.inWord, c.end = false, c.n+i
			}
			continue
		}
		if !c.inWord {
			if c.end >= 0 { // a new word begins: the last one is sent
				c.send()
			}
			c.inWord, c.chars = true, 0
		}
		c.chars++
	}
	c.n += len(text)
	return c.released
}

// send hands ElevenLabs the word that ended at c.end.
func (c *scheduleChunker) send() {
	c.held += c.chars + 1
	if c.held >= c.schedule[min(c.k, len(c.schedule)-1)] {
		c.released, c.held = c.end, 0
		c.k++
	}
	c.end = -1
}

func (c *scheduleChunker) Deadline() (time.Duration, bool) { return 0, false }
func (c *scheduleChunker) Expire(time.Duration) int        { return c.released }

// Flush ends the stream: at the end of the turn, or where a tool call ends
// the LLM's reply. The reply after a tool call is a new generation, which
// LiveKit synthesizes on a new stream, with a new ElevenLabs context whose
// init packet carries the schedule again (LiveKit Agents 1.7.0,
// livekit-plugins-elevenlabs tts.py SynthesizeStream._run and
// _build_context_init_packet): the schedule starts over.
func (c *scheduleChunker) Flush() int {
	c.released, c.held, c.end, c.k = c.n, 0, -1, 0
	return c.n
}
func (c *scheduleChunker) Reset() { *c = scheduleChunker{schedule: c.schedule, end: -1} }

// timerChunker is Cartesia's managed buffering as Cartesia documents it
// (max_buffer_delay_ms, default 3000 ms: text is held until it makes a
// complete sentence or the delay since the oldest text held has passed):
// sentences end by the plain sentence rule (so never inside a URL, a
// decimal or a time such as 10:30), and the timer releases everything
// held. timer: is the same rule with a delay of one's choosing.
type timerChunker struct {
	max      time.Duration
	sentence sentenceChunker
	n        int
	released int
	since    time.Duration // arrival of the oldest unreleased text
	waiting  bool
}

func (c *timerChunker) Append(at time.Duration, text string) int {
	if c.waiting && at >= c.since+c.max {
		c.released, c.waiting = c.n, false // the timer fired before this arrival
	}
	before := c.released
	c.released = max(c.released, c.sentence.Append(at, text))
	c.n += len(text)
	switch {
	case c.released == c.n:
		c.waiting = false
	case !c.waiting || c.released > before:
		c.since, c.waiting = at, true
	}
	return c.released
}

func (c *timerChunker) Deadline() (time.Duration, bool) { return c.since + c.max, c.waiting }
func (c *timerChunker) Expire(time.Duration) int {
	c.released, c.waiting = c.n, false
	return c.released
}
func (c *timerChunker) Flush() int { c.released, c.waiting = c.n, false; return c.n }
func (c *timerChunker) Reset()     { *c = timerChunker{max: c.max} }
