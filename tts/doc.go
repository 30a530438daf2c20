// Package tts models the speech side of a voice pipeline: how long text
// takes to say (Voice), when buffered text is handed to the synthesizer
// (Chunker policies: the plain token, word, sentence and timer rules, and
// presets that reproduce Pipecat's, LiveKit's, ElevenLabs' and Cartesia's
// own chunking, held to fixtures from those frameworks' code in
// testdata/chunking), and how fast the synthesizer turns it into audio
// (Synth). Real engines live here too: an Engine turns text into Audio
// (Espeak runs espeak-ng; Synthetic is a voice-like signal, not speech, for
// when none is installed), a Cache hands an engine's measured durations to
// the playout engine, and Calibrate fits a Voice to an engine and writes it
// as a Profile (--voice FILE). Package render turns a played turn into the
// audio the listener hears.
//
// The package knows nothing of traces, HTTP or the wall clock. Times are
// durations since a turn's request was sent.
package tts
