package tts

import (
	"errors"
	"fmt"
	"math"
	"strings"
	"time"
)

// Defaults of the synthesizer model.
const (
	// DefaultFrame is the unit in which a synthesizer hands audio to the
	// player; with RTF above 1 the player can starve between frames.
	DefaultFrame = 20 * time.Millisecond
	// DefaultSampleRate is the audio sample rate underruns are measured in.
	DefaultSampleRate = 24000
	// DefaultContinuation is what a later chunk of a turn waits in stream
	// mode before its first audio: one network round trip on the open
	// socket (NetworkRTT). The vendors publish no continuation figure; see
	// NetworkRTT for why this is a lower bound.
	DefaultContinuation = NetworkRTT
	// NetworkRTT is the network round trip the named stacks add to each
	// vendor's published model latency for a turn's first audio: a client
	// in a cloud region near the vendor's (ElevenLabs gives 20-200 ms over
	// the public internet). It is also the default continuation: text sent
	// into a context that is already speaking comes back as audio no
	// sooner than one round trip, so it is a lower bound.
	NetworkRTT = 50 * time.Millisecond
)

// Mode says how a synthesizer is driven through a turn's chunks, which
// decides what each chunk's first audio waits for.
type Mode string

// The timing modes. Chunk c is released at s_c with audio a_c; L is the
// time to first audio (Synth.TTFA), C the continuation latency
// (Synth.Continuation), RTF the real-time factor.
const (
	// ModeStream is one synthesis context per turn, fed every chunk as it
	// is released, as Pipecat and LiveKit drive the ElevenLabs and
	// Cartesia websockets: the first chunk's audio is ready L after its
	// release, each later chunk's C after its release, but never before
	// the audio of the chunk before it is all produced. The context
	// produces audio at RTF whatever the player does:
	// ready_c = max(s_c + L_c, done_{c-1}), done_c = ready_c + a_c x RTF,
	// with L_0 = L and L_c = C for c > 0.
	ModeStream Mode = "stream"
	// ModeRequest is one request per chunk, one after another, each paying
	// the full time to first audio, as LiveKit's StreamAdapter drives a
	// non-streaming TTS and Pipecat its HTTP services:
	// start_c = max(s_c, done_{c-1}), ready_c = start_c + L,
	// done_c = ready_c + a_c x RTF.
	ModeRequest Mode = "request"
	// ModeParallel is one request per chunk, each sent as soon as its chunk
	// is released, the answers played in order:
	// ready_c = s_c + L, done_c = ready_c + a_c x RTF.
	ModeParallel Mode = "parallel"
	// DefaultMode is the mode of a Synth whose Mode is empty.
	DefaultMode = ModeStream
)

// ModeNames lists the modes for help texts.
const ModeNames = "stream (one context per turn; later chunks wait --tts-continuation), " +
	"request (a request per chunk, one after another), parallel (a request per chunk, all at once)"

// ErrSynth reports synthesizer parameters that cannot describe one.
var ErrSynth = errors.New("invalid synthesizer")

// ParseMode parses a timing mode as written on the command line or in a
// file; the empty string is DefaultMode.
func ParseMode(s string) (Mode, error) {
	switch m := Mode(strings.ToLower(strings.TrimSpace(s))); m {
	case "":
		return DefaultMode, nil
	case ModeStream, ModeRequest, ModeParallel:
		return m, nil
	}
	return "", fmt.Errorf("%w: unknown timing mode %q: want stream, request or parallel", ErrSynth, s)
}

// Synth models the synthesizer that speaks one turn's chunks. How each
// chunk's first audio is paid for is its Mode; once a chunk's first frame
// is ready, each later frame follows after Frame x RTF, so its audio is
// all produced a_c x RTF after its first audio. RTF 0 means all audio is
// ready at once; above 1 means slower than real time.
type Synth struct {
	// Mode is how chunks are sent (empty: DefaultMode).
	Mode Mode `json:"mode,omitempty" yaml:"mode,omitempty"`
	// TTFA is the time to first audio: of every chunk in request and
	// parallel mode, of a turn's first chunk in stream mode.
	TTFA time.Duration `json:"ttfa_ns" yaml:"ttfa"`
	// Continuation is, in stream mode, what every chunk after a turn's
	// first waits after its release before its first audio.
	Continuation time.Duration `json:"continuation_ns,omitempty" yaml:"continuation,omitempty"`
	// RTF is the real-time factor: seconds of synthesis per second of
	// audio.
	RTF float64 `json:"rtf" yaml:"rtf"`
	// Frame is the unit of audio handed to the player (0: DefaultFrame).
	Frame time.Duration `json:"frame_ns,omitempty" yaml:"frame,omitempty"`
}

// Validate reports the first parameter out of range.
func (s Synth) Validate() error {
	if _, err := ParseMode(string(s.Mode)); err != nil {
		return err
	}
	switch {
	case s.TTFA < 0:
		return fmt.Errorf("%w: time to first audio must not be negative, got %v", ErrSynth, s.TTFA)
	case s.Continuation < 0:
		return fmt.Errorf("%w: continuation latency must not be negative, got %v", ErrSynth, s.Continuation)
	case !(s.RTF >= 0) || math.IsInf(s.RTF, 0):
		return fmt.Errorf("%w: real-time factor must be a number >= 0, got %v", ErrSynth, s.RTF)
	case s.Frame < 0:
		return fmt.Errorf("%w: frame must not be negative, got %v", ErrSynth, s.Frame)
	}
	return nil
}

// Timing returns the mode the synthesizer runs in: Mode, or DefaultMode
// when it is empty.
func (s Synth) Timing() Mode {
	if s.Mode == "" {
		return DefaultMode
	}
	return s.Mode
}

// Latency returns how long chunk c of a turn (0 the first) waits after its
// release for its first audio when the synthesizer is otherwise idle.
func (s Synth) Latency(c int) time.Duration {
	if c > 0 && s.Timing() == ModeStream {
		return s.Continuation
	}
	return s.TTFA
}

// FrameSize returns Frame, or DefaultFrame when it is zero.
func (s Synth) FrameSize() time.Duration {
	if s.Frame > 0 {
		return s.Frame
	}
	return DefaultFrame
}

// Produce returns how long the synthesizer takes to produce audio d after
// its first frame: d x RTF.
func (s Synth) Produce(d time.Duration) time.Duration {
	return time.Duration(float64(d) * s.RTF)
}

// String describes the synthesizer as reports print it, e.g. "stream,
// first audio 100ms, continuation 50ms, RTF 0.1".
func (s Synth) String() string {
	switch s.Timing() {
	case ModeStream:
		return fmt.Sprintf("stream, first audio %v, continuation %v, RTF %.2g", s.TTFA, s.Continuation, s.RTF)
	default:
		return fmt.Sprintf("%s, first audio %v per chunk, RTF %.2g", s.Timing(), s.TTFA, s.RTF)
	}
}
