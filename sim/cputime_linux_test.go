package sim

import (
	"syscall"
	"time"
)

// processCPU returns the CPU time the process has used, all threads
// together: on a shared machine it counts the work, not the waits for a
// core.
func processCPU() (time.Duration, bool) {
	var u syscall.Rusage
	if err := syscall.Getrusage(syscall.RUSAGE_SELF, &u); err != nil {
		return 0, false
	}
	return time.Duration(u.Utime.Nano() + u.Stime.Nano()), true
}
