// Package player plays the audio of turns as it arrives, from a real
// buffer drained at the sample rate, and counts every moment it had to
// play silence while a turn's speech was not finished: the underruns a
// listener heard, with their start, length and samples.
//
// The buffer is drained either by the monotonic clock (Run: a sink that
// takes exactly one sample per sample period of wall-clock time, the ideal
// sound card, and can record what it played as WAV) or by a sound card
// pulling samples (Streamer, for beep's speaker). A sample can only be
// played once its audio has arrived: by the clock, audio that arrived at
// time a is played no earlier than a, to the sample; a sound card plays
// what it was given when it asked.
//
// This package uses the wall clock; times in its results count from each
// turn's beginning, as the playout engine's do.
package player
