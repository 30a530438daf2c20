package sentencex

import (
	"bufio"
	"encoding/json"
	"flag"
	"os"
	"slices"
	"strings"
	"testing"
	"unicode/utf8"
)

var extra = flag.String("sentencex-texts", "",
	"also check Segment against this file of sentencex's pieces (JSON lines of text and pieces, as gen/pipecat_sentencex.py --texts writes)")

// recorded is a text and the pieces sentencex 1.0.32 cut it into.
type recorded struct {
	Text   string   `json:"text"`
	Pieces []string `json:"pieces"`
	Panic  string   `json:"panic"` // the library panicked (Segment must not)
}

func loadRecorded(t *testing.T, path string) []recorded {
	t.Helper()
	f, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var out []recorded
	sc := bufio.NewScanner(f)
	sc.Buffer(nil, 1<<22)
	for n := 1; sc.Scan(); n++ {
		var r recorded
		if err := json.Unmarshal(sc.Bytes(), &r); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
		out = append(out, r)
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
	return out
}

// TestSegmentAsSentencex holds Segment to what sentencex 1.0.32 returned
// for every text Pipecat 1.14.0 asked it about while aggregating the
// chunking fixtures, for each fixture reply whole
// (testdata/chunking/expect/sentencex.jsonl), and for 1,500 random texts
// made of pieces that reach its rarer rules (sentencex-random.jsonl), all
// written by gen/pipecat_sentencex.py from the installed library.
func TestSegmentAsSentencex(t *testing.T) {
	t.Parallel()
	files := []string{"../../testdata/chunking/expect/sentencex.jsonl", "../../testdata/chunking/expect/sentencex-random.jsonl"}
	if *extra != "" {
		files = append(files, *extra)
	}
	for _, file := range files {
		recs := loadRecorded(t, file)
		bad, panics := 0, 0
		for _, r := range recs {
			got := Segment(r.Text)
			if r.Panic != "" {
				panics++
				continue
			}
			if slices.Equal(got, r.Pieces) {
				continue
			}
			bad++
			if bad <= 40 {
				t.Errorf("%q:\n  got  %q\n  want %q", r.Text, got, r.Pieces)
			}
		}
		t.Logf("%s: %d of %d texts cut as sentencex cuts them (%d more on which it panicked)", file, len(recs)-bad-panics, len(recs)-panics, panics)
	}
}

// TestSegmentTable checks rules one at a time, each case a text and the
// pieces sentencex 1.0.32 returned for it (run through the library).
func TestSegmentTable(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		text string
		want []string
	}{
		{"Hello world. This is a test.", []string{"Hello world. ", "This is a test."}},
		{"Call Dr. Lee. He knows.", []string{"Call Dr. Lee. ", "He knows."}},
		{"It's 5 p.m. Then we go.", []string{"It's 5 p.m. ", "Then we go."}},
		{"First.\n\nSecond.", []string{"First.", "\n\n", "Second."}},
		{"Well... no. Fine.", []string{"Well... no. Fine."}}, // "no." is an abbreviation (No. 5)
		{`She said "Stop." Then left.`, []string{`She said "Stop." `, "Then left."}},
		{"Wow!!! Great.", []string{"Wow!!! ", "Great."}},
		{"It costs $1.20 today.", []string{"It costs $1.20 today."}},
		{"", nil},
	} {
		if got := Segment(c.text); !slices.Equal(got, c.want) {
			t.Errorf("Segment(%q) = %q, want %q", c.text, got, c.want)
		}
	}
}

// FuzzSegment: the pieces join to the text (up to 10 KiB, where
// sentencex keeps every byte), none empty.
func FuzzSegment(f *testing.F) {
	for _, s := range []string{"Hello. World.", "Dr. Who?! Yes... no.", "'a' `b` “c.” (d.) e@f.gh.", "1. x\n2. y\n\n• z", "你好。 ¿Qué? « Oui ». „Ja“."} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		if len(s) > bigText {
			return
		}
		pieces := Segment(s)
		if strings.Join(pieces, "") != s {
			t.Fatalf("pieces %q do not join to %q", pieces, s)
		}
		for _, p := range pieces {
			if p == "" {
				t.Fatalf("an empty piece in %q", pieces)
			}
			if utf8.ValidString(s) && !utf8.ValidString(p) {
				t.Fatalf("piece %q cuts a character of %q", p, s)
			}
		}
	})
}
