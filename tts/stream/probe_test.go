package stream_test

import (
	"context"
	"testing"

	"github.com/speech-pipeline/underrun/tts/stream"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// TestProbeEspeak: Probe tells espeak-ng's sample rate, as every piece it
// speaks says, and a first audio after the request.
func TestProbeEspeak(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 0)
	rate, first, err := stream.Probe(context.Background(), e)
	if err != nil {
		t.Fatal(err)
	}
	u, err := e.Synthesize(context.Background(), "Hello.")
	if err != nil {
		t.Fatal(err)
	}
	pieces, err := streamtest.Drain(u)
	if err != nil || len(pieces) == 0 {
		t.Fatalf("Hello.: %d pieces, %v", len(pieces), err)
	}
	if rate != pieces[0].Rate || first <= 0 {
		t.Errorf("Probe = rate %d, first audio %v; want the rate of its audio, %d, and a positive delay", rate, first, pieces[0].Rate)
	}
}
