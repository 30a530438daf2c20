package trace

import (
	"fmt"
	"time"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/pipeline"
)

// The limits every reader holds a trace to, so that what it reads fits the
// rest of the tool (the engine's arithmetic in nanoseconds, the audio a
// turn renders to, a mock that streams it again). A file past them is bad
// input, named with its line or field, not a crash later on.
const (
	// MaxTime bounds every arrival time and gap: a request of a year is a
	// broken file, and a year of nanoseconds plus any synthesizer latency
	// stays far from overflowing an int64.
	MaxTime = maxSeconds * time.Second
	// MaxTurnTokens bounds the tokens of one chunk and of one turn (its
	// chunks together, and the count the server reported): twice the
	// longest output any served model allows today.
	MaxTurnTokens = 1 << 18
	// MaxChunkText bounds the text of one chunk, in bytes: escaped as JSON
	// (at most six bytes a byte) its record still fits in MaxLine, so a
	// trace written of it reads back.
	MaxChunkText = MaxLine / 8
	// MaxErrorText bounds the error text a recorder keeps of a turn (a
	// server's error body, a client's turn_end): what is longer is cut.
	MaxErrorText = 16 << 10
	// MaxName bounds a turn's, session's or tool's name, in bytes.
	MaxName = 256
	// MaxTextBytes bounds one string of a benchmark file (a request's
	// generated text, an error, a recorded response), so that reading a
	// request holds a few times this much at most.
	MaxTextBytes = 16 << 20
	// MaxStartUnixNs bounds a request's start time, in nanoseconds since
	// 1970 (2^62: in 2116). Starts from 0 to it lie less than 2^62 ns
	// apart, so a replay that lays turns out by their starts counts in a
	// Duration without overflow.
	MaxStartUnixNs = 1 << 62
)

// checkStart reports a start time, in nanoseconds since 1970, out of
// 0..MaxStartUnixNs.
func checkStart(ns int64) error {
	if ns < 0 || ns > MaxStartUnixNs {
		return fmt.Errorf("start time %d ns since 1970; want from 0 to %d (the year 2116)", ns, int64(MaxStartUnixNs))
	}
	return nil
}

// maxSeconds is MaxTime in seconds.
const maxSeconds = 365 * 24 * 3600

// TurnBudget counts what has entered a turn (its chunks, their tokens)
// against the limits, so that whatever records a turn (a live stream, the
// monitor, a reader) refuses the chunk that would pass them, with the
// reason, before anything of it is stored. The zero TurnBudget is an
// empty turn's.
type TurnBudget struct {
	// Chunks and Tokens are what has been admitted so far.
	Chunks, Tokens int
}

// Admit counts chunk c in, or returns why it would pass the limits (the
// budget is then unchanged): a chunk of more than MaxTurnTokens tokens or
// MaxChunkText bytes of text, or a turn of more than MaxTurnTokens tokens
// (a chunk counts at least one).
func (b *TurnBudget) Admit(c pipeline.Chunk) error {
	switch {
	case c.Tokens < 0 || c.Tokens > MaxTurnTokens:
		return fmt.Errorf("chunk %d has %d tokens; want a count from 0 to %d", b.Chunks, c.Tokens, MaxTurnTokens)
	case len(c.Text) > MaxChunkText:
		return fmt.Errorf("chunk %d has %d bytes of text; want at most %d in one chunk", b.Chunks, len(c.Text), MaxChunkText)
	case b.Tokens+c.TokenCount() > MaxTurnTokens:
		return fmt.Errorf("chunk %d takes the turn past %d tokens; want at most that in one turn", b.Chunks, MaxTurnTokens)
	}
	b.Chunks++
	b.Tokens += c.TokenCount()
	return nil
}

// CheckOutputTokens reports a server's or client's count of a turn's
// output tokens that is out of 0..MaxTurnTokens.
func CheckOutputTokens(n int) error {
	if n < 0 || n > MaxTurnTokens {
		return fmt.Errorf("%d output tokens; want a count from 0 to %d in one turn", n, MaxTurnTokens)
	}
	return nil
}

// CutText returns s cut to at most n bytes, at a character boundary, with
// "..." after a cut.
func CutText(s string, n int) string {
	if len(s) <= n {
		return s
	}
	cut := n - len("...")
	for cut > 0 && !utf8.RuneStart(s[cut]) {
		cut--
	}
	return s[:max(cut, 0)] + "..."
}

// limitsError is a benchmark reader's error for turn t past the limits
// (nil within them): the input's name, the turn and the reason.
func limitsError(name string, t *pipeline.Turn) error {
	if err := checkLimits(t); err != nil {
		return fmt.Errorf("%w: %s: turn %q: %w", ErrFormat, name, t.ID, err)
	}
	return nil
}

// checkLimits reports the first way a turn exceeds the limits, in words
// that name the chunk; the reader adds where in the file it is.
func checkLimits(t *pipeline.Turn) error {
	if err := CheckOutputTokens(t.OutputTokens); err != nil {
		return err
	}
	var b TurnBudget
	for i, c := range t.Chunks {
		if c.At < 0 || c.At > MaxTime {
			return fmt.Errorf("chunk %d arrives at %v; want a time from 0 to %v after the request", i, c.At, MaxTime)
		}
		if err := b.Admit(c); err != nil {
			return err
		}
	}
	return nil
}
