package main

import (
	"fmt"
	"time"

	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// engineFlags are the speech-model flags every command that runs the engine
// shares.
type engineFlags struct {
	chunking     string
	wpm          float64
	tokenAudio   time.Duration
	ttsLatency   time.Duration
	rtf          float64
	preroll      time.Duration
	interruption time.Duration
	stallFactor  float64
}

func (f *engineFlags) bind(fs *pflag.FlagSet) {
	d := pipeline.DefaultConfig()
	fs.StringVar(&f.chunking, "chunking", pipeline.DefaultPolicy, "chunking policy: "+tts.PolicyNames)
	fs.Float64Var(&f.wpm, "wpm", d.Voice.WPM, "speaking rate in words per minute (pauses at punctuation come on top)")
	fs.DurationVar(&f.tokenAudio, "token-audio", 0, "speak every token, text or not, for exactly this long (default: text by the voice model, text-less tokens at one word's time / 1.33)")
	fs.DurationVar(&f.ttsLatency, "tts-latency", d.Synth.TTFA, "synthesizer time to first audio of each chunk")
	fs.Float64Var(&f.rtf, "rtf", d.Synth.RTF, "synthesizer real-time factor (0 instant, >1 slower than real time)")
	fs.DurationVar(&f.preroll, "preroll", 0, "audio the player buffers before it starts (0: start at first audio)")
	fs.DurationVar(&f.interruption, "interruption", pipeline.DefaultInterruption, "shortest underrun counted as an interruption")
	fs.Float64Var(&f.stallFactor, "stall-factor", pipeline.DefaultStallFactor, "an ITL this many times the turn's mean is a stall")
}

// config builds the engine configuration, or a usage error naming the flag.
func (f *engineFlags) config() (pipeline.Config, error) {
	cfg := pipeline.DefaultConfig()
	p, err := tts.ParsePolicy(f.chunking)
	if err != nil {
		return cfg, usagef("--chunking: %w", err)
	}
	cfg.Policy = p
	cfg.Voice.WPM = f.wpm
	cfg.Voice.TokenAudio = f.tokenAudio
	cfg.TokenAudio = f.tokenAudio
	cfg.Synth.TTFA = f.ttsLatency
	cfg.Synth.RTF = f.rtf
	cfg.Preroll = f.preroll
	cfg.Interruption = f.interruption
	cfg.StallFactor = f.stallFactor
	switch {
	case f.tokenAudio < 0:
		return cfg, usagef("--token-audio must not be negative, got %v", f.tokenAudio)
	case f.ttsLatency < 0:
		return cfg, usagef("--tts-latency must not be negative, got %v", f.ttsLatency)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{fmt.Errorf("speech model flags: %w", err)}
	}
	return cfg, nil
}
