package main

import (
	"io"
	"os"
	"testing"

	"github.com/speech-pipeline/underrun/tts"
)

// readAs reads the file at path with read (speak.ReadRecording,
// tts.ReadProfile, ...), which names the file in its errors.
func readAs[T any](t *testing.T, path string, read func(io.Reader, string) (T, error)) T {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	v, err := read(f, path)
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// readWAV reads the WAV file at path.
func readWAV(t *testing.T, path string) tts.Audio {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	a, err := tts.DecodeWAV(b)
	if err != nil {
		t.Fatal(err)
	}
	return a
}
