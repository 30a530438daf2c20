package tts

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"
)

// presetNames are every policy ParsePolicy knows, with parameters where
// they take them.
var presetNames = []string{
	"token", "word", "sentence", "pipecat", "pipecat-0.0.96", "livekit", "livekit-basic",
	"elevenlabs", "elevenlabs-schedule", "elevenlabs-schedule:50,80", "cartesia", "cartesia:40ms", "timer:25ms",
}

var propertyTexts = []string{
	"Sure! I can help with that. What time works best for you?",
	"Your appointment with Dr. Patel is on Jan. 14 at 3 p.m. Please arrive ten minutes early.",
	"Here are the steps:\n1. Open the app.\n2. Tap Settings.\n\n**Done.** Visit https://example.com/a.b?c=1 at 10:30...",
	"你好！我可以帮你预订餐厅。请告诉我人数和时间。こんにちは。今日はいい天気ですね。",
	"She said, \"I'll be there soon.\" Then… she hung up 🎉 ¿Vale? नमस्ते। आप कैसे हैं?",
	"", "   ", ".", "...", "Hi.\n\n\n", "a\xffb. C\xc3", strings.Repeat("word ", 300),
}

// checkChunker streams tokens (arriving at the given times) through c as
// the engine does and checks the Chunker contract: releases never go
// back, never pass the text appended, happen no earlier than the last
// arrival, and the end of the turn releases everything, so the chunks
// concatenate to the turn's text. It returns the chunks.
func checkChunker(t testing.TB, name string, c Chunker, tokens []string, at []time.Duration) []string {
	t.Helper()
	var text strings.Builder
	var chunks []string
	released, now := 0, time.Duration(0)
	emit := func(rel int, when time.Duration, how string) {
		if rel < released || rel > text.Len() {
			t.Fatalf("%s: %s released up to %d after %d, with %d bytes appended (tokens %q)", name, how, rel, released, text.Len(), tokens)
		}
		if when < now {
			t.Fatalf("%s: %s released at %v, before %v (tokens %q)", name, how, when, now, tokens)
		}
		now = when
		if rel > released {
			chunks = append(chunks, text.String()[released:rel])
			released = rel
		}
	}
	for i, tok := range tokens {
		for {
			d, ok := c.Deadline()
			if !ok || d > at[i] {
				break
			}
			emit(c.Expire(d), max(d, now), "the timer")
		}
		text.WriteString(tok)
		emit(c.Append(at[i], tok), at[i], "Append")
		if name == "token" && released != text.Len() {
			t.Fatalf("token: token %d (%q) not released", i, tok)
		}
	}
	emit(c.Flush(), now, "Flush")
	if got := strings.Join(chunks, ""); got != text.String() {
		t.Fatalf("%s: chunks %q concatenate to %q, not the turn's text %q", name, chunks, got, text.String())
	}
	return chunks
}

// randomTokens cuts text into pieces of 1-8 bytes (not always at
// character boundaries) arriving 0-30 ms apart.
func randomTokens(r *rand.Rand, text string) ([]string, []time.Duration) {
	var tokens []string
	var at []time.Duration
	t := time.Duration(0)
	for len(text) > 0 {
		n := min(len(text), 1+r.IntN(8))
		tokens = append(tokens, text[:n])
		text = text[n:]
		t += time.Duration(r.IntN(30)) * time.Millisecond
		at = append(at, t)
	}
	return tokens, at
}

func TestChunkerProperties(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(1, 2))
	for _, name := range presetNames {
		p, err := ParsePolicy(name)
		if err != nil {
			t.Fatal(err)
		}
		c := p.NewChunker()
		for trial := range 40 {
			text := propertyTexts[trial%len(propertyTexts)]
			tokens, at := randomTokens(r, text)
			first := checkChunker(t, name, c, tokens, at)
			c.Reset()
			// a chunker reused after Reset behaves as a new one
			again := checkChunker(t, name, c, tokens, at)
			if strings.Join(first, "|") != strings.Join(again, "|") {
				t.Fatalf("%s after Reset: %q, new: %q", name, again, first)
			}
			c.Reset()
		}
	}
}

// fuzzPreset checks the Chunker contract of one preset on any text cut
// into tokens where cuts says.
func fuzzPreset(f *testing.F, name string) {
	for _, s := range propertyTexts {
		f.Add(s, []byte{3, 1, 4, 1, 5, 9, 2, 6})
	}
	p, err := ParsePolicy(name)
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, text string, cuts []byte) {
		if len(text) > 4096 {
			return
		}
		var tokens []string
		var at []time.Duration
		for i := 0; len(text) > 0; i++ {
			n := 1
			if len(cuts) > 0 {
				n = 1 + int(cuts[i%len(cuts)]%16)
			}
			n = min(n, len(text))
			tokens = append(tokens, text[:n])
			text = text[n:]
			at = append(at, time.Duration(i)*7*time.Millisecond)
		}
		checkChunker(t, name, p.NewChunker(), tokens, at)
	})
}

func FuzzChunkerToken(f *testing.F)              { fuzzPreset(f, "token") }
func FuzzChunkerWord(f *testing.F)               { fuzzPreset(f, "word") }
func FuzzChunkerSentence(f *testing.F)           { fuzzPreset(f, "sentence") }
func FuzzChunkerPipecat(f *testing.F)            { fuzzPreset(f, "pipecat") }
func FuzzChunkerPipecat096(f *testing.F)         { fuzzPreset(f, "pipecat-0.0.96") }
func FuzzChunkerLiveKit(f *testing.F)            { fuzzPreset(f, "livekit") }
func FuzzChunkerLiveKitBasic(f *testing.F)       { fuzzPreset(f, "livekit-basic") }
func FuzzChunkerElevenLabs(f *testing.F)         { fuzzPreset(f, "elevenlabs") }
func FuzzChunkerElevenLabsSchedule(f *testing.F) { fuzzPreset(f, "elevenlabs-schedule:30,40") }
func FuzzChunkerCartesia(f *testing.F)           { fuzzPreset(f, "cartesia:20ms") }
func FuzzChunkerTimer(f *testing.F)              { fuzzPreset(f, "timer:15ms") }

// TestSplittingOnlyWhereItMatters checks the shortcut of pipecat-0.0.96,
// livekit and livekit-basic (splitting only where a sentence end or the
// words after it are streaming) against splitting after every token, as
// the frameworks do, on the property texts and the fixture replies cut
// at random.
func TestSplittingOnlyWhereItMatters(t *testing.T) {
	t.Parallel()
	texts := append(append([]string{}, propertyTexts...), fixtureTexts(t)...)
	r := rand.New(rand.NewPCG(3, 4))
	for _, text := range texts {
		tokens, at := randomTokens(r, text)
		compareShortcuts(t, text, tokens, at)
	}
}

// shortcutPairs are the chunkers that split only where it matters, each
// with one that splits after every token.
var shortcutPairs = []struct {
	name       string
	fast, full func() Chunker
}{
	{"pipecat-0.0.96", func() Chunker { return &pipecat096Chunker{} }, func() Chunker { return &pipecat096Chunker{always: true} }},
	{"livekit", func() Chunker { return newLiveKitChunker(blingfireSplit) }, func() Chunker { c := newLiveKitChunker(blingfireSplit); c.always = true; return c }},
	{"livekit-basic", func() Chunker { return newLiveKitChunker(basicSplit) }, func() Chunker { c := newLiveKitChunker(basicSplit); c.always = true; return c }},
}

func compareShortcuts(t *testing.T, text string, tokens []string, at []time.Duration) {
	t.Helper()
	for _, p := range shortcutPairs {
		fast := checkChunker(t, p.name, p.fast(), tokens, at)
		full := checkChunker(t, p.name, p.full(), tokens, at)
		if strings.Join(fast, "|") != strings.Join(full, "|") {
			t.Errorf("%s on %q:\n splitting where it matters: %q\n after every token:        %q", p.name, text, fast, full)
		}
	}
}

func FuzzSplittingShortcut(f *testing.F) {
	for _, s := range propertyTexts {
		f.Add(s, uint64(1))
	}
	f.Fuzz(func(t *testing.T, text string, seed uint64) {
		if len(text) > 2048 {
			return
		}
		tokens, at := randomTokens(rand.New(rand.NewPCG(seed, 1)), text)
		compareShortcuts(t, text, tokens, at)
	})
}

// fixtureTexts returns the texts of testdata/chunking/replies.jsonl.
func fixtureTexts(t *testing.T) []string {
	t.Helper()
	b, err := os.ReadFile("testdata/chunking/replies.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	var out []string
	for line := range strings.SplitSeq(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			Text string `json:"text"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		out = append(out, r.Text)
	}
	return out
}
