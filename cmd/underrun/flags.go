package main

import (
	"fmt"
	"os"
	"strings"
	"time"

	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/tts"
)

// engineFlags are the speech-model flags every command that runs the engine
// shares.
type engineFlags struct {
	chunking     string
	wpm          float64
	tokenAudio   time.Duration
	ttsLatency   time.Duration
	ttsMode      string
	continuation time.Duration
	rtf          float64
	preroll      time.Duration
	interruption time.Duration
	stallFactor  float64
	voice        string
	stack        string
	transport    string
	filler       string
	fs           *pflag.FlagSet
}

func (f *engineFlags) bind(fs *pflag.FlagSet) {
	d := pipeline.DefaultConfig()
	f.fs = fs
	fs.StringVar(&f.voice, "voice", "", "voice profile `FILE` (underrun voice calibrate makes one): its rate, pauses and synthesizer latency")
	fs.StringVar(&f.stack, "stack", "", "framework + TTS `STACK` (underrun stacks lists them): its chunking and synthesizer timing; the flags given still win")
	fs.StringVar(&f.chunking, "chunking", pipeline.DefaultPolicy, "chunking `POLICY`: "+helpNames(tts.PolicyNames))
	fs.Float64Var(&f.wpm, "wpm", d.Voice.WPM, "speaking rate in words per minute (pauses at punctuation come on top)")
	fs.DurationVar(&f.tokenAudio, "token-audio", 0, "speak every token, text or not, for exactly this long (default: the voice model)")
	fs.DurationVar(&f.ttsLatency, "tts-latency", d.Synth.TTFA, "synthesizer time to first audio (in stream mode: of a turn's first chunk)")
	fs.StringVar(&f.ttsMode, "tts-mode", string(d.Synth.Timing()), "synthesizer timing `MODE`: "+helpNames(tts.ModeNames))
	fs.DurationVar(&f.continuation, "tts-continuation", d.Synth.Continuation, "stream mode: time to first audio of each later chunk (default: at most --tts-latency)")
	fs.Float64Var(&f.rtf, "rtf", d.Synth.RTF, "synthesizer real-time factor (0 instant, >1 slower than real time)")
	fs.StringVar(&f.transport, "transport", "none", "output `TRANSPORT` between player and listener (underrun transports): none, "+tts.TransportNames()+"; overrides after commas, e.g. pipecat,idle=0")
	fs.DurationVar(&f.preroll, "preroll", 0, "audio the player buffers before it starts (0: start at first audio)")
	fs.DurationVar(&f.interruption, "interruption", pipeline.DefaultInterruption, "shortest underrun counted as an interruption")
	fs.Float64Var(&f.stallFactor, "stall-factor", pipeline.DefaultStallFactor, "an ITL this many times the turn's median ITL is a stall")
	fs.StringVar(&f.filler, "filler", "none", "what the app plays in a tool call's silence: none, after:800ms:\"One moment.\" (a phrase), keepalive:800ms (a sound until speech resumes)")
}

// helpNames is a list of names with what each means in parentheses, for
// an error message, shortened to the names for a flag's help.
func helpNames(list string) string {
	var b strings.Builder
	depth := 0
	for _, r := range list {
		switch {
		case r == '(':
			depth++
		case r == ')':
			depth--
		case depth == 0:
			b.WriteRune(r)
		}
	}
	return strings.ReplaceAll(strings.Join(strings.Fields(b.String()), " "), " ,", ",")
}

// config builds the engine configuration, or a usage error naming the flag.
func (f *engineFlags) config() (pipeline.Config, error) {
	cfg := pipeline.DefaultConfig()
	if f.stack != "" {
		st, err := tts.LookupStack(f.stack)
		if err != nil {
			return cfg, usagef("--stack: %w", err)
		}
		if cfg.Policy, err = st.Policy(); err != nil {
			return cfg, usagef("--stack: %w", err)
		}
		cfg.Synth, cfg.Stack = st.Synth, st.Name
	}
	// with a stack, only the speech flags given replace its figures
	given := func(name string) bool { return f.stack == "" || f.changed(name) }
	if given("chunking") {
		p, err := tts.ParsePolicy(f.chunking)
		if err != nil {
			return cfg, usagef("--chunking: %w", err)
		}
		cfg.Policy = p
	}
	cfg.Voice.WPM = f.wpm
	cfg.Voice.TokenAudio = f.tokenAudio
	cfg.TokenAudio = f.tokenAudio
	if given("tts-latency") {
		cfg.Synth.TTFA = f.ttsLatency
	}
	if given("tts-continuation") {
		cfg.Synth.Continuation = f.continuation
	}
	if given("tts-mode") {
		mode, err := tts.ParseMode(f.ttsMode)
		if err != nil {
			return cfg, usagef("--tts-mode: %w", err)
		}
		cfg.Synth.Mode = mode
	}
	if given("rtf") {
		cfg.Synth.RTF = f.rtf
	}
	tr, err := tts.ParseTransport(f.transport)
	if err != nil {
		return cfg, usagef("--transport: %w", err)
	}
	cfg.Transport = tr
	cfg.Preroll = f.preroll
	cfg.Interruption = f.interruption
	cfg.StallFactor = f.stallFactor
	if cfg.Filler, err = pipeline.ParseFiller(f.filler); err != nil {
		return cfg, usagef("--filler: %w", err)
	}
	if f.voice != "" {
		if err := f.applyVoice(&cfg); err != nil {
			return cfg, err
		}
	}
	if !f.changed("tts-continuation") {
		cfg.Synth.Continuation = min(cfg.Synth.Continuation, cfg.Synth.TTFA)
	}
	switch {
	case !(f.wpm >= tts.MinWPM && f.wpm <= tts.MaxWPM):
		return cfg, usagef("--wpm: want a speaking rate from %v to %v words per minute, got %v", tts.MinWPM, tts.MaxWPM, f.wpm)
	case f.tokenAudio < 0 || f.tokenAudio > tts.MaxTokenAudio:
		return cfg, usagef("--token-audio: want how long one token is spoken, from 0 to %v, got %v", tts.MaxTokenAudio, f.tokenAudio)
	case f.ttsLatency < 0:
		return cfg, usagef("--tts-latency must not be negative, got %v", f.ttsLatency)
	case f.continuation < 0:
		return cfg, usagef("--tts-continuation must not be negative, got %v", f.continuation)
	}
	if err := cfg.Validate(); err != nil {
		return cfg, usageError{fmt.Errorf("speech model flags: %w", err)}
	}
	return cfg, nil
}

// changed reports whether the flag was given on the command line.
func (f *engineFlags) changed(name string) bool { return f.fs != nil && f.fs.Changed(name) }

// applyVoice loads the --voice profile into cfg; flags given on the
// command line still win, and so does --stack over the profile's
// synthesizer.
func (f *engineFlags) applyVoice(cfg *pipeline.Config) error {
	file, err := os.Open(f.voice)
	if err != nil {
		return usagef("--voice: %w", err)
	}
	defer file.Close()
	prof, err := tts.ReadProfile(file, f.voice)
	if err != nil {
		return usagef("--voice: %w", err)
	}
	changed := f.changed
	wpm, tokenAudio := cfg.Voice.WPM, cfg.Voice.TokenAudio
	cfg.Voice = prof.Voice
	if changed("wpm") {
		cfg.Voice.WPM = wpm
	}
	if changed("token-audio") {
		cfg.Voice.TokenAudio = tokenAudio
	}
	if prof.Synth != nil && f.stack == "" {
		if !changed("tts-latency") {
			cfg.Synth.TTFA = prof.Synth.TTFA
		}
		if !changed("rtf") {
			cfg.Synth.RTF = prof.Synth.RTF
		}
		if !changed("tts-mode") && prof.Synth.Mode != "" {
			cfg.Synth.Mode = prof.Synth.Mode
		}
		if !changed("tts-continuation") && prof.Synth.Mode == tts.ModeStream {
			cfg.Synth.Continuation = prof.Synth.Continuation
		}
	}
	return nil
}

// llmFlags are the --url family: an OpenAI-compatible server to stream
// tokens from, shared by capture and speak.
type llmFlags struct {
	url, model, api, prompts, keyEnv, clock, session string
	maxTokens                                        int
	noUsage                                          bool
	idle                                             time.Duration
}

// bind registers the family; urlUsage says what --url does in the command.
func (f *llmFlags) bind(fs *pflag.FlagSet, urlUsage string) {
	fs.StringVar(&f.url, "url", "", urlUsage)
	fs.StringVar(&f.model, "model", "", "`MODEL` to request from --url (required with --url)")
	fs.StringVar(&f.api, "api", "chat", "endpoint of --url: chat (/v1/chat/completions) or completions (/v1/completions)")
	fs.StringVar(&f.prompts, "prompts", "", "prompts for --url from `FILE` (JSONL or plain lines; default: a built-in set)")
	fs.IntVar(&f.maxTokens, "max-tokens", 0, "max_tokens of each request (0: the server's default)")
	fs.StringVar(&f.keyEnv, "api-key-env", "OPENAI_API_KEY", "environment variable holding the API key of --url (sent as a bearer token if set)")
	fs.StringVar(&f.clock, "clock", "kernel", "when a chunk from --url arrived: kernel (the kernel's receive stamp, where the system has one) or read (when the read returned)")
	fs.BoolVar(&f.noUsage, "no-usage", false, "do not ask --url for the usage chunk (for servers that reject stream_options)")
	fs.DurationVar(&f.idle, "idle-timeout", 2*time.Minute, "fail a stream from --url that sends nothing for this long (0: never)")
	fs.StringVar(&f.session, "session", "", "session `NAME` recorded with every turn")
}

// ttsFlags are the --tts-url family: an OpenAI-compatible /v1/audio/speech
// server to synthesize with, shared by speak and voice calibrate.
type ttsFlags struct {
	url, model, voice, format, keyEnv string
	rate                              int
}

// bind registers the family; urlUsage says what --tts-url does in the command.
func (f *ttsFlags) bind(fs *pflag.FlagSet, urlUsage string) {
	fs.StringVar(&f.url, "tts-url", "", urlUsage)
	fs.StringVar(&f.model, "tts-model", openai.DefaultSpeechModel, "`MODEL` of --tts-url")
	fs.StringVar(&f.voice, "tts-voice", openai.DefaultSpeechVoice, "`VOICE` of --tts-url")
	fs.StringVar(&f.format, "tts-format", openai.DefaultSpeechFormat, "response_format of --tts-url: pcm or wav")
	fs.IntVar(&f.rate, "tts-rate", openai.DefaultSpeechRate, "sample rate of --tts-format pcm")
	fs.StringVar(&f.keyEnv, "tts-api-key-env", "OPENAI_API_KEY", "environment variable holding the API key of --tts-url")
}

// speech checks --tts-url and the API key variable and returns the client the
// flags describe, or a usage error naming the flag.
func (f *ttsFlags) speech(fs *pflag.FlagSet) (*openai.Speech, error) {
	if _, err := openai.SpeechEndpoint(f.url); err != nil {
		return nil, usagef("--tts-url: %w", err)
	}
	key := os.Getenv(f.keyEnv)
	if key == "" && fs.Changed("tts-api-key-env") {
		return nil, usagef("--tts-api-key-env: the environment variable %s is not set", f.keyEnv)
	}
	return &openai.Speech{BaseURL: f.url, APIKey: key, Model: f.model, Voice: f.voice, Format: f.format, Rate: f.rate}, nil
}
