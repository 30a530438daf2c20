// Package rxstamp times the bytes a TCP connection receives by the kernel's
// clock rather than by when a reader got round to them.
//
// A measuring client on a busy machine reads a socket some time after the
// bytes arrived: the goroutine waits for the runtime, the runtime for a
// CPU. On Linux the kernel can stamp every packet as it reaches the socket
// (SO_TIMESTAMPNS) and hand the stamp of the newest bytes over with each
// read; Conn does that, and Stamp converts the stamp to a time.Time on the
// monotonic clock, so that arrival times taken this way subtract cleanly
// from time.Now readings. Where the kernel cannot (another system, a
// connection that is not TCP, a read that came without a stamp), Stamp
// says so and the caller keeps its own read time.
//
// The kernel turns stamping on a moment after the first socket of the
// system asks for it, so the first bytes a process reads may come without.
//
// One stamp covers a whole read: the stamp of its newest bytes. A reader
// that keeps up gets one read per burst the peer wrote; for one that falls
// behind, the kernel merges the bursts that queue up and keeps only the
// newest stamp, so they all read as arriving then (never earlier than any
// of them did). Reading promptly is still the reader's job.
package rxstamp
