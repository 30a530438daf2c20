// Package tts models the speech side of a voice pipeline: how long text
// takes to say (Voice), when buffered text is handed to the synthesizer
// (Chunker policies), and how fast the synthesizer turns it into audio
// (Synth).
//
// The package knows nothing of traces, HTTP or the wall clock. Times are
// durations since a turn's request was sent.
package tts
