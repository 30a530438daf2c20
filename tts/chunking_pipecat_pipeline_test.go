package tts_test

import (
	"slices"
	"testing"

	"github.com/speech-pipeline/underrun/tts"
)

// punktEraDiffers names the replies where a real pipecat-ai 1.14.0
// pipeline releases text otherwise than the pipecat-1.11 preset (Pipecat
// 0.0.97 to 1.11.x, NLTK Punkt's sentences), each with its class: what
// changed in 1.12.0.
var punktEraDiffers = map[string]string{
	// Pipecat 1.12 asks sentencex (utils/string.py match_endofsentence), not
	// Punkt, whether a sentence ended: abbreviations (etc., p.m., Ph.D., e.g.),
	// ellipses, initials, quotes and list numbers split otherwise
	"dr-appointment": "sentencex", "quote-closing": "sentencex", "ellipsis-dots": "sentencex", "abbrev-etc": "sentencex",
	"lk-test-text": "sentencex", "numbers-list": "sentencex", "phd": "sentencex", "nested-quote": "sentencex",
	"long-abbrev-run": "sentencex", "long-list-run": "sentencex", "weather-report": "sentencex", "recipe": "sentencex",
	"sci": "sentencex", "markdown-list": "sentencex", "quotes-curly": "sentencex", "ellipsis-trail": "sentencex",
	"ie-eg": "sentencex", "exclaim-quote": "sentencex", "f-steps-md": "sentencex", "f-quote-mid": "sentencex",
	"f-ellipsis-lower": "sentencex", "f-abbr-co": "sentencex", "f-us-states": "sentencex", "f-initial-name": "sentencex",
	"f-time-pm": "sentencex",
	// the same sentences, one released a chunk later: when the check at the
	// first character after the punctuation finds no end, 1.12 checks again
	// where that word ends (simple_text_aggregator.py _advance_lookahead)
	"short-sentences": "word-end-retry",
}

// TestPresetsAgainstPipecatPipeline holds the Pipecat presets to the
// release points recorded from a real pipecat-ai 1.14.0 pipeline
// (testdata/chunking/expect/pipecat-pipeline.jsonl, written by
// cmd/underrun's TestPipecatReleasePoints: OpenAILLMService streaming each
// reply token by token, OpenAITTSService's own sentence aggregation): the
// pipecat preset releases every reply alike, in text and in the chunk that
// released it; pipecat-1.11 (the Punkt era) differs exactly on the replies
// of punktEraDiffers.
func TestPresetsAgainstPipecatPipeline(t *testing.T) {
	t.Parallel()
	agree, classes := againstRecording(t, "pipecat", "pipecat-pipeline", "Pipecat 1.14.0", map[string]string{})
	t.Logf("pipecat against a pipecat-ai 1.14.0 pipeline: %d of %d replies released exactly alike; the others by class %v",
		agree, len(loadReplies(t)), classes)
	agree, classes = againstRecording(t, "pipecat-1.11", "pipecat-pipeline", "Pipecat 1.14.0", punktEraDiffers)
	t.Logf("pipecat-1.11 against a pipecat-ai 1.14.0 pipeline: %d of %d replies released exactly alike; the others by class %v",
		agree, len(loadReplies(t)), classes)
}

// againstRecording streams every fixture reply through preset and
// compares what it releases with a framework's recording (expect/NAME):
// with differs given, a reply that differs must be listed there, and one
// listed must differ. It returns how many replies were released alike, and
// how many of the others fell in each class.
func againstRecording(t *testing.T, preset, recording, framework string, differs map[string]string) (int, map[string]int) {
	t.Helper()
	want := loadExpect(t, recording)
	p, err := tts.ParsePolicy(preset)
	if err != nil {
		t.Fatal(err)
	}
	agree := 0
	classes := map[string]int{}
	for _, r := range loadReplies(t) {
		w, ok := want[r.ID]
		if !ok {
			t.Fatalf("no recording for reply %s", r.ID)
		}
		got := normalize(stream(t, p.NewChunker(), r.Tokens))
		same := slices.Equal(got, normalize(w))
		if same {
			agree++
		}
		if differs == nil {
			continue
		}
		class, known := differs[r.ID]
		switch {
		case same && known:
			t.Errorf("%s: listed as differing (%s) but agrees: drop it from the list", r.ID, class)
		case !same && !known:
			t.Errorf("%s differs from %s:\n  got:%s\n  want:%s", r.ID, framework, formatChunks(got), formatChunks(normalize(w)))
		case !same:
			classes[class]++
		}
	}
	return agree, classes
}
