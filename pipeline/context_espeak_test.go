package pipeline

import (
	"context"
	"math"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// TestEspeakTurnInContext: a turn played with espeak-ng's durations is
// measured in context: its speech is within 3% of espeak-ng speaking the
// whole turn at once, with word or token chunks as with sentence chunks.
func TestEspeakTurnInContext(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath(tts.EspeakProgram); err != nil {
		t.Skipf("espeak-ng is not installed (%v): skipping the in-context turn test (apt-get install espeak-ng)", err)
	}
	e, err := tts.NewEspeak()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	text := "Sure, I can help with that. The express train leaves every fifteen minutes, and it takes about twenty minutes to town. Shall I book two tickets"
	a, err := e.Synthesize(ctx, text)
	if err != nil {
		t.Fatal(err)
	}
	whole := a.Duration()
	for _, policy := range []string{"token", "word", "sentence"} {
		cfg := DefaultConfig()
		cfg.Policy, _ = tts.ParsePolicy(policy)
		cache := tts.NewCache(ctx, e).WithVoice(cfg.Voice)
		cfg.Durations = cache
		turn := &Turn{ID: "e", Status: StatusOK}
		for i, w := range splitTokens(text) {
			turn.Chunks = append(turn.Chunks, Chunk{At: time.Duration(i) * 40 * ms, Text: w, Tokens: 1})
		}
		p := play(t, cfg, turn)
		if !p.InContext() {
			t.Fatalf("%s: the turn was not measured in context", policy)
		}
		if r := p.Speech().Seconds() / whole.Seconds(); math.Abs(r-1) > 0.03 {
			t.Errorf("%s chunks: %v of speech, espeak-ng says %v for the whole turn (ratio %.3f)", policy, p.Speech(), whole, r)
		}
		var alone time.Duration
		for _, c := range p.Chunks {
			d, err := cache.Duration(strings.Clone(p.Text(c)))
			if err != nil {
				t.Fatal(err)
			}
			alone += d
		}
		if policy == "word" && alone.Seconds() < 1.1*whole.Seconds() {
			t.Errorf("words synthesized alone: %v, hardly more than the whole %v", alone, whole)
		}
	}
}
