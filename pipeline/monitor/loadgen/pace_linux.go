package loadgen

import (
	"fmt"
	"runtime"
	"time"
	"unsafe"

	"golang.org/x/sys/unix"
)

// lockSender puts the calling goroutine on an OS thread of its own for
// the rest of its life and raises that thread to real-time priority:
// SCHED_FIFO where the system allows it, else nice -20, else as it was.
// It says what the thread got; release puts the thread's scheduling back
// as it found it, for the sender to call as it ends. (Go ends a thread
// whose goroutine exits locked to it, except the process's first thread,
// which it keeps idle instead: either way no other goroutine ever runs
// at the sender's priority.)
func lockSender() (priority string, release func()) {
	runtime.LockOSThread()
	before, gerr := unix.SchedGetAttr(0, 0)
	release = func() {
		if gerr == nil {
			unix.SchedSetAttr(0, before, 0)
		}
	}
	attr := unix.SchedAttr{Policy: unix.SCHED_FIFO, Priority: RealtimePriority, Flags: unix.SCHED_FLAG_RESET_ON_FORK} // no process started from the thread inherits it
	err := unix.SchedSetAttr(0, &attr, 0)
	if err == nil {
		return fmt.Sprintf("real-time (SCHED_FIFO %d)", RealtimePriority), release
	}
	// PRIO_PROCESS with id 0 is the calling thread on Linux
	if unix.Setpriority(unix.PRIO_PROCESS, 0, -20) == nil {
		return fmt.Sprintf("nice -20 (real-time refused: %v)", err), release
	}
	return fmt.Sprintf("%s (real-time refused: %v)", PriorityNormal, err), release
}

// waitPrecise sleeps for d on the calling thread without giving up its
// P: the runtime's timers wake a sleeper at the millisecond at best
// (its network poller waits in whole milliseconds), which would make
// every message due in the meantime up to a millisecond late. Only for a
// sender whose goroutine has a thread and a P to spare (stream sees to
// it), and only for short waits: the garbage collector waits for it.
func waitPrecise(d time.Duration) {
	ts := unix.NsecToTimespec(int64(d))
	// relative to now; an interruption (EINTR) ends the wait early, and
	// the sender looks at the time again
	unix.RawSyscall6(unix.SYS_CLOCK_NANOSLEEP, unix.CLOCK_MONOTONIC, 0, uintptr(unsafe.Pointer(&ts)), 0, 0, 0)
}

// precisePacing says whether waitPrecise waits precisely here.
const precisePacing = true
