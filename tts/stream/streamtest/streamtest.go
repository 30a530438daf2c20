// Package streamtest checks that a streaming synthesizer keeps the
// contract of package stream: every implementation's tests run the same
// checks against it.
package streamtest

import (
	"context"
	"errors"
	"io"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/stream"
)

// Drain reads an utterance to its end and returns its pieces and the
// final error (nil for io.EOF).
func Drain(u stream.Utterance) ([]stream.Piece, error) {
	var pieces []stream.Piece
	err := stream.Each(u, func(p stream.Piece) { pieces = append(pieces, p) })
	return pieces, err
}

// Espeak returns espeak-ng as a streaming synthesizer at speed words per
// minute (0: its own), or skips the test with a clear message when it is
// not installed.
func Espeak(t testing.TB, speed int) *stream.Espeak {
	t.Helper()
	e, err := stream.NewEspeak()
	if errors.Is(err, tts.ErrNoEngine) {
		t.Skip("espeak-ng is not installed (apt-get install espeak-ng):", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	e.Engine.Speed = speed
	return e
}

// Samples returns how many samples the pieces hold.
func Samples(pieces []stream.Piece) int {
	n := 0
	for _, p := range pieces {
		n += len(p.Samples)
	}
	return n
}

// CheckSynthesizer runs the Synthesizer contract against s: a text comes
// back as pieces of audio with a rate, stamped in order, ending in io.EOF,
// which stays; Close may come twice; a cancelled context fails the
// synthesis.
func CheckSynthesizer(t *testing.T, s stream.Synthesizer) {
	t.Helper()
	if s.Name() == "" {
		t.Errorf("Name() is empty")
	}
	ctx := context.Background()
	u, err := s.Synthesize(ctx, "Hello there, this is a test.")
	if err != nil {
		t.Fatalf("Synthesize: %v", err)
	}
	pieces, err := Drain(u)
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if len(pieces) == 0 || Samples(pieces) == 0 {
		t.Fatalf("no audio")
	}
	var last time.Time
	for i, p := range pieces {
		switch {
		case p.Rate <= 0:
			t.Errorf("piece %d: rate %d", i, p.Rate)
		case p.Rate != pieces[0].Rate:
			t.Errorf("piece %d: rate %d, piece 0 had %d", i, p.Rate, pieces[0].Rate)
		case p.At.IsZero():
			t.Errorf("piece %d: no arrival time", i)
		case p.At.Before(last):
			t.Errorf("piece %d arrived at %v, before piece %d", i, p.At, i-1)
		}
		for _, v := range p.Samples {
			if !(v >= -1 && v <= 1) {
				t.Fatalf("piece %d: sample %v out of [-1, 1]", i, v)
			}
		}
		last = p.At
	}
	if _, err := u.Next(); !errors.Is(err, io.EOF) {
		t.Errorf("Next after the end = %v, want io.EOF again", err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("Close: %v", err)
	}
	if err := u.Close(); err != nil {
		t.Errorf("second Close: %v", err)
	}

	cctx, cancel := context.WithCancel(ctx)
	cancel()
	if u, err := s.Synthesize(cctx, "This is never spoken."); err == nil {
		if _, err := Drain(u); err == nil {
			t.Errorf("a cancelled synthesis ended without an error")
		}
		u.Close()
	}
}

// CheckContext runs the Context contract against s: texts spoken into one
// context come back in order, each piece tagged with its text, the second
// text's audio after the first's; Close ends the audio with io.EOF.
func CheckContext(t *testing.T, s stream.ContextSynthesizer) {
	t.Helper()
	c, err := s.OpenContext(context.Background())
	if err != nil {
		t.Fatalf("OpenContext: %v", err)
	}
	defer c.Abort()
	if err := c.Speak("Hello there,"); err != nil {
		t.Fatalf("Speak: %v", err)
	}
	first, err := c.Next()
	if err != nil {
		t.Fatalf("Next: %v", err)
	}
	if first.Text != 0 || len(first.Samples) == 0 {
		t.Fatalf("first piece: text %d, %d samples; want text 0 with audio", first.Text, len(first.Samples))
	}
	if err := c.Speak("my friend."); err != nil {
		t.Fatalf("second Speak: %v", err)
	}
	if err := c.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	texts := map[int]int{first.Text: len(first.Samples)}
	prev := first
	for {
		p, err := c.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if err != nil {
			t.Fatalf("Next: %v", err)
		}
		if p.Text < prev.Text || p.At.Before(prev.At) {
			t.Fatalf("piece of text %d at %v after one of text %d at %v", p.Text, p.At, prev.Text, prev.At)
		}
		texts[p.Text] += len(p.Samples)
		prev = p
	}
	if texts[0] == 0 || texts[1] == 0 || len(texts) != 2 {
		t.Errorf("samples per text = %v, want audio for texts 0 and 1", texts)
	}
}
