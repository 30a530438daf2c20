package pipeline

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// TestMaxTPOTMemoKey: turns that say the same are searched once whatever
// their TTFT under the tts package's policies, and once per TTFT under a
// policy of another package; turns that say something else are searched
// again.
func TestMaxTPOTMemoKey(t *testing.T) {
	t.Parallel()
	turn := func(ttft time.Duration, texts ...string) *Turn {
		tr := &Turn{ID: "t"}
		for i, s := range texts {
			c := Chunk{At: ttft + time.Duration(i)*40*time.Millisecond, Text: s, Tokens: 1}
			if s == "" {
				c.Textless = true
			}
			tr.Chunks = append(tr.Chunks, c)
		}
		return tr
	}
	words := []string{"Hello", " there,", " my", " friend."}
	own := tts.PolicyFunc{Label: "own", New: func() tts.Chunker { p, _ := tts.ParsePolicy("word"); return p.NewChunker() }}
	type chunker struct{ tts.Chunker }
	other := tts.PolicyFunc{Label: "other", New: func() tts.Chunker { return chunker{own.New()} }}
	for _, c := range []struct {
		name     string
		policy   tts.Policy
		searches int
	}{
		{"tts", nil, 4},     // words, text-less of 4, text-less of 5, other words
		{"tts-own", own, 4}, // a PolicyFunc of tts chunkers: theirs
		{"other", other, 6}, // the moved turns are searched again
	} {
		cfg := DefaultConfig()
		if c.policy != nil {
			cfg.Policy = c.policy
		}
		m, err := newMaxTPOTMemo(cfg)
		if err != nil {
			t.Fatal(err)
		}
		for _, tr := range []*Turn{
			turn(100*time.Millisecond, words...),
			turn(350*time.Millisecond, words...),
			turn(100*time.Millisecond, "", "", "", ""),
			turn(170*time.Millisecond, "", "", "", ""),
			turn(100*time.Millisecond, "", "", "", "", ""),
			turn(100*time.Millisecond, "Hello", " there,", " my", " friends."),
		} {
			got, ok := m.MaxTPOT(tr)
			want, wantOK, err := MaxTPOT(cfg, tr, nil)
			if err != nil || got != want || ok != wantOK {
				t.Errorf("%s: memo %v %v, MaxTPOT %v %v %v", c.name, got, ok, want, wantOK, err)
			}
		}
		if len(m.answers) != c.searches {
			t.Errorf("%s: %d searches, want %d", c.name, len(m.answers), c.searches)
		}
	}
}
