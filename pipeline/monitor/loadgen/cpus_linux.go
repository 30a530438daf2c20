//go:build linux

package loadgen

import (
	"fmt"
	"os"
	"os/exec"
	"runtime"
	"slices"
	"strconv"

	"golang.org/x/sys/unix"
)

// CPUSplit divides the CPUs this process may run on in two: the first
// half for a target under load, the rest for the load; ok is false with
// fewer than two.
func CPUSplit() (target, load []int, ok bool) {
	cpus := AllowedCPUs(0)
	if len(cpus) < 2 {
		return nil, nil, false
	}
	h := len(cpus) / 2
	return cpus[:h], cpus[h:], true
}

// AllowedCPUs returns the CPUs thread or process id may run on (0: the
// calling thread).
func AllowedCPUs(id int) []int {
	var set unix.CPUSet
	if unix.SchedGetaffinity(id, &set) != nil {
		return nil
	}
	var cpus []int
	for i := range 1024 { // CPU_SETSIZE
		if set.IsSet(i) {
			cpus = append(cpus, i)
		}
	}
	return cpus
}

func cpuSet(cpus []int) *unix.CPUSet {
	var set unix.CPUSet
	for _, c := range cpus {
		set.Set(c)
	}
	return &set
}

// PinSelf keeps every thread of this process, and the threads and
// processes they start, on cpus, with as many Go threads running at once;
// restore undoes it.
func PinSelf(cpus []int) (restore func(), err error) {
	before := AllowedCPUs(0)
	procs := runtime.GOMAXPROCS(len(cpus))
	setAll := func(cpus []int) error {
		set := cpuSet(cpus)
		return eachThread(func(tid int) error { return unix.SchedSetaffinity(tid, set) })
	}
	restore = func() {
		setAll(before)
		runtime.GOMAXPROCS(procs)
	}
	if err := setAll(cpus); err != nil {
		restore()
		return nil, err
	}
	return restore, nil
}

// eachThread calls set for every thread of this process, twice: a thread
// started during the first pass by a thread not yet set is caught by the
// second (a new thread inherits its creator's CPUs and nice value). A
// thread gone meanwhile is no error.
func eachThread(set func(tid int) error) error {
	for range 2 {
		tasks, err := os.ReadDir("/proc/self/task")
		if err != nil {
			return err
		}
		for _, t := range tasks {
			tid, err := strconv.Atoi(t.Name())
			if err != nil {
				continue
			}
			if err := set(tid); err != nil && err != unix.ESRCH {
				return err
			}
		}
	}
	return nil
}

// NiceSelf sets the nice value of every thread of this process, and of
// the threads they start (Linux keeps one per thread).
func NiceSelf(nice int) error {
	return eachThread(func(tid int) error { return unix.Setpriority(unix.PRIO_PROCESS, tid, nice) })
}

// StartOn starts cmd on cpus (none: anywhere). The child inherits the CPUs
// of the thread that starts it, so it starts from a thread of its own,
// pinned for the purpose and then let go; its Go runtime sizes itself to
// them.
func StartOn(cmd *exec.Cmd, cpus []int) error {
	if len(cpus) == 0 {
		return cmd.Start()
	}
	errc := make(chan error, 1)
	go func() {
		// never unlocked: the thread ends with this goroutine, its CPUs
		// with it
		runtime.LockOSThread()
		if err := unix.SchedSetaffinity(0, cpuSet(cpus)); err != nil {
			errc <- err
			return
		}
		errc <- cmd.Start()
	}()
	if err := <-errc; err != nil {
		return err
	}
	if got := AllowedCPUs(cmd.Process.Pid); !slices.Equal(got, cpus) {
		cmd.Process.Kill()
		cmd.Wait()
		return fmt.Errorf("%s runs on CPUs %v, want %v", cmd.Path, got, cpus)
	}
	return nil
}
