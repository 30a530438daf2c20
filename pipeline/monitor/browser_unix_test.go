//go:build unix

package monitor

import (
	"errors"
	"os/exec"
	"syscall"
	"time"
)

// ownGroup starts cmd in a process group of its own, so that stopGroup
// ends the browser's helper processes with it.
func ownGroup(cmd *exec.Cmd) { cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true} }

// stopGroup kills cmd's process group and waits until none of its
// processes is left (they write to the profile folder until then).
func stopGroup(cmd *exec.Cmd) {
	pgid := cmd.Process.Pid
	syscall.Kill(-pgid, syscall.SIGKILL)
	cmd.Wait()
	for !errors.Is(syscall.Kill(-pgid, 0), syscall.ESRCH) {
		time.Sleep(5 * time.Millisecond)
	}
}
