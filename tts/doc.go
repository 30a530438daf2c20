// Package tts models the speech side of a voice pipeline: how long text
// takes to say (Voice), when buffered text is handed to the synthesizer
// (Chunker policies: the plain token, word, sentence and timer rules, and
// presets that reproduce Pipecat's, LiveKit's, ElevenLabs' and Cartesia's
// own chunking, held to fixtures from those frameworks' code in
// testdata/chunking), and how the synthesizer pays for first audio and
// turns text into audio (Synth, in one of three timing Modes: a stream
// context per turn, a request per chunk one after another, or requests in
// parallel). A Stack names a framework driving a TTS service (Pipecat or
// LiveKit with ElevenLabs, Cartesia or an OpenAI-style speech API) and sets
// the chunking, the mode and the vendor's published latencies, with their
// sources. Real engines live here too: an Engine turns text into Audio
// (Espeak runs espeak-ng; Synthetic is a voice-like signal, not speech, for
// when none is installed), a Cache hands an engine's measured durations to
// the playout engine (in context: each sentence synthesized whole and
// shared out to its chunks), and Calibrate fits a Voice to an engine and
// writes it as a Profile (--voice FILE). Package render turns a played turn into the
// audio the listener hears.
//
// The package knows nothing of traces, HTTP or the wall clock. Times are
// durations since a turn's request was sent.
package tts
