//go:build !linux

package main

import "os/exec"

// cpuSplit is not supported here: targets and load share the CPUs.
func cpuSplit() (target, load []int, ok bool) { return nil, nil, false }

func pinSelf([]int) (func(), error) { return func() {}, nil }

func startOn(cmd *exec.Cmd, _ []int) error { return cmd.Start() }

func allowedCPUs(int) []int { return nil }
