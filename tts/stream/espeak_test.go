package stream_test

import (
	"context"
	"errors"
	"testing"

	"github.com/speech-pipeline/underrun/tts/stream"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

func TestEspeakContract(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 0)
	streamtest.CheckSynthesizer(t, e)
	streamtest.CheckContext(t, e)
	if e.Stdbuf != "" {
		direct := *e
		direct.Stdbuf = ""
		streamtest.CheckSynthesizer(t, &direct)
		streamtest.CheckContext(t, &direct)
	}
}

// A streamed request is the very audio tts.Espeak makes of the text.
func TestEspeakSameAudio(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 0)
	for _, text := range []string{"Sure, I can help with that.", "and then we walk"} {
		whole, err := e.Engine.Synthesize(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		u, err := e.Synthesize(context.Background(), text)
		if err != nil {
			t.Fatal(err)
		}
		pieces, err := streamtest.Drain(u)
		u.Close()
		if err != nil {
			t.Fatal(err)
		}
		var got []float32
		for _, p := range pieces {
			got = append(got, p.Samples...)
			if p.Rate != whole.Rate {
				t.Fatalf("%q: rate %d, tts.Espeak's %d", text, p.Rate, whole.Rate)
			}
		}
		if len(got) != len(whole.Samples) {
			t.Fatalf("%q: %d samples streamed, %d from tts.Espeak", text, len(got), len(whole.Samples))
		}
		for i := range got {
			if got[i] != whole.Samples[i] {
				t.Fatalf("%q: sample %d = %v, tts.Espeak's %v", text, i, got[i], whole.Samples[i])
			}
		}
	}
}

func TestEspeakAbort(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 0)
	c, err := e.OpenContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Speak("A text that is spoken while the context is stopped."); err != nil {
		t.Fatal(err)
	}
	if _, err := c.Next(); err != nil {
		t.Fatal(err)
	}
	c.Abort()
	for {
		_, err := c.Next()
		if err != nil {
			if !errors.Is(err, stream.ErrSynthesis) {
				t.Errorf("Next after Abort: %v, want ErrSynthesis", err)
			}
			break
		}
	}
	if err := c.Speak("more"); err == nil {
		t.Errorf("Speak after Abort succeeded")
	}
}

// Nothing to say is no line for espeak-ng: the next text keeps its index.
func TestEspeakContextBlankText(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 0)
	c, err := e.OpenContext(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Abort()
	for _, text := range []string{" ", "Hello & <goodbye>.", "\n"} {
		if err := c.Speak(text); err != nil {
			t.Fatal(err)
		}
	}
	c.Close()
	texts := map[int]int{} // the blank text after the words takes none of their audio
	for {
		p, err := c.Next()
		if err != nil {
			break
		}
		texts[p.Text] += len(p.Samples)
	}
	if len(texts) != 1 || texts[1] == 0 {
		t.Errorf("samples per text %v, want all for text 1", texts)
	}
}
