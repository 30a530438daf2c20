//go:build !linux

package loadgen

import (
	"errors"
	"os/exec"
)

// CPUSplit is not supported here: targets and load share the CPUs.
func CPUSplit() (target, load []int, ok bool) { return nil, nil, false }

// PinSelf does nothing here: the process keeps every CPU.
func PinSelf([]int) (func(), error) { return func() {}, nil }

// StartOn starts cmd anywhere: CPUs are chosen on Linux alone.
func StartOn(cmd *exec.Cmd, _ []int) error { return cmd.Start() }

// AllowedCPUs is unknown here.
func AllowedCPUs(int) []int { return nil }

// NiceSelf: a load's subscriber sets its nice value on Linux alone.
func NiceSelf(int) error { return errors.ErrUnsupported }
