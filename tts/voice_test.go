package tts

import (
	"math/rand/v2"
	"testing"
	"time"
)

func TestVoiceDuration(t *testing.T) {
	t.Parallel()
	v := DefaultVoice()
	word := v.WordTime() // 60 s / 184 at 184 wpm
	if want := time.Minute / 184; word != want {
		t.Fatalf("word time %v, want %v", word, want)
	}
	onset := time.Duration(float64(word) * v.WordOnset)
	letter := time.Duration(float64(word) * (1 - v.WordOnset) / averageWordLetters)
	tests := []struct {
		text string
		want time.Duration
	}{
		{"", 0},
		{"a", onset + letter},
		{"cat", onset + 3*letter},
		{"cat, dog.", 2*onset + 6*letter + v.CommaPause + v.SentencePause},
		{"don't", onset + 4*letter},
		{"   ", 0},
	}
	for _, tt := range tests {
		if got := v.Duration(tt.text); got != tt.want {
			t.Errorf("Duration(%q) = %v, want %v", tt.text, got, tt.want)
		}
	}
	// word-length aware: a long word takes longer than a short one
	if v.Duration("extraordinary") <= v.Duration("cat") {
		t.Error("a long word is not longer than a short one")
	}
}

func TestMeterIsAdditive(t *testing.T) {
	t.Parallel()
	v := DefaultVoice()
	text := "Sure, the train leaves at nine. It's about twenty-five minutes — and tickets cost €12!"
	whole := v.Duration(text)
	rng := rand.New(rand.NewPCG(1, 1))
	for range 200 {
		m := v.Meter()
		var sum time.Duration
		rest := text
		for rest != "" {
			n := 1 + rng.IntN(min(len(rest), 7))
			for n < len(rest) && !utf8Start(rest[n]) {
				n++
			}
			sum += m.Add(rest[:n])
			rest = rest[n:]
		}
		if sum != whole {
			t.Fatalf("pieces sum to %v, whole text is %v", sum, whole)
		}
	}
}

func utf8Start(b byte) bool { return b&0xC0 != 0x80 }

func TestTokenTime(t *testing.T) {
	t.Parallel()
	v := DefaultVoice()
	word := time.Minute / 184
	if got, want := v.TokenTime(), time.Duration(float64(word)/TokensPerWord); got != want {
		t.Errorf("token time %v, want %v", got, want)
	}
	v.TokenAudio = 200 * time.Millisecond
	if v.TokenTime() != 200*time.Millisecond {
		t.Error("TokenAudio is not used")
	}
}

func TestVoiceValidate(t *testing.T) {
	t.Parallel()
	if err := DefaultVoice().Validate(); err != nil {
		t.Fatal(err)
	}
	bad := []Voice{{WPM: 0}, {WPM: 100, WordOnset: 2}, {WPM: 100, CommaPause: -1},
		// issue 45: rates and times that looped the engine frame by frame
		{WPM: 1e-8}, {WPM: 1e-10}, {WPM: MaxWPM * 2}, {WPM: 100, TokenAudio: 2562047 * time.Hour},
		{WPM: 100, SentencePause: 2562047 * time.Hour}, {WPM: 100, CommaPause: MaxPause + 1}}
	for _, v := range bad {
		if v.Validate() == nil {
			t.Errorf("%+v validated", v)
		}
	}
}
