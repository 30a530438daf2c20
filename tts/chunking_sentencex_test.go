package tts

import (
	"encoding/json"
	"os"
	"strings"
	"testing"
)

// TestMatchEndOfSentenceAsPipecat holds sentencexEndOfSentence to
// pipecat-ai 1.14.0's match_endofsentence (with sentencex 1.0.32): every
// text SimpleTextAggregator asked it about on the chunking fixtures
// (replies.jsonl, more-replies.jsonl) and 1,500 random texts with ". The"
// after each, with Pipecat's answer (testdata/chunking/expect/pipecat-match.jsonl,
// written by gen/pipecat_sentencex.py; the answer counts characters).
func TestMatchEndOfSentenceAsPipecat(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("testdata/chunking/expect/pipecat-match.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	n, bad, quoted := 0, 0, 0
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var c struct {
			Text string `json:"text"`
			End  int    `json:"end"`
		}
		if err := json.Unmarshal([]byte(line), &c); err != nil {
			t.Fatal(err)
		}
		n++
		if first, count := firstSentence(string(trimPySpace([]byte(c.Text)))); count > 1 {
			if _, _, ok := quotedWordEnd(c.Text[:first]); ok {
				quoted++
			}
		}
		want := 0
		if c.End > 0 {
			want = byteOffset(c.Text, c.End)
		}
		if got := sentencexEndOfSentence([]byte(c.Text)); got != want {
			bad++
			if bad <= 20 {
				t.Errorf("%q: end %d, Pipecat %d (%q)", c.Text, got, want, c.Text[:want])
			}
		}
	}
	t.Logf("%d of %d texts answered as Pipecat answers (%d asked again with a quoted word blanked)", n-bad, n, quoted)
	if quoted == 0 {
		t.Error("no text reached the quoted-word check")
	}
}

// TestMatchEndOfSentenceTable: Pipecat's rules around sentencex, each case
// answered by pipecat-ai 1.14.0's match_endofsentence (in characters; here
// in bytes).
func TestMatchEndOfSentenceTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string
		want int
	}{
		{"Hello.", 6},                // one sentence, ends in punctuation
		{"Hello. W", 6},              // two sentences
		{"Hello", 0},                 // one, no punctuation
		{"Hello.   ", 6},             // white space at the end left out
		{`She said, "Dr. S`, 0},      // sentencex splits after "Dr.; blanked, Dr. is an abbreviation
		{`He said "Stop." Then`, 15}, // a quotation ends the sentence
		{"She said, “Dr. S", 0},
		{`She said, ""Dr. S`, 0}, // a run of marks blanked
		{`x"Dr. Smith`, 5},       // after a word character the match starts at the second mark: none, so the split stands
		{"«Mr. X", 0},
		{`A "b.c. D`, 0},
		{"“U.S. Then", 7}, // blanked, U.S. still ends a sentence before Then
		{"He wrote 'etc. And", 14},
		{"你好。我", 9}, // an unambiguous mark, sentencex's pieces
		{"Dr. Smith", 0},
		{"Wait… what", 0},
	} {
		if got := sentencexEndOfSentence([]byte(c.text)); got != c.want {
			t.Errorf("%q: %d, want %d", c.text, got, c.want)
		}
	}
}
