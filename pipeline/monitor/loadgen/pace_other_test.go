//go:build !linux

package loadgen

import "testing"

// fifoThreads: real-time priority is asked for on Linux alone.
func fifoThreads(*testing.T) []int { return nil }
