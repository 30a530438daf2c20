package tts

import (
	"errors"
	"fmt"
	"math"
	"time"
)

// Defaults of the synthesizer model.
const (
	// DefaultFrame is the unit in which a synthesizer hands audio to the
	// player; with RTF above 1 the player can starve between frames.
	DefaultFrame = 20 * time.Millisecond
	// DefaultSampleRate is the audio sample rate underruns are measured in.
	DefaultSampleRate = 24000
)

// ErrSynth reports synthesizer parameters that cannot describe one.
var ErrSynth = errors.New("invalid synthesizer")

// Synth models a streaming synthesizer that handles one turn's chunks in
// order. A chunk submitted at s starts when the previous chunk is done,
// its first frame is ready TTFA after it starts, and each later frame
// follows after Frame x RTF, so the chunk is done TTFA + duration x RTF
// after it starts. RTF 0 means all audio is ready at TTFA; above 1 means
// slower than real time.
type Synth struct {
	TTFA  time.Duration `json:"ttfa_ns" yaml:"ttfa"`
	RTF   float64       `json:"rtf" yaml:"rtf"`
	Frame time.Duration `json:"frame_ns,omitempty" yaml:"frame,omitempty"`
}

// Validate reports the first parameter out of range.
func (s Synth) Validate() error {
	switch {
	case s.TTFA < 0:
		return fmt.Errorf("%w: time to first audio must not be negative, got %v", ErrSynth, s.TTFA)
	case !(s.RTF >= 0) || math.IsInf(s.RTF, 0):
		return fmt.Errorf("%w: real-time factor must be a number >= 0, got %v", ErrSynth, s.RTF)
	case s.Frame < 0:
		return fmt.Errorf("%w: frame must not be negative, got %v", ErrSynth, s.Frame)
	}
	return nil
}

// FrameSize returns Frame, or DefaultFrame when it is zero.
func (s Synth) FrameSize() time.Duration {
	if s.Frame > 0 {
		return s.Frame
	}
	return DefaultFrame
}

// Busy returns how long the synthesizer works on a chunk of audio d.
func (s Synth) Busy(d time.Duration) time.Duration {
	return s.TTFA + time.Duration(float64(d)*s.RTF)
}
