//go:build !unix

package monitor

import "os/exec"

// ownGroup does nothing where there are no process groups.
func ownGroup(*exec.Cmd) {}

// stopGroup kills the browser and waits for it.
func stopGroup(cmd *exec.Cmd) {
	cmd.Process.Kill()
	cmd.Wait()
}
