// Package monitor watches live voice sessions. A voice app opens one
// websocket per session on /ingest and sends the protocol's JSON messages
// (turn_start, chunk, turn_end, barge_in, tts); every session is guarded
// in wall-clock time by a pipeline.Guard, and its underruns, stall
// warnings and turn summaries go to the injected zerolog logger, to
// subscriber websockets (/events), to the embedded live page (/ and
// /live) and to Prometheus metrics (/metrics, the Server's own registry).
// Everything received can be recorded as a native trace as it arrives.
//
// Feed plays a recorded trace into a running monitor at its real pace, and
// Load drives a monitor (or a bare echo server, the ceiling) with many
// synthetic sessions and measures what arrives and how late the underrun
// events come. The package never prints or exits.
package monitor
