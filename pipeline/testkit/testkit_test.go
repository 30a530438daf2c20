package testkit

import (
	"fmt"
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
