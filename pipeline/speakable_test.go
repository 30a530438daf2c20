package pipeline

import (
	"strings"
	"testing"
)

func TestNotSpeech(t *testing.T) {
	t.Parallel()
	turn := func(tokens int, text string) *Turn {
		tr := &Turn{ID: "t"}
		per := len(text) / tokens
		for i := range tokens {
			end := (i + 1) * per
			if i == tokens-1 {
				end = len(text)
			}
			tr.Chunks = append(tr.Chunks, Chunk{At: 0, Text: text[i*per : end], Tokens: 1})
		}
		return tr
	}
	gibberish := strings.Repeat("xQz9", 256) // 256 tokens, 1,024 characters, no space
	cases := []struct {
		name string
		t    *Turn
		want bool
	}{
		{"random-dataset gibberish", turn(256, gibberish), true},
		{"a sentence", turn(40, strings.Repeat("Sure, here it is. ", 10)), false},
		{"a long word in a short turn", turn(10, strings.Repeat("ab", 40)), false},
		{"Chinese", turn(60, strings.Repeat("今天天气很好。", 10)), false},
		{"one word per 25 tokens", turn(100, strings.Repeat("a", 100)+" "+strings.Repeat("b", 100)+" "+strings.Repeat("c", 100)+" "+strings.Repeat("d", 100)), true},
		{"one word per 20 tokens", turn(100, strings.Repeat(strings.Repeat("a", 79)+" ", 5)), false},
	}
	for _, c := range cases {
		if got := NotSpeech(c.t); got != c.want {
			t.Errorf("%s: NotSpeech %v, want %v", c.name, got, c.want)
		}
	}
	tr := turn(256, gibberish)
	tr.Chunks = append(tr.Chunks, Chunk{Text: "hmm", Reasoning: true})
	SpeakPerToken(tr)
	for i, c := range tr.Chunks {
		if c.Reasoning != (c.Text == "hmm") || !c.Reasoning && (!c.Textless || c.Text != "") {
			t.Fatalf("chunk %d after SpeakPerToken: %+v", i, c)
		}
	}
}
