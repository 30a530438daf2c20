package tts_test

import (
	"slices"
	"testing"

	"github.com/speech-pipeline/underrun/tts"
)

// TestPipecatPresetOnMoreReplies holds the pipecat preset to what
// pipecat-ai 1.14.0's SimpleTextAggregator releases (with sentencex
// 1.0.32, run from the observer's virtual environment by
// gen/pipecat_sentencex.py) on the replies of more-replies.jsonl: the
// tune set built from templates (abbreviations, numbers, quotes,
// ellipses, lists, other scripts, Markdown) and the holdout set written by
// hand, released alike in text and in the token that released each chunk.
func TestPipecatPresetOnMoreReplies(t *testing.T) {
	t.Parallel()
	replies := loadMoreReplies(t)
	want := loadExpect(t, "pipecat-more")
	p, err := tts.ParsePolicy("pipecat")
	if err != nil {
		t.Fatal(err)
	}
	agree, total := map[string]int{}, map[string]int{}
	for _, r := range replies {
		w, ok := want[r.ID]
		if !ok {
			t.Fatalf("no expectation for reply %s (run gen/pipecat_sentencex.py)", r.ID)
		}
		got := normalize(stream(t, p.NewChunker(), r.Tokens))
		total[r.Set]++
		if slices.Equal(got, normalize(w)) {
			agree[r.Set]++
			continue
		}
		t.Errorf("%s (%s set) differs from Pipecat 1.14.0:\n  got:%s\n  want:%s", r.ID, r.Set, formatChunks(got), formatChunks(normalize(w)))
	}
	for _, set := range []string{"tune", "holdout"} {
		t.Logf("pipecat on more-replies, %s set: %d of %d replies released exactly alike", set, agree[set], total[set])
	}
}
