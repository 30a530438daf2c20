// Package monitor watches live voice sessions. A voice app opens one
// websocket per session on /ingest and sends the protocol's JSON messages
// (turn_start, chunk, turn_end, barge_in, tts); every session is guarded
// in wall-clock time by a pipeline.Guard, and its underruns, stall
// warnings and turn summaries go to the injected zerolog logger, to
// subscriber websockets (/events), to the embedded live page (/ and
// /live) and to Prometheus metrics (/metrics, the Server's own registry).
// Everything accepted can be recorded as a native trace, each record
// handed to the destination within Options.FlushInterval (2 ms), every
// turn under a name of its own (SESSION/TURN, and SESSION/TURN#2, #3, ...
// for a turn id used again), so that the recording reads back as streamed.
//
// Feed plays a recorded trace into running monitors at its real pace,
// sessions spread over several by Shard. The load generator that drives
// a monitor with many synthetic sessions is the loadgen sub-package; the
// rules a Prometheus watching a fleet of monitors needs are in the
// prometheus sub-package. The package never prints or exits.
package monitor
