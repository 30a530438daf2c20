package trace

import (
	"bytes"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// TestWritersStopAtFirstFailure: a trace or SSE capture whose destination
// fails after N bytes (a disk that fills up) returns the error from the
// failing record on, and writes nothing after it, so that what the file
// holds is a prefix of the recording that reads back (its cut-off last
// line tolerated), never a recording with a hole in it.
func TestWritersStopAtFirstFailure(t *testing.T) {
	t.Parallel()
	for _, n := range []int{0, 1, 60, 300, 1000} {
		dst := &testkit.FailWriter{N: n}
		w := NewWriter(dst, "test")
		var first error
		for k := range 20 {
			turn := &pipeline.Turn{ID: "t" + string(rune('a'+k)), Status: pipeline.StatusOK,
				Chunks: []pipeline.Chunk{{At: time.Duration(k+1) * time.Millisecond, Text: "word", Tokens: 1}}}
			err := w.WriteTurn(turn)
			if err != nil && first == nil {
				first = err
			}
			if first != nil && !errors.Is(err, testkit.ErrDeviceFull) {
				t.Fatalf("N=%d: after the failure, WriteTurn returned %v", n, err)
			}
		}
		if first == nil || !errors.Is(w.Err(), testkit.ErrDeviceFull) {
			t.Fatalf("N=%d: no failure reported (%v)", n, w.Err())
		}
		if dst.Failed() != 1 {
			t.Errorf("N=%d: %d writes reached the failed destination, want the one that failed", n, dst.Failed())
		}
		if kept := dst.Bytes(); len(kept) > 0 {
			r := NewNativeReader(bytes.NewReader(kept), "prefix")
			for {
				if _, err := r.Next(); err != nil {
					// a cut-off first line is no trace at all
					if !errors.Is(err, io.EOF) && bytes.Contains(kept, []byte("\n")) {
						t.Errorf("N=%d: the %d bytes kept do not read back: %v", n, len(kept), err)
					}
					break
				}
			}
		}
	}

	dst := &testkit.FailWriter{N: 200}
	cw := NewCaptureWriter(dst, "test")
	var failed error
	for k := range 10 {
		s, err := cw.Begin(CaptureRequest{Stream: "s" + string(rune('a'+k)), Start: time.Unix(0, 1)})
		if err == nil {
			err = s.Read([]byte("data: {}\n\n"), time.Millisecond)
		}
		if err != nil && failed == nil {
			failed = err
		}
	}
	if !errors.Is(failed, testkit.ErrDeviceFull) || dst.Failed() != 1 {
		t.Errorf("SSE capture: %v, %d failed writes; want the device's error, from one write", failed, dst.Failed())
	}
}
