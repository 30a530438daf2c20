// Package memtest measures what a piece of code allocates, for tests and
// fuzz targets that must prove bad input costs bounded memory.
package memtest

import "runtime"

// Allocated runs f and returns the bytes allocated meanwhile (by f, and by
// anything else the process runs at the same time: call it where nothing
// else runs, as in a fuzz target or a test that is not parallel).
func Allocated(f func()) uint64 {
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	f()
	runtime.ReadMemStats(&after)
	return after.TotalAlloc - before.TotalAlloc
}
