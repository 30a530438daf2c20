//go:build race

package testkit

// Race says the race detector is on: it multiplies memory and time, so
// tests that measure them, or that would take minutes under it, skip.
const Race = true
