package tts_test

import (
	"bufio"
	"encoding/json"
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
	"github.com/speech-pipeline/underrun/tts"
)

var update = flag.Bool("update", false, "rewrite the tokens of testdata/chunking/replies.jsonl and more-replies.jsonl with tokens.Split")

// reply is one assistant reply of the fixture corpus, with the tokens it is
// streamed in.
type reply struct {
	ID     string   `json:"id"`
	Set    string   `json:"set"` // "tune", "holdout" or "fresh" (see testdata/chunking/SOURCES.md)
	Text   string   `json:"text"`
	Tokens []string `json:"tokens"`
}

// chunk is one piece of text handed to the synthesizer and the token whose
// arrival released it (-1: the end of the turn).
type chunk struct {
	Text    string `json:"text"`
	Trigger int    `json:"trigger"`
}

const fixtureDir = "testdata/chunking"

func loadReplies(t testing.TB) []reply {
	t.Helper()
	return loadCorpus(t, "replies.jsonl")
}

// loadMoreReplies loads the replies that hold the Pipecat presets to
// Pipecat's aggregation on more varied text (testdata/chunking/more-replies.jsonl,
// written by gen/more_replies.py).
func loadMoreReplies(t testing.TB) []reply {
	t.Helper()
	return loadCorpus(t, "more-replies.jsonl")
}

func loadCorpus(t testing.TB, name string) []reply {
	t.Helper()
	var out []reply
	readJSONL(t, filepath.Join(fixtureDir, name), func(line []byte) error {
		var r reply
		err := json.Unmarshal(line, &r)
		out = append(out, r)
		return err
	})
	if *update {
		var b strings.Builder
		for i := range out {
			out[i].Tokens = tokens.Split(out[i].Text)
			line, err := json.Marshal(out[i])
			if err != nil {
				t.Fatal(err)
			}
			b.Write(line)
			b.WriteByte('\n')
		}
		if err := os.WriteFile(filepath.Join(fixtureDir, name), []byte(b.String()), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	for _, r := range out {
		if strings.Join(r.Tokens, "") != r.Text {
			t.Fatalf("%s: reply %s: tokens do not concatenate to its text (run go test -run TestChunkingPresets -update)", name, r.ID)
		}
	}
	return out
}

func readJSONL(t testing.TB, path string, f func([]byte) error) {
	t.Helper()
	file, err := os.Open(path)
	if err != nil {
		t.Fatal(err)
	}
	defer file.Close()
	sc := bufio.NewScanner(file)
	sc.Buffer(nil, 1<<20)
	for n := 1; sc.Scan(); n++ {
		if err := f(sc.Bytes()); err != nil {
			t.Fatalf("%s:%d: %v", path, n, err)
		}
	}
	if err := sc.Err(); err != nil {
		t.Fatal(err)
	}
}

func loadExpect(t testing.TB, preset string) map[string][]chunk {
	t.Helper()
	out := map[string][]chunk{}
	readJSONL(t, filepath.Join(fixtureDir, "expect", preset+".jsonl"), func(line []byte) error {
		var e struct {
			ID     string  `json:"id"`
			Chunks []chunk `json:"chunks"`
		}
		err := json.Unmarshal(line, &e)
		out[e.ID] = e.Chunks
		return err
	})
	return out
}

// stream runs tokens through a chunker as the engine does (token i arrives
// at i ms) and returns the chunks it releases, whitespace-only ones left
// out (they carry no speech). Timer releases have trigger -2.
func stream(t testing.TB, c tts.Chunker, tokens []string) []chunk {
	t.Helper()
	var out []chunk
	text := ""
	released := 0
	emit := func(rel, trigger int) {
		if rel < released || rel > len(text) {
			t.Fatalf("release at %d after %d with %d bytes appended", rel, released, len(text))
		}
		if rel > released {
			if s := text[released:rel]; strings.TrimSpace(s) != "" {
				out = append(out, chunk{Text: s, Trigger: trigger})
			}
			released = rel
		}
	}
	for i, tok := range tokens {
		at := time.Duration(i) * time.Millisecond
		for {
			d, ok := c.Deadline()
			if !ok || d > at {
				break
			}
			emit(c.Expire(d), -2)
		}
		text += tok
		emit(c.Append(at, tok), i)
	}
	emit(c.Flush(), -1)
	if released != len(text) {
		t.Fatalf("flush released %d of %d bytes", released, len(text))
	}
	return out
}

// normalize makes chunk texts comparable across frameworks that strip,
// collapse or insert white space (LiveKit joins sentences with a space,
// even CJK ones that had none): white space is left out. Chunks that
// partition the same text are then equal exactly when their boundaries are.
func normalize(cs []chunk) []chunk {
	out := make([]chunk, len(cs))
	for i, c := range cs {
		out[i] = chunk{Text: strings.Join(strings.Fields(c.Text), ""), Trigger: c.Trigger}
	}
	return out
}

func formatChunks(cs []chunk) string {
	var b strings.Builder
	for _, c := range cs {
		fmt.Fprintf(&b, "\n    %q @%d", c.Text, c.Trigger)
	}
	return b.String()
}

// presetFixtures names, per preset, the framework expectations it is held
// to and the replies where it is known to differ (each with its class of
// difference, listed in cmd/underrun/docs/synthesis.md).
var presetFixtures = []struct {
	preset, expect string
	known          map[string]string
}{
	{"pipecat", "pipecat", nil},
	{"elevenlabs", "pipecat", nil},
	{"pipecat-1.11", "pipecat-1.11", nil},
	{"pipecat-0.0.96", "pipecat-0.0.96", nil},
	{"livekit-basic", "livekit-basic", nil},
	{"livekit", "livekit", nil},
	{"elevenlabs-schedule", "elevenlabs-schedule", nil},
}

func TestChunkingPresetsMatchFrameworks(t *testing.T) {
	t.Parallel()
	replies := loadReplies(t)
	for _, pf := range presetFixtures {
		t.Run(pf.preset, func(t *testing.T) {
			t.Parallel()
			p, err := tts.ParsePolicy(pf.preset)
			if err != nil {
				t.Fatal(err)
			}
			want := loadExpect(t, pf.expect)
			agree := map[string]int{}
			total := map[string]int{}
			for _, r := range replies {
				w, ok := want[r.ID]
				if !ok {
					t.Fatalf("no expectation for reply %s", r.ID)
				}
				got := normalize(stream(t, p.NewChunker(), r.Tokens))
				same := slices.Equal(got, normalize(w))
				total[r.Set]++
				class, known := pf.known[r.ID]
				switch {
				case same:
					agree[r.Set]++
					if known {
						t.Errorf("%s: listed as differing (%s) but agrees: drop it from the list", r.ID, class)
					}
				case !known:
					t.Errorf("%s (%s set) differs from the framework:\n  got:%s\n  want:%s", r.ID, r.Set, formatChunks(got), formatChunks(normalize(w)))
				}
			}
			for _, set := range []string{"tune", "holdout", "fresh"} {
				t.Logf("%s: %s set: %d of %d replies released exactly alike (%.0f%%)", pf.preset, set, agree[set], total[set], 100*float64(agree[set])/float64(total[set]))
				if set != "tune" && agree[set]*100 < 95*total[set] {
					t.Errorf("%s agrees on %d of %d replies of the %s set, under 95%%", pf.preset, agree[set], total[set], set)
				}
			}
		})
	}
}

// TestPresetsInTheEngine runs every preset through the engine on the
// fixture replies: the speech chunks it builds are the chunker's (same
// boundaries, same releasing token), released in time order. The engine
// makes no speech chunk of text without audio (a lone "%" or emoji under
// token chunking), so those are left out of the comparison.
func TestPresetsInTheEngine(t *testing.T) {
	t.Parallel()
	replies := loadReplies(t)
	for _, name := range []string{"token", "word", "sentence", "pipecat", "pipecat-1.11", "pipecat-0.0.96", "livekit", "livekit-basic", "elevenlabs", "elevenlabs-schedule", "cartesia", "timer:20ms"} {
		p, err := tts.ParsePolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		cfg := pipeline.DefaultConfig()
		cfg.Policy = p
		for _, r := range replies {
			play, err := pipeline.NewPlayout(cfg, r.ID)
			if err != nil {
				t.Fatal(err)
			}
			for i, tok := range r.Tokens {
				if err := play.Push(pipeline.Chunk{At: time.Duration(i) * time.Millisecond, Text: tok, Tokens: 1}); err != nil {
					t.Fatal(err)
				}
			}
			play.End()
			var want []chunk
			for _, c := range stream(t, p.NewChunker(), r.Tokens) {
				if cfg.Voice.Duration(c.Text) > 0 {
					want = append(want, c)
				}
			}
			var got []chunk
			last := time.Duration(0)
			for _, c := range play.Chunks {
				if c.Release < last {
					t.Errorf("%s %s: chunk released at %v after one at %v", name, r.ID, c.Release, last)
				}
				last = c.Release
				trigger := c.Trigger
				switch {
				case c.Timer:
					trigger = -2
				case c.To == len(r.Text) && trigger == len(r.Tokens)-1 && len(want) > 0 && want[len(want)-1].Trigger == -1:
					trigger = -1 // the end of the turn (the engine names the last token)
				}
				got = append(got, chunk{Text: r.Text[c.From:c.To], Trigger: trigger})
			}
			if !slices.Equal(normalize(got), normalize(want)) {
				t.Errorf("%s %s: the engine's chunks differ from the chunker's:\n  engine:%s\n  chunker:%s", name, r.ID, formatChunks(got), formatChunks(want))
			}
		}
	}
}
