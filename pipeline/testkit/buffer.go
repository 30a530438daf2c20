package testkit

import (
	"bytes"
	"sync"
)

// Buffer is a bytes.Buffer safe to read while another goroutine writes to
// it (a recording, a log, a command's output). The zero value is empty and
// ready.
type Buffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

// Write appends p.
func (l *Buffer) Write(p []byte) (int, error) {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.b.Write(p)
}

// Bytes returns a copy of what was written so far.
func (l *Buffer) Bytes() []byte {
	l.mu.Lock()
	defer l.mu.Unlock()
	return bytes.Clone(l.b.Bytes())
}

// String returns what was written so far.
func (l *Buffer) String() string { return string(l.Bytes()) }
