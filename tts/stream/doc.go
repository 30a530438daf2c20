// Package stream holds synthesizers that work in wall-clock time: each
// turns text into audio while the text is still streaming, and hands the
// audio over as it is produced, piece by piece, every piece stamped with
// the moment it arrived. A player (package tts/player) plays the pieces;
// the stamps are the synthesizer's measured timings that the playout
// engine can be given afterwards.
//
// A Synthesizer answers one request per text (Synthesize); a
// ContextSynthesizer also keeps one synthesis context for a whole turn
// (OpenContext), into which the turn's chunks are spoken one after
// another, as Pipecat and LiveKit drive a websocket TTS. Espeak runs
// espeak-ng as a process, reading its audio from its standard output as
// it writes it; the OpenAI-compatible /v1/audio/speech client lives with
// the other HTTP code (pipeline/openai). Reader decodes a byte stream of
// WAV or raw PCM into pieces as the bytes come.
//
// Unlike package tts, this package uses the wall clock: a Piece's At is
// when its bytes arrived.
package stream
