package testkit

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// Config returns the default engine configuration with the chunking
// policy spelled policy (as on the command line) and a synthesizer of
// first audio ttfa and real-time factor rtf; a policy that does not parse
// fails the test.
func Config(t testing.TB, policy string, ttfa time.Duration, rtf float64) pipeline.Config {
	t.Helper()
	cfg := pipeline.DefaultConfig()
	p, err := tts.ParsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy = p
	cfg.Synth = tts.Synth{TTFA: ttfa, RTF: rtf}
	return cfg
}
