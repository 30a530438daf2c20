package pipeline

import (
	"errors"
	"fmt"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// Defaults of the engine.
const (
	DefaultInterruption = 150 * time.Millisecond
	DefaultStallFactor  = 3.0
	DefaultTTFA         = 100 * time.Millisecond
	DefaultRTF          = 0.1
	DefaultPolicy       = "word"
)

// Config describes the speech side of the pipeline.
type Config struct {
	// Voice turns text into audio time.
	Voice tts.Voice
	// Policy decides when buffered text goes to the synthesizer.
	Policy tts.Policy
	// Synth models the synthesizer.
	Synth tts.Synth
	// Stack names the tts.Stack the policy and synthesizer came from, if
	// any, for reports; it changes nothing in the engine.
	Stack string
	// Transport is the output transport between player and listener
	// (none when zero): with one, the underruns are the gaps the listener
	// hears through it (Playout.End).
	Transport tts.Transport
	// Preroll delays the player's start until this much audio is ready
	// (or the whole turn's speech, if shorter); zero starts at the first
	// audio.
	Preroll time.Duration
	// Interruption is the shortest underrun graded an interruption.
	Interruption time.Duration
	// SampleRate is the rate underruns are counted in samples at.
	SampleRate int
	// StallFactor is how many times the turn's median inter-token latency an
	// ITL must exceed to be called a stall.
	StallFactor float64
	// TokenAudio, when positive, speaks every token for exactly this long,
	// text or not, instead of the voice model: with token chunking, no
	// synthesizer latency and RTF 0 the player then plays each token for
	// TokenAudio the moment it arrives.
	TokenAudio time.Duration
	// Durations, when set, measures the audio of every released speech
	// chunk (a real synthesizer's durations) instead of the voice model,
	// which then only estimates text not yet released. Chunks holding
	// tokens without text keep the model's audio.
	Durations Durations
	// Measured, when set, gives what a real synthesizer did with each
	// speech chunk, as `underrun speak` measured it while the turn played:
	// a chunk it knows takes its audio, start, first audio (Ready) and last
	// audio (Done) from it instead of the voice model and Synth, so the
	// engine predicts the gaps of that very run. Chunks it does not know
	// keep the models; one it measured without audio is no speech chunk.
	// Within a measured chunk the player plays no further than the audio
	// that had arrived (SynthTiming.Arrivals), or, without arrivals, has
	// all of it from its first audio on (frames follow Synth.RTF only for
	// the pre-roll start).
	Measured MeasuredSynth
	// Filler is what the app plays in a tool call's silence (none when
	// zero): reports say what it covers of each (Filler.Cover), and a
	// phrase that outlasts its silence holds back the reply, which the
	// player then plays from the phrase's end, the turn's later gaps
	// moved with it.
	Filler Filler
}

// Durations measures how long a synthesizer speaks a text.
type Durations interface {
	Duration(text string) (time.Duration, error)
}

// ContextDurations measures a speech chunk within the whole turn's text:
// a real engine speaks a word inside its sentence shorter than alone.
// InContext returns the audio of text[from:to] spoken as part of text.
// PlayTurn, which knows the whole turn, measures every chunk so when the
// turn's tokens all carry text; chunks pushed one by one (the live Guard)
// are measured alone.
type ContextDurations interface {
	Durations
	InContext(text string, from, to int) (time.Duration, error)
}

// SpokenText returns the text a turn's chunks speak, in which speech
// chunks' byte offsets (SpeechChunk.From, To) count: the chunks' text in
// order, reasoning left out, tts.TextlessToken for each chunk of tokens
// without text.
func SpokenText(t *Turn) string {
	var b []byte
	for i := range t.Chunks {
		if c := &t.Chunks[i]; !c.Reasoning {
			b = append(b, spoken(c)...)
		}
	}
	return string(b)
}

// spoken is the text a chunk adds to the turn's spoken text.
func spoken(c *Chunk) string {
	if c.Textless {
		return tts.TextlessToken
	}
	return c.Text
}

// MeasuredSynth answers what a real synthesizer did with the speech chunk
// of turn that covers bytes [from, to) of the turn's spoken text (the
// offsets of SpeechChunk.From and To).
type MeasuredSynth interface {
	Measured(turn string, from, to int) (SynthTiming, bool)
}

// SynthTiming is one speech chunk as a real synthesizer handled it, in
// times since the turn began: when the synthesizer was given it (Start),
// when its first audio reached the player (Ready), when its last audio did
// (Done), and how long its audio is. Arrivals, when set, are the pieces in
// which the audio reached the player, in order (the first at Ready; their
// audio adds up to Audio).
type SynthTiming struct {
	Start, Ready, Done, Audio time.Duration
	Arrivals                  []Arrival
}

// Arrival is a piece of a chunk's audio reaching the player: At, with
// Audio of speech in it.
type Arrival struct {
	At, Audio time.Duration
}

// DefaultConfig returns a word-streaming synthesizer with 100 ms to first
// audio and RTF 0.1, the built-in voice, immediate start and a 150 ms
// interruption threshold.
func DefaultConfig() Config {
	p, _ := tts.ParsePolicy(DefaultPolicy)
	return Config{
		Voice:        tts.DefaultVoice(),
		Policy:       p,
		Synth:        tts.Synth{Mode: tts.DefaultMode, TTFA: DefaultTTFA, Continuation: tts.DefaultContinuation, RTF: DefaultRTF},
		Interruption: DefaultInterruption,
		SampleRate:   tts.DefaultSampleRate,
		StallFactor:  DefaultStallFactor,
	}
}

// ErrConfig reports an engine configuration that cannot run.
var ErrConfig = errors.New("invalid engine configuration")

// Validate reports the first problem with the configuration.
func (c Config) Validate() error {
	if err := c.Voice.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.Synth.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.Transport.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	if err := c.Filler.Validate(); err != nil {
		return fmt.Errorf("%w: %w", ErrConfig, err)
	}
	switch {
	case c.Policy == nil:
		return fmt.Errorf("%w: no chunking policy", ErrConfig)
	case c.Preroll < 0:
		return fmt.Errorf("%w: pre-roll must not be negative, got %v", ErrConfig, c.Preroll)
	case c.Interruption <= 0:
		return fmt.Errorf("%w: interruption threshold must be positive, got %v", ErrConfig, c.Interruption)
	case c.SampleRate <= 0:
		return fmt.Errorf("%w: sample rate must be positive, got %d", ErrConfig, c.SampleRate)
	case c.TokenAudio < 0 || c.TokenAudio > tts.MaxTokenAudio:
		return fmt.Errorf("%w: token audio must be from 0 to %v, got %v", ErrConfig, tts.MaxTokenAudio, c.TokenAudio)
	case !(c.StallFactor >= 1):
		return fmt.Errorf("%w: stall factor must be at least 1, got %v", ErrConfig, c.StallFactor)
	}
	return nil
}
