// Package loadgen is the monitor's load generator: Run drives a monitor
// (or a bare websocket server, EchoHandler, the ceiling a monitor's
// ingestion is measured against) with many synthetic sessions, each
// streaming turns of chunks with a stall that drains its buffer once per
// turn, and measures what arrives: messages lost, how late the senders
// kept their schedule, and how late the underrun_started events reached
// an /events subscriber (DrainWatch). WriteFloor measures the floor under
// those figures on this machine: the most messages any load generator can
// write to a Sink, and the least send lag it can keep to a schedule.
//
// To keep the generator from measuring itself, its senders each keep the
// schedule of many sessions, write frames prepared once, may run on OS
// threads of their own at real-time priority (Linux), and reach a monitor
// on a Unix socket outside Go's network poller, by plain system calls.
//
// The package speaks the monitor's protocol through package monitor
// (its addresses, dialers and message encoder); the monitor never imports
// it. It never prints or exits; everything stays on the address given:
// use loopback.
package loadgen
