package pipeline

import (
	"syscall"
	"unsafe"
)

// threadCPU returns the CPU time the calling OS thread has used, in
// nanoseconds (CLOCK_THREAD_CPUTIME_ID): on a shared machine it counts the
// work, not the waits for a core. The caller locks its goroutine to the
// thread.
func threadCPU() (int64, bool) {
	const clockThreadCPUTime = 3
	var ts syscall.Timespec
	if _, _, e := syscall.Syscall(syscall.SYS_CLOCK_GETTIME, clockThreadCPUTime, uintptr(unsafe.Pointer(&ts)), 0); e != 0 {
		return 0, false
	}
	return ts.Nano(), true
}
