// Package scenarios holds the built-in scenario library, embedded in the
// binary, and the default turn underrun shows a newcomer.
package scenarios
