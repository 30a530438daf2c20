//go:build race

package main

// raceEnabled says the race detector is on: it multiplies memory and time,
// so tests that measure them skip.
const raceEnabled = true
