package tts

import (
	"bufio"
	"encoding/json"
	"os"
	"slices"
	"testing"
)

// TestPunktMatchesNLTK holds the Go Punkt to NLTK's own answers: every text
// Pipecat (current and 0.0.96) asked NLTK's sent_tokenize to split while
// streaming the fixture corpus, with the sentences NLTK returned
// (testdata/chunking/gen/generate.py wrote them).
func TestPunktMatchesNLTK(t *testing.T) {
	t.Parallel()
	f, err := os.Open("testdata/chunking/expect/punkt.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	p := englishPunkt()
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<20)
	n, bad := 0, 0
	for sc.Scan() {
		var c struct {
			Text      string   `json:"text"`
			Sentences []string `json:"sentences"`
		}
		if err := json.Unmarshal(sc.Bytes(), &c); err != nil {
			t.Fatal(err)
		}
		n++
		if got := p.sentences(c.Text); !slices.Equal(got, c.Sentences) {
			bad++
			if bad <= 20 {
				t.Errorf("%q:\n got %q\nwant %q", c.Text, got, c.Sentences)
			}
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	t.Logf("%d of %d texts split as NLTK splits them", n-bad, n)
}
