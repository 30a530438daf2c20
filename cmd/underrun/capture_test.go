package main

import (
	"bytes"
	"sync"
	"testing"
)

// TestBarWriterClose: a progress bar's writer passes writes through until
// Close, drops every one after it, and may be written from the bar's own
// goroutine while the command closes it (run with -race).
func TestBarWriterClose(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := &barWriter{w: &buf}
	if n, err := w.Write([]byte("bar")); n != 3 || err != nil {
		t.Fatalf("Write: %d, %v", n, err)
	}
	var wg sync.WaitGroup
	wg.Add(1)
	go func() { // a spinner's ticker
		defer wg.Done()
		for range 1000 {
			w.Write([]byte("\r"))
		}
	}()
	w.Close()
	got := buf.Len() // the command owns stderr again
	buf.WriteString("report\n")
	wg.Wait()
	if n, err := w.Write([]byte("late")); n != 4 || err != nil {
		t.Fatalf("Write after Close: %d, %v (want the bytes dropped quietly)", n, err)
	}
	if want := got + len("report\n"); buf.Len() != want || !bytes.HasSuffix(buf.Bytes(), []byte("report\n")) {
		t.Errorf("stderr changed after Close: %q", buf.String())
	}
}
