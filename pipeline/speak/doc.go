// Package speak runs a voice pipeline for real, in wall-clock time: the
// tokens of a turn go into a text buffer as they arrive, the chunking
// policy the engine models releases the text, a real synthesizer (package
// tts/stream: espeak-ng, an OpenAI-compatible speech API) speaks each
// chunk while the stream goes on, driven as the engine's timing mode says
// (one context per turn, a request per chunk one after another, or all
// at once), and a real player (package tts/player) drains its buffer at
// the sample rate and counts every moment it had nothing to play.
//
// What the player counted is what a listener heard. Compare sets it
// beside what the playout engine predicts for the same token arrivals
// and the synthesizer's measured timings (pipeline.Config.Measured), and
// lists every difference; Measured and the "synth" records of a native
// trace (WriteTiming, ReadTimings) let the same run be analyzed again
// later. A Session runs turns one after another through a Pipeline beside
// a wall-clock pipeline.Guard (recorded turns at their pace, Replay, or a
// client's stream, Feed), compares each one heard, and gives the run's
// Report: text for people, JSON for machines.
package speak
