package main

import (
	"bufio"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
)

// writePeak writes the process's own peak resident memory in bytes
// (VmHWM of /proc/self/status) to file, or nothing where the system does
// not say it. A child's rusage is no measure of it: the test binary
// starts the child through a vfork sharing its memory, and Linux counts
// that memory, however much the parallel tests hold, in the child's
// Maxrss.
func writePeak(file string) {
	f, err := os.Open("/proc/self/status")
	if err != nil {
		return
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		kb, ok := strings.CutPrefix(sc.Text(), "VmHWM:")
		if !ok {
			continue
		}
		n, err := strconv.ParseInt(strings.TrimSpace(strings.TrimSuffix(strings.TrimSpace(kb), "kB")), 10, 64)
		if err == nil {
			os.WriteFile(file, []byte(strconv.FormatInt(n*1024, 10)), 0o644)
		}
		return
	}
}

// execPeak runs cmd, a command line of this test binary, as the underrun
// command and returns its error and its own peak resident memory in
// bytes; it skips the test where the system does not say the peak.
func execPeak(t *testing.T, cmd *exec.Cmd) (int64, error) {
	t.Helper()
	file := filepath.Join(t.TempDir(), "peak")
	cmd.Env = append(os.Environ(), "UNDERRUN_TEST_EXEC=1", "UNDERRUN_TEST_PEAK="+file)
	err := cmd.Run()
	raw, rerr := os.ReadFile(file)
	if rerr != nil {
		t.Skipf("the child said no peak memory (/proc/self/status: VmHWM): %v", rerr)
	}
	peak, perr := strconv.ParseInt(string(raw), 10, 64)
	if perr != nil {
		t.Fatalf("peak memory %q: %v", raw, perr)
	}
	return peak, err
}
