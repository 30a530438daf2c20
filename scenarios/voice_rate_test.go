package scenarios

import (
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/tts"
)

// TestDefaultVoiceRate: the default voice speaks the built-in texts
// (the default turn and the assistant corpus) at 175-180 words per
// minute, pauses included: the rate of hosted neural voices.
func TestDefaultVoiceRate(t *testing.T) {
	t.Parallel()
	corpus, err := library.ReadFile("texts/assistant.txt")
	if err != nil {
		t.Fatal(err)
	}
	texts := append(SplitCorpus(string(corpus)), DefaultText())
	if len(texts) < 5 {
		t.Fatalf("only %d built-in texts", len(texts))
	}
	v := tts.DefaultVoice()
	var words int
	var seconds float64
	for _, text := range texts {
		n, s := len(strings.Fields(text)), v.Duration(text).Seconds()
		words += n
		seconds += s
		// each answer on its own stays near the rate
		if wpm := float64(n) / s * 60; wpm < 165 || wpm > 190 {
			t.Errorf("%.0f wpm on %q", wpm, text[:40])
		}
	}
	if wpm := float64(words) / seconds * 60; wpm < 175 || wpm > 180 {
		t.Errorf("the default voice speaks the built-in texts at %.1f words per minute, want 175-180", wpm)
	} else {
		t.Logf("%.1f words per minute over %d words", wpm, words)
	}
}
