package trace

import (
	"fmt"
	"time"

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

// checkLimits reports the first way a turn exceeds the limits, in words
// that name the chunk; the reader adds where in the file it is.
func checkLimits(t *pipeline.Turn) error {
	if t.OutputTokens < 0 || t.OutputTokens > MaxTurnTokens {
		return fmt.Errorf("%d output tokens; want at most %d in one turn", t.OutputTokens, MaxTurnTokens)
	}
	total := 0
	for i, c := range t.Chunks {
		if c.At < 0 || c.At > MaxTime {
			return fmt.Errorf("chunk %d arrives at %v; want a time from 0 to %v after the request", i, c.At, MaxTime)
		}
		if c.Tokens < 0 || c.Tokens > MaxTurnTokens {
			return fmt.Errorf("chunk %d has %d tokens; want at most %d", i, c.Tokens, MaxTurnTokens)
		}
		if total += c.TokenCount(); total > MaxTurnTokens {
			return fmt.Errorf("chunks 0 to %d carry over %d tokens; want at most %d in one turn", i, MaxTurnTokens, MaxTurnTokens)
		}
	}
	return nil
}
