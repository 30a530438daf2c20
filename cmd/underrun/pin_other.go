//go:build !linux

package main

import (
	"errors"
	"os/exec"
)

// cpuSplit is not supported here: targets and load share the CPUs.
func cpuSplit() (target, load []int, ok bool) { return nil, nil, false }

func pinSelf([]int) (func(), error) { return func() {}, nil }

func startOn(cmd *exec.Cmd, _ []int) error { return cmd.Start() }

func allowedCPUs(int) []int { return nil }

// niceSelf: monitor load sets its subscriber's nice value on Linux alone.
func niceSelf(int) error { return errors.ErrUnsupported }
