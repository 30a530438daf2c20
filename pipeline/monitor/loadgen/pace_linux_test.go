package loadgen

import (
	"os"
	"strconv"
	"testing"

	"golang.org/x/sys/unix"
)

// fifoThreads lists the threads of this process that run at SCHED_FIFO.
func fifoThreads(t *testing.T) []int {
	t.Helper()
	tasks, err := os.ReadDir("/proc/self/task")
	if err != nil {
		t.Fatal(err)
	}
	var fifo []int
	for _, task := range tasks {
		tid, err := strconv.Atoi(task.Name())
		if err != nil {
			continue
		}
		if attr, err := unix.SchedGetAttr(tid, 0); err == nil && attr.Policy == unix.SCHED_FIFO {
			fifo = append(fifo, tid)
		}
	}
	return fifo
}
