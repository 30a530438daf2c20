package tts

import (
	"context"
	"errors"
	"fmt"
	"math"
	"sync"
	"time"
)

// Audio is mono PCM: Samples in [-1, 1] at Rate samples per second.
type Audio struct {
	Samples []float32
	Rate    int
}

// Duration returns the length of the audio.
func (a Audio) Duration() time.Duration {
	if a.Rate <= 0 {
		return 0
	}
	return time.Duration(math.Round(float64(len(a.Samples)) * float64(time.Second) / float64(a.Rate)))
}

// Engine turns text into audio. Synthesize speaks one text as one
// utterance; it returns an error wrapping ErrEngine when the engine fails,
// and ctx's error when ctx ends first. An Engine is safe for concurrent
// use.
type Engine interface {
	// Name says which engine it is, for reports ("espeak-ng").
	Name() string
	// Speech reports whether the audio is speech; a false value marks a
	// stand-in signal that only has the timing of speech.
	Speech() bool
	Synthesize(ctx context.Context, text string) (Audio, error)
}

// ErrEngine reports a synthesis that failed.
var ErrEngine = errors.New("speech engine failed")

// ErrNoEngine reports an engine that is not installed.
var ErrNoEngine = errors.New("speech engine not installed")

// EngineFunc adapts a function to Engine.
type EngineFunc struct {
	Label    string
	IsSpeech bool
	Func     func(ctx context.Context, text string) (Audio, error)
}

// Name returns the label.
func (f EngineFunc) Name() string { return f.Label }

// Speech returns IsSpeech.
func (f EngineFunc) Speech() bool { return f.IsSpeech }

// Synthesize calls Func.
func (f EngineFunc) Synthesize(ctx context.Context, text string) (Audio, error) {
	return f.Func(ctx, text)
}

var (
	_ Engine = EngineFunc{}
	_ Engine = (*Espeak)(nil)
	_ Engine = (*Synthetic)(nil)
)

// Engine names for the command line.
const (
	EngineAuto      = "auto"
	EngineEspeak    = "espeak-ng"
	EngineSynthetic = "synthetic"
	// EngineNames lists them for help texts.
	EngineNames = "auto, espeak-ng, synthetic"
)

// OpenEngine returns the engine named on the command line: espeak-ng,
// synthetic (a voice-like signal with the timing of voice v, not speech),
// or auto (espeak-ng when it is installed, else synthetic).
func OpenEngine(name string, v Voice, rate int) (Engine, error) {
	switch name {
	case EngineEspeak:
		return NewEspeak()
	case EngineSynthetic:
		return NewSynthetic(v, rate)
	case EngineAuto, "":
		if e, err := NewEspeak(); err == nil {
			return e, nil
		}
		return NewSynthetic(v, rate)
	}
	return nil, fmt.Errorf("unknown speech engine %q: want one of %s", name, EngineNames)
}

// Cache remembers the audio an Engine made for each text, so that the
// durations measured for the playout engine and the audio rendered later
// are the same audio. Its Duration method makes it a
// pipeline.Config.Durations. A Cache is safe for concurrent use.
type Cache struct {
	engine Engine
	voice  Voice // apportions sentences to chunks (InContext)
	ctx    context.Context
	mu     sync.Mutex
	audio  map[string]Audio
}

// NewCache returns an empty cache over engine; ctx bounds every synthesis
// it runs.
func NewCache(ctx context.Context, engine Engine) *Cache {
	return &Cache{engine: engine, ctx: ctx, audio: map[string]Audio{}}
}

// Engine returns the engine behind the cache.
func (c *Cache) Engine() Engine { return c.engine }

// Audio returns the engine's audio for text, synthesizing it once.
func (c *Cache) Audio(text string) (Audio, error) {
	c.mu.Lock()
	a, ok := c.audio[text]
	c.mu.Unlock()
	if ok {
		return a, nil
	}
	a, err := c.engine.Synthesize(c.ctx, text)
	if err != nil {
		return Audio{}, err
	}
	c.mu.Lock()
	c.audio[text] = a
	c.mu.Unlock()
	return a, nil
}

// Duration returns how long the engine speaks text.
func (c *Cache) Duration(text string) (time.Duration, error) {
	a, err := c.Audio(text)
	if err != nil {
		return 0, err
	}
	return a.Duration(), nil
}

// Fit resamples a to exactly n samples (linear interpolation): the
// audio of a speech chunk laid into the slot the player gave it.
func Fit(a Audio, n int) []float32 {
	out := make([]float32, max(0, n))
	if n <= 0 || len(a.Samples) == 0 {
		return out
	}
	if len(a.Samples) == n {
		copy(out, a.Samples)
		return out
	}
	if n == 1 {
		out[0] = a.Samples[0]
		return out
	}
	step := float64(len(a.Samples)-1) / float64(n-1)
	last := len(a.Samples) - 1
	for i := range out {
		x := float64(i) * step
		j := int(x)
		if j >= last {
			out[i] = a.Samples[last]
			continue
		}
		f := float32(x - float64(j))
		out[i] = a.Samples[j]*(1-f) + a.Samples[j+1]*f
	}
	return out
}
