package tts

import (
	"errors"
	"fmt"
	"strings"
	"time"
)

// Stack is a voice framework driving a TTS service, as one word: the
// chunking policy the framework applies, the timing mode its code path
// amounts to, and the service's latencies from its vendor's published
// figures. Every figure names its source.
type Stack struct {
	// Name is the stack as written on the command line (--stack) and in
	// scenario files (tts.stack).
	Name string `json:"name"`
	// Summary says in a few words what the stack is, for report headers.
	Summary string `json:"summary"`
	// Framework is the framework, its version and the code path modelled:
	// file, class and what it does with a turn's text.
	Framework string `json:"framework"`
	// Service is the TTS service and model the framework uses by default.
	Service string `json:"service"`
	// Chunking is the chunking policy, as ParsePolicy reads it.
	Chunking string `json:"chunking"`
	// Synth is the mode and latencies; RTF is DefaultStackRTF.
	Synth Synth `json:"synth"`
	// Sources say where each figure comes from.
	Sources []string `json:"sources"`
	// Differs says where the model is known to differ from the real stack.
	Differs string `json:"differs,omitempty"`
}

// DefaultStackRTF is the real-time factor of every stack: no vendor
// publishes how much faster than real time it produces audio, and the
// hosted services produce it many times faster than it plays, so the
// engine's default stands in.
const DefaultStackRTF = 0.1

// The published figures the stacks are built from.
const (
	// ElevenLabsFlash is ElevenLabs' model latency of eleven_flash_v2_5
	// ("~75ms", elevenlabs.io/docs/overview/models), inference only.
	ElevenLabsFlash = 75 * time.Millisecond
	// ElevenLabsTurbo is ElevenLabs' figure for eleven_turbo_v2_5
	// ("generating audio in around 300ms", help.elevenlabs.io article
	// 19954594946705).
	ElevenLabsTurbo = 300 * time.Millisecond
	// CartesiaSonic is Cartesia's model latency of Sonic ("achieves 90ms
	// model latency", published for sonic-2 in docs.cartesia.ai's model
	// list; none is published for sonic-3 or sonic-3.5).
	CartesiaSonic = 90 * time.Millisecond
	// OpenAISpeech is the mean time from a /v1/audio/speech request to its
	// first audio that Picovoice's open benchmark measured for OpenAI TTS
	// (github.com/Picovoice/tts-latency-benchmark,
	// results/data/results_tts_openai_tts.json at commit 4839284:
	// mean_tts_process_seconds 1.0709 over 187 sentences). OpenAI
	// publishes no latency figure; this one includes the network.
	OpenAISpeech = 1071 * time.Millisecond
)

// Source notes shared by the stacks.
const (
	srcNetwork      = "network round trip 50 ms (tts.NetworkRTT): ElevenLabs gives 20-200 ms over the public internet (elevenlabs.io/docs/eleven-api/concepts/latency)"
	srcContinuation = "continuation 50 ms: one round trip on the open socket; no vendor publishes a continuation figure"
	srcFlash        = "eleven_flash_v2_5 ~75 ms model latency (elevenlabs.io/docs/overview/models)"
	srcTurbo        = "eleven_turbo_v2_5 around 300 ms (help.elevenlabs.io/hc/en-us/articles/19954594946705)"
	srcSonic        = "Sonic 90 ms model latency (docs.cartesia.ai/2024-11-13/build-with-cartesia/models, sonic-2; none published for sonic-3)"
	srcOpenAI       = "OpenAI TTS 1071 ms mean request to first audio, measured by github.com/Picovoice/tts-latency-benchmark (results_tts_openai_tts.json, commit 4839284); OpenAI publishes none"
	srcRTF          = "RTF 0.1: no vendor publishes one"
	pipecatVersion  = "Pipecat 1.7 (main at acead05, 2026-08-21)"
	livekitVersion  = "LiveKit Agents 1.7.0 (da6af86, 2026-08-22)"
	differsContinue = "a continuation after the context fell idle also waits the model's inference, so gaps after long stalls can be longer than modelled; "
)

// Stacks are the named stacks, in the order `underrun stacks` lists them.
var Stacks = []Stack{
	websocketStack(Stack{
		Name:    "pipecat-elevenlabs",
		Summary: "Pipecat ElevenLabsTTSService (websocket) + ElevenLabs Flash v2.5",
		Framework: pipecatVersion + ": services/elevenlabs/tts.py ElevenLabsTTSService: the multi-stream-input websocket, one context per LLM turn " +
			"(TTSService._turn_context_id), sentences from the aggregator sent as they complete, auto_mode on, flushed at the turn's end",
		Service:  "ElevenLabs eleven_flash_v2_5 (Pipecat's default model)",
		Chunking: "pipecat",
	}, ElevenLabsFlash, srcFlash, "auto_mode's own server-side buffering is not modelled."),
	websocketStack(Stack{
		Name:    "pipecat-cartesia",
		Summary: "Pipecat CartesiaTTSService (websocket) + Cartesia Sonic",
		Framework: pipecatVersion + ": services/cartesia/tts.py CartesiaTTSService: the websocket, one context_id per LLM turn, each sentence sent with " +
			"continue: true and max_buffer_delay_ms 0 (sentence aggregation), continue: false at the turn's end",
		Service:  "Cartesia sonic-3.5 (Pipecat's default model)",
		Chunking: "pipecat",
	}, CartesiaSonic, srcSonic, "Cartesia publishes no latency for sonic-3.5; the sonic-2 figure stands in."),
	{
		Name:    "pipecat-elevenlabs-http",
		Summary: "Pipecat ElevenLabsHttpTTSService (a request per sentence) + ElevenLabs Flash v2.5",
		Framework: pipecatVersion + ": services/elevenlabs/tts.py ElevenLabsHttpTTSService: one streaming HTTP request per aggregated sentence; " +
			"TTSService.tts_process_generator runs each request to its end before the next (one after another)",
		Service:  "ElevenLabs eleven_flash_v2_5 over POST /v1/text-to-speech/{voice}/stream",
		Chunking: "pipecat",
		Synth:    Synth{Mode: ModeRequest, TTFA: ElevenLabsFlash + NetworkRTT, RTF: DefaultStackRTF},
		Sources:  []string{"first audio 125 ms per request = " + srcFlash + " + " + srcNetwork + " (kept-alive connection)", srcRTF},
		Differs:  "a new TLS connection per request would add its handshake.",
	},
	websocketStack(Stack{
		Name:    "livekit-elevenlabs",
		Summary: "LiveKit ElevenLabs plugin (websocket) + ElevenLabs Turbo v2.5",
		Framework: livekitVersion + ": livekit-plugins-elevenlabs tts.py SynthesizeStream: the multi-stream-input websocket, one context per " +
			"agent speech, blingfire sentences each sent with flush (auto_mode on by default)",
		Service:  "ElevenLabs eleven_turbo_v2_5 (the plugin's default model)",
		Chunking: "livekit",
	}, ElevenLabsTurbo, srcTurbo, "LiveKit's optional text pacing (SentenceStreamPacer) is off by default and not modelled."),
	websocketStack(Stack{
		Name:    "livekit-cartesia",
		Summary: "LiveKit Cartesia plugin (websocket) + Cartesia Sonic",
		Framework: livekitVersion + ": livekit-plugins-cartesia tts.py SynthesizeStream: the websocket, one context per agent speech, " +
			"blingfire sentences each sent with continue: true and max_buffer_delay_ms 0, continue: false at the end",
		Service:  "Cartesia sonic-3 (the plugin's default model)",
		Chunking: "livekit",
	}, CartesiaSonic, srcSonic, "Cartesia publishes no latency for sonic-3; the sonic-2 figure stands in."),
	{
		Name:    "livekit-openai",
		Summary: "LiveKit StreamAdapter (a request per sentence) + OpenAI TTS",
		Framework: livekitVersion + ": tts/stream_adapter.py StreamAdapter over a TTS without streaming input (livekit-plugins-openai " +
			"declares streaming=False, so voice/agent.py wraps it): blingfire sentences, each synthesized to its end before the next",
		Service:  "OpenAI gpt-4o-mini-tts over /v1/audio/speech (the plugin's default model)",
		Chunking: "livekit",
		Synth:    Synth{Mode: ModeRequest, TTFA: OpenAISpeech, RTF: DefaultStackRTF},
		Sources:  []string{"first audio 1071 ms per request: " + srcOpenAI, srcRTF},
		Differs:  "the measurement is of tts-1 (pcm) on whole answers of 42 words on average, from one place; gpt-4o-mini-tts, sentences and your region may differ: measure yours.",
	},
	{
		Name:    "openai-speech",
		Summary: "a /v1/audio/speech request per sentence (e.g. Pipecat OpenAITTSService) + OpenAI TTS",
		Framework: pipecatVersion + ": services/openai/tts.py OpenAITTSService, or any client that posts each sentence to an " +
			"OpenAI-compatible /v1/audio/speech and plays the answers in order, one request at a time",
		Service:  "OpenAI /v1/audio/speech (or a server speaking its API)",
		Chunking: "pipecat",
		Synth:    Synth{Mode: ModeRequest, TTFA: OpenAISpeech, RTF: DefaultStackRTF},
		Sources:  []string{"first audio 1071 ms per request: " + srcOpenAI, srcRTF},
		Differs:  "a self-hosted server (Kokoro, Piper behind an OpenAI-compatible API) has its own latency: pass --tts-latency.",
	},
}

// websocketStack is s streaming each turn into one synthesis context of a
// service whose model takes model (as modelSource says) to first audio:
// the turn's first audio comes after the model and a network round trip,
// each later chunk's after a round trip (the continuation). differs is
// what the model misses besides a continuation after an idle context.
func websocketStack(s Stack, model time.Duration, modelSource, differs string) Stack {
	s.Synth = Synth{Mode: ModeStream, TTFA: model + NetworkRTT, Continuation: NetworkRTT, RTF: DefaultStackRTF}
	s.Sources = []string{fmt.Sprintf("first audio %d ms = %s + %s", s.Synth.TTFA.Milliseconds(), modelSource, srcNetwork), srcContinuation, srcRTF}
	s.Differs = differsContinue + differs
	return s
}

// ErrStack reports a stack name that is not one of Stacks.
var ErrStack = errors.New("unknown stack")

// StackNames lists the stacks' names, for help texts.
func StackNames() string { return namesOf(Stacks, func(s Stack) string { return s.Name }) }

// LookupStack returns the stack of that name (case-insensitive).
func LookupStack(name string) (Stack, error) {
	if s, ok := preset(Stacks, func(s Stack) string { return s.Name }, name); ok {
		return s, nil
	}
	return Stack{}, fmt.Errorf("%w %q: want one of %s (see `underrun stacks`)", ErrStack, name, StackNames())
}

// namesOf lists the names of a list of presets, comma separated.
func namesOf[T any](list []T, name func(T) string) string {
	names := make([]string, len(list))
	for i, v := range list {
		names[i] = name(v)
	}
	return strings.Join(names, ", ")
}

// preset finds the preset called want in list, ignoring case and the
// spaces around it.
func preset[T any](list []T, name func(T) string, want string) (T, bool) {
	for _, v := range list {
		if strings.EqualFold(name(v), strings.TrimSpace(want)) {
			return v, true
		}
	}
	var zero T
	return zero, false
}

// Policy parses the stack's chunking policy.
func (s Stack) Policy() (Policy, error) {
	p, err := ParsePolicy(s.Chunking)
	if err != nil {
		return nil, fmt.Errorf("stack %s: %w", s.Name, err)
	}
	return p, nil
}

// Overridden names the figures of the stack that policy and synth no
// longer hold: "chunking", "mode", "first audio", "continuation", "rtf".
func (s Stack) Overridden(policy string, synth Synth) []string {
	var out []string
	want := s.Chunking
	if p, err := ParsePolicy(s.Chunking); err == nil {
		want = p.Name()
	}
	if policy != want {
		out = append(out, "chunking")
	}
	if synth.Timing() != s.Synth.Timing() {
		out = append(out, "mode")
	}
	if synth.TTFA != s.Synth.TTFA {
		out = append(out, "first audio")
	}
	if synth.Timing() == ModeStream && synth.Continuation != s.Synth.Continuation {
		out = append(out, "continuation")
	}
	if synth.RTF != s.Synth.RTF {
		out = append(out, "rtf")
	}
	return out
}
