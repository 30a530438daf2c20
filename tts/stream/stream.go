package stream

import (
	"context"
	"errors"
	"io"
	"time"
)

// Piece is audio a synthesizer has produced: mono samples in [-1, 1] at
// Rate samples per second, and when they arrived.
type Piece struct {
	Samples []float32
	Rate    int
	// At is when the bytes of the piece arrived (the read that returned
	// them).
	At time.Time
	// Text is, for a Context, the index of the Speak call whose text the
	// audio says (see Context); 0 for an Utterance.
	Text int
}

// Utterance is the audio of one synthesis as it is produced. Next returns
// the next piece as soon as it has arrived, io.EOF once the synthesizer
// has finished, or another error when it failed: the pieces before the
// error stand, and an error is final. Close stops the synthesis (a Next
// blocked in it returns) and releases what it holds; it may be called at
// any time, more than once, and must be called. An Utterance is used by
// one goroutine, except that Close may be called from another.
type Utterance interface {
	Next() (Piece, error)
	Close() error
}

// Context is one synthesis context for a turn: its texts are spoken one
// after another into one continuous stream of audio, as a streaming TTS
// continues a turn. Speak hands over the next text (the i-th call's audio
// carries Piece.Text i) and does not wait for its audio; Next returns the
// audio as it comes, like an Utterance; Close ends the input: Next
// returns io.EOF once the last text's audio is out. Abort stops at once.
// Speak and Close are called by one goroutine, Next by another.
//
// Which text a piece belongs to is known as well as the synthesizer
// tells: a process that only streams samples (espeak-ng) gives the audio
// read after a text was handed over to that text, so a text handed over
// while the one before it is still being synthesized takes over the rest
// of that one's audio. The audio is the same stream either way; only its
// split between the texts moves, and only where one text's audio runs
// straight into the next one's, never across a moment the audio stopped.
type Context interface {
	Speak(text string) error
	Next() (Piece, error)
	Close() error
	Abort() error
}

// Synthesizer turns a text into audio, streamed as it is produced.
// Synthesize sends the request and returns at once or when the
// synthesizer has accepted it (an HTTP response's headers); failures after
// that come from the Utterance. It is safe for concurrent use.
type Synthesizer interface {
	// Name says which synthesizer it is, for reports.
	Name() string
	Synthesize(ctx context.Context, text string) (Utterance, error)
}

// ContextSynthesizer is a Synthesizer that can also keep one synthesis
// context per turn.
type ContextSynthesizer interface {
	Synthesizer
	OpenContext(ctx context.Context) (Context, error)
}

// ErrSynthesis reports a synthesis that failed: the synthesizer refused
// the text, died, or its audio stream broke off.
var ErrSynthesis = errors.New("synthesis failed")

// Each reads u to its end, calling f with every piece in order: nil at the
// end of the audio, the error that ended it otherwise (the pieces before it
// were given to f).
func Each(u Utterance, f func(Piece)) error {
	for {
		p, err := u.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if err != nil {
			return err
		}
		f(p)
	}
}
