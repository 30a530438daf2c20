//go:build !linux

package loadgen

import (
	"runtime"
	"time"
)

// lockSender puts the calling goroutine on an OS thread of its own for
// the rest of its life; real-time priority is asked for on Linux alone.
func lockSender() (priority string, release func()) {
	runtime.LockOSThread()
	return PriorityNormal + " (real-time priority is asked for on Linux alone)", func() {}
}

// waitPrecise sleeps for d (pace_linux.go holds the thread instead).
func waitPrecise(d time.Duration) { time.Sleep(d) }

// precisePacing says whether waitPrecise waits precisely here.
const precisePacing = false
