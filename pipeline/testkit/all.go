package testkit

import (
	"errors"
	"io"
	"testing"
)

// All calls next (a decoder's Next, a reader's NextStream) until it
// returns io.EOF and returns everything it gave, in order; any other
// error fails the test, naming how many items came before it.
func All[T any](t testing.TB, next func() (T, error)) []T {
	t.Helper()
	var out []T
	for {
		v, err := next()
		if errors.Is(err, io.EOF) {
			return out
		}
		if err != nil {
			t.Fatalf("after %d read: %v", len(out), err)
		}
		out = append(out, v)
	}
}
