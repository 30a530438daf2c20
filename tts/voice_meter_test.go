package tts

import (
	"math/rand/v2"
	"testing"
	"time"
	"unicode/utf8"
)

// refAdd is Meter.Add rune by rune, the model as written.
func refAdd(m *Meter, text string) time.Duration {
	var d time.Duration
	for i := 0; i < len(text); {
		r, size := rune(text[i]), 1
		if r >= utf8.RuneSelf {
			r, size = utf8.DecodeRuneInString(text[i:])
		}
		i += size
		d += m.rune(r)
	}
	return d
}

// TestMeterAddMatchesRuneModel checks Meter.Add against the rune-by-rune
// model on random text cut into random pieces, and that a Meter rebuilt
// from InWord continues as the original.
func TestMeterAddMatchesRuneModel(t *testing.T) {
	t.Parallel()
	alphabet := []string{"a", "Z", "7", " ", "\n", ",", ";", ":", ".", "!", "?", "'", "’", "\"", "-", "—", "–", "é", "ß", "東", "。", "！", "，", "、", "…", "\xff", "\xc3", "\xa9", "(", ")"}
	rng := rand.New(rand.NewPCG(4, 16))
	v := DefaultVoice()
	for trial := range 2000 {
		var text []byte
		for range rng.IntN(60) {
			text = append(text, alphabet[rng.IntN(len(alphabet))]...)
		}
		got, want, rebuilt := v.Meter(), v.Meter(), v.Meter()
		for len(text) > 0 {
			n := min(len(text), 1+rng.IntN(8))
			piece := string(text[:n])
			text = text[n:]
			r := rebuilt.WithInWord(got.InWord())
			g, w, rb := got.Add(piece), refAdd(&want, piece), r.Add(piece)
			if g != w || rb != w || got.inWord != want.inWord || r.inWord != want.inWord {
				t.Fatalf("trial %d: Add(%q) = %v (rebuilt %v), rune model %v", trial, piece, g, rb, w)
			}
		}
	}
}
