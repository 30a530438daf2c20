// Package heard finds the gaps in a recording of what a voice agent said
// and tells the voice's own pauses from underruns.
//
// A Detector finds the recording's silences by level, against the
// recording's own noise floor and speech level. Analyze then aligns each
// turn of a trace to the recording: the voice model's articulation time
// of the text between places (word boundaries, clause and sentence ends)
// against the sound between silences, by dynamic programming, so that
// each silence falls at a place in the text. The voice's own pause at each
// kind of place is measured on the recording (or taken from the voice
// model); a silence longer than it by a margin is an underrun, and the
// engine accounts it as it accounts the gaps it predicts
// (pipeline.Playout.Explain): class, cause, token and ITL are analyze's.
//
// The package reads no files and prints nothing: cmd/underrun's heard
// command decodes the WAV (tts.DecodeWAVChannel), reads the trace and
// renders the report.
package heard
