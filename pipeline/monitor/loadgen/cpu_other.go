//go:build !unix

package loadgen

import "time"

// ProcessCPU returns 0: the CPU time of a process is unknown here.
func ProcessCPU() time.Duration { return 0 }
