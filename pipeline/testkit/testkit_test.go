package testkit

import (
	"errors"
	"fmt"
	"io"
	"runtime"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
)

// TestBuffer: writes from many goroutines all land, each whole, and a
// copy taken meanwhile is not changed by later writes.
func TestBuffer(t *testing.T) {
	t.Parallel()
	var b Buffer
	var wg sync.WaitGroup
	for i := range 8 {
		wg.Go(func() {
			for j := range 100 {
				fmt.Fprintf(&b, "w%d-%d\n", i, j)
			}
		})
	}
	early := b.Bytes()
	before := string(early)
	wg.Wait()
	if string(early) != before {
		t.Error("a copy changed after later writes")
	}
	lines := strings.Split(strings.TrimSuffix(b.String(), "\n"), "\n")
	if len(lines) != 800 {
		t.Fatalf("%d lines, want 800", len(lines))
	}
	seen := map[string]bool{}
	for _, l := range lines {
		seen[l] = true
	}
	if len(seen) != 800 || !seen["w7-99"] {
		t.Errorf("%d distinct lines, want 800 with w7-99", len(seen))
	}
}

// TestKeepStamps: once it returns, the first read of a new stamping
// connection carries the kernel's stamp, with no wait.
func TestKeepStamps(t *testing.T) {
	t.Parallel()
	if !rxstamp.Supported() {
		t.Skip("this system gives no kernel receive stamps")
	}
	KeepStamps(t)
	client, srv := stampedConn(t)
	buf := []byte{1}
	if _, err := client.Write(buf); err != nil {
		t.Fatal(err)
	}
	if _, err := srv.Read(buf); err != nil {
		t.Fatal(err)
	}
	if _, ok := rxstamp.Stamp(srv); !ok {
		t.Error("the first read after KeepStamps has no stamp")
	}
}

// TestAll: every item before io.EOF, in order, and none after it.
func TestAll(t *testing.T) {
	t.Parallel()
	items := []string{"a", "b", "c", "never"}
	i := 0
	next := func() (string, error) {
		if i == 3 {
			return "", io.EOF
		}
		i++
		return items[i-1], nil
	}
	if got := All(t, next); !slices.Equal(got, items[:3]) {
		t.Errorf("All = %q, want %q", got, items[:3])
	}
	if got := All(t, func() (int, error) { return 0, io.EOF }); len(got) != 0 {
		t.Errorf("All of nothing = %v", got)
	}
}

// fatalRecorder is a testing.TB whose Fatalf records the message and ends
// the goroutine, as testing's does.
type fatalRecorder struct {
	testing.TB
	msg string
}

func (f *fatalRecorder) Helper() {}

func (f *fatalRecorder) Fatalf(format string, args ...any) {
	f.msg = fmt.Sprintf(format, args...)
	runtime.Goexit()
}

// TestAllFails: an error other than io.EOF fails the test, saying how
// many items came before it.
func TestAllFails(t *testing.T) {
	t.Parallel()
	f := &fatalRecorder{TB: t}
	n := 0
	done := make(chan struct{})
	go func() {
		defer close(done)
		All(f, func() (int, error) {
			if n == 2 {
				return 0, errors.New("line 3: bad")
			}
			n++
			return n, nil
		})
		f.msg = "returned"
	}()
	<-done
	if want := "after 2 read: line 3: bad"; f.msg != want {
		t.Errorf("All failed with %q, want %q", f.msg, want)
	}
}
