package tts

import (
	"context"
	"math"
	"slices"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

func TestSentences(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"Hello", []string{"Hello"}},
		{"Hi. Bye.", []string{"Hi. ", "Bye."}},
		{"Sure, I can.  Then \"go!\" Now", []string{"Sure, I can.  ", "Then \"go!\" ", "Now"}},
		{"Version 2.5 is out. Yes", []string{"Version 2.5 is out. ", "Yes"}},
		{"是的。好的", []string{"是的。好的"}},
		{"Wait... what? ", []string{"Wait... ", "what? "}},
	}
	for _, tt := range tests {
		var got []string
		for _, u := range Sentences(tt.text) {
			got = append(got, tt.text[u[0]:u[1]])
		}
		if !slices.Equal(got, tt.want) {
			t.Errorf("Sentences(%q) = %q, want %q", tt.text, got, tt.want)
		}
	}
}

func FuzzSentences(f *testing.F) {
	for _, s := range []string{"Hi. Bye.", "a", "", "…x", "\"Go.\"  Now!"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		at := 0
		for _, u := range Sentences(s) {
			if u[0] != at || u[1] <= u[0] || !utf8.ValidString(s[u[0]:u[1]]) && utf8.ValidString(s) {
				t.Fatalf("Sentences(%q): span %v after %d", s, u, at)
			}
			at = u[1]
		}
		if at != len(s) {
			t.Fatalf("Sentences(%q) covers %d of %d bytes", s, at, len(s))
		}
	})
}

// utterance is a fake engine in which every utterance costs a fixed 200
// ms on top of 10 ms per byte: the sum of pieces synthesized alone is far
// from the whole, as with real engines.
func utterance() EngineFunc {
	return EngineFunc{Label: "fake", IsSpeech: true, Func: func(_ context.Context, text string) (Audio, error) {
		n := 24000 * (200 + 10*len(strings.TrimSpace(text))) / 1000
		a := Audio{Rate: 24000, Samples: make([]float32, n)}
		for i := range a.Samples {
			a.Samples[i] = float32(i%97) / 97 // distinct samples to check slices
		}
		return a, nil
	}}
}

// splitWords cuts text before every space: word-sized chunks.
func splitWords(text string) [][2]int {
	var out [][2]int
	from := 0
	for i := 1; i < len(text); i++ {
		if text[i] == ' ' {
			out = append(out, [2]int{from, i})
			from = i
		}
	}
	return append(out, [2]int{from, len(text)})
}

// splitTokens cuts text into pieces of at most four bytes at rune
// boundaries: token-sized chunks, words split in the middle.
func splitTokens(text string) [][2]int {
	var out [][2]int
	from := 0
	for from < len(text) {
		to := min(len(text), from+4)
		for to < len(text) && !utf8.RuneStart(text[to]) {
			to++
		}
		out = append(out, [2]int{from, to})
		from = to
	}
	return out
}

// TestInContextAddsUpToSentences: a turn's pieces measured in context add
// up exactly to its sentences synthesized whole, however it is cut, and
// their samples are the sentences' samples.
func TestInContextAddsUpToSentences(t *testing.T) {
	t.Parallel()
	c := NewCache(context.Background(), utterance())
	text := "Sure, I can help with that. The train leaves at nine, from platform four. Anything else"
	var whole time.Duration
	var samples []float32
	for _, u := range Sentences(text) {
		a, err := c.Audio(text[u[0]:u[1]])
		if err != nil {
			t.Fatal(err)
		}
		whole += a.Duration()
		samples = append(samples, a.Samples...)
	}
	for name, cut := range map[string][][2]int{"words": splitWords(text), "tokens": splitTokens(text), "sentences": Sentences(text)} {
		var sum, alone time.Duration
		var got []float32
		for _, p := range cut {
			d, err := c.InContext(text, p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			a, err := c.AudioInContext(text, p[0], p[1])
			if err != nil {
				t.Fatal(err)
			}
			if a.Duration() != d {
				t.Errorf("%s %q: %v of samples, InContext says %v", name, text[p[0]:p[1]], a.Duration(), d)
			}
			got = append(got, a.Samples...)
			sum += d
			da, _ := c.Duration(text[p[0]:p[1]])
			alone += da
		}
		if len(got) != len(samples) || !slices.Equal(got, samples) {
			t.Errorf("%s: the pieces' samples are not the sentences' (%d of %d)", name, len(got), len(samples))
		}
		if diff := sum - whole; diff < -time.Millisecond || diff > time.Millisecond {
			t.Errorf("%s: pieces in context add up to %v, the sentences to %v", name, sum, whole)
		}
		if name != "sentences" && alone < whole*3/2 {
			t.Errorf("%s: synthesized alone the pieces add up to %v, hardly more than %v: the fake engine does not show the effect", name, alone, whole)
		}
	}
	if _, err := c.InContext(text, 5, 2); err == nil {
		t.Error("a chunk ending before it begins: no error")
	}
}

// espeakTexts are assistant answers of several shapes for the real-engine
// test: long and short sentences, clauses, numbers, a question, an
// unfinished last sentence.
var espeakTexts = []string{
	"Sure, I can help you plan the trip. The fastest way from the airport to the old town is the express train, which leaves every fifteen minutes and takes about twenty-five minutes.",
	"Your order shipped this morning from our warehouse in Leeds. The parcel is with the courier now, and the tracking page says it should reach you on Thursday between nine and one.",
	"Of course. For a gentle start, try a twenty-minute walk after dinner, three or four times this week. Keep a pace at which you can still talk in full sentences",
	"I found three Italian restaurants near you that are open tonight. Would you like me to book a table for two at eight?",
	"Turn left at the second traffic light, then continue straight for about two kilometres. The museum is on your right, next to the old bridge.",
}

// TestEspeakInContext: with real espeak-ng, a turn's speech measured in
// context is within 3% of synthesizing the whole turn at once, whatever
// the chunking; measured alone, word-sized pieces overstate it.
func TestEspeakInContext(t *testing.T) {
	t.Parallel()
	e := needEspeak(t, "the in-context measurement test")
	ctx := context.Background()
	c := NewCache(ctx, e)
	var overstated float64
	for _, text := range espeakTexts {
		a, err := e.Synthesize(ctx, text)
		if err != nil {
			t.Fatal(err)
		}
		whole := a.Duration()
		for name, cut := range map[string][][2]int{"words": splitWords(text), "tokens": splitTokens(text), "sentences": Sentences(text)} {
			var sum time.Duration
			for _, p := range cut {
				d, err := c.InContext(text, p[0], p[1])
				if err != nil {
					t.Fatal(err)
				}
				sum += d
			}
			if r := sum.Seconds() / whole.Seconds(); math.Abs(r-1) > 0.03 {
				t.Errorf("%s chunks of %q: %v in context, %v whole (ratio %.3f)", name, text[:30], sum, whole, r)
			}
		}
		var alone time.Duration
		for _, p := range splitWords(text) {
			d, err := c.Duration(text[p[0]:p[1]])
			if err != nil {
				t.Fatal(err)
			}
			alone += d
		}
		overstated = max(overstated, alone.Seconds()/whole.Seconds())
	}
	if overstated < 1.1 {
		t.Errorf("words synthesized alone overstate the whole by at most %.2f: the test no longer shows why context matters", overstated)
	}
	t.Logf("words synthesized alone: up to %.2f times the whole turn", overstated)
}
