// Package render turns a played turn into the audio its listener hears:
// the start-up silence, every speech chunk where the player played it, and
// every underrun as silence of its exact length, to the sample. Audio is
// written as WAV with beep.
//
// The speech comes from a tts.Engine: espeak-ng for real speech, or the
// synthetic voice-like signal when no engine is installed. With a
// tts.Cache as the engine's pipeline.Config.Durations, the rendered chunks
// are the very audio whose lengths the playout used.
package render
