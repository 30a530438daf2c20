//go:build !linux

package monitor

import (
	"net"
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

// growReceiveBuffer leaves c to the system's autotuning (pace_linux.go
// grows it where the process may).
func growReceiveBuffer(*net.TCPConn, int) {}
