package testkit

import (
	"bufio"
	"fmt"
)

// WriteList writes one member of a JSON object being written by hand, as
// Python's json.dump writes it: `, "key": [`, then each(i) for i from 0
// to n-1 separated by ", ", then `]`. Benchmarks write result files of
// any size with it.
func WriteList(w *bufio.Writer, key string, n int, each func(i int)) {
	fmt.Fprintf(w, `, "%s": [`, key)
	for i := range n {
		if i > 0 {
			w.WriteString(", ")
		}
		each(i)
	}
	w.WriteString("]")
}
