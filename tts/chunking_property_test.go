package tts

import (
	"encoding/json"
	"math/rand/v2"
	"os"
	"regexp"
	"strings"
	"testing"
	"time"
	"unicode/utf8"
)

// presetNames are every policy ParsePolicy knows, with parameters where
// they take them.
var presetNames = []string{
	"token", "word", "sentence", "pipecat", "pipecat-1.11", "pipecat-0.0.96", "livekit", "livekit-basic",
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
func FuzzChunkerPipecat111(f *testing.F)         { fuzzPreset(f, "pipecat-1.11") }
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
	return corpusTexts(t, "testdata/chunking/replies.jsonl")
}

// moreFixtureTexts returns the texts of testdata/chunking/more-replies.jsonl.
func moreFixtureTexts(t *testing.T) []string {
	t.Helper()
	return corpusTexts(t, "testdata/chunking/more-replies.jsonl")
}

func corpusTexts(t *testing.T, path string) []string {
	t.Helper()
	b, err := os.ReadFile(path)
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

// TestPipecatIgnoresTokenCuts: Pipecat's aggregator (1.12 on) takes text
// a character at a time, so what it has released after any part of a turn
// depends on the whole characters of that part only, not on how they came
// in tokens. The property texts and fixture replies, streamed a character
// at a time, give the release after each character; cut at random into
// tokens (cut characters included), each Append returns the release after
// the last whole character it completed.
func TestPipecatIgnoresTokenCuts(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(5, 6))
	texts := append(append(append([]string{}, propertyTexts...), fixtureTexts(t)...), moreFixtureTexts(t)...)
	for _, text := range texts {
		// after[k]: the release once the bytes text[:k] are in, at each
		// character end k
		after := make([]int, len(text)+1)
		c := &pipecatChunker{}
		last := 0
		for i := 0; i < len(text); {
			_, size := utf8.DecodeRuneInString(text[i:])
			for k := i; k < i+size; k++ {
				after[k] = last
			}
			last = c.Append(0, text[i:i+size])
			i += size
			after[i] = last
		}
		for range 3 {
			tokens, _ := randomTokens(r, text)
			c := &pipecatChunker{}
			end := 0
			for i, tok := range tokens {
				end += len(tok)
				if got := c.Append(0, tok); got != after[end] {
					t.Fatalf("%q: token %d (%q, to byte %d) released to %d, a character at a time to %d (tokens %q)", text, i, tok, end, got, after[end], tokens)
				}
			}
		}
	}
}

// TestSentencexWindow: sentencex runs on the last sentencexWindow bytes of
// what the aggregator holds, where Pipecat gives it all. Turns that hold
// long text with no sentence end (the fixture replies run together, each
// sentence start put in lower case so that sentencex goes on) are streamed
// with a narrow window of 1 KiB and with one of 10 KiB, wider than any text
// held: the chunks are alike, except where the whole text holds a list
// item: sentencex makes every line that starts with a marker of a
// paragraph's list (• - 1. a) ...) an item that runs to the next one or to
// the paragraph's end, with no sentence end inside, so the whole paragraph
// after a last item is held, and a window that no longer sees the marker
// ends sentences there.
func TestSentencexWindow(t *testing.T) {
	t.Parallel()
	texts := append(fixtureTexts(t), moreFixtureTexts(t)...)
	r := rand.New(rand.NewPCG(7, 8))
	lower := regexp.MustCompile(`([.!?]["”’']?\s+)([A-Z])`)
	listLine := regexp.MustCompile(`\n[ \t]*([•◦▪■●○★➤▶►*+-]|\d+[.)]|[a-zA-Z][.)]|[ivx]+[.)]|\(\w+\))[ \t]`)
	const narrow = 1024
	long, same, lists := 0, 0, 0
	for trial := range 60 {
		var b strings.Builder
		for b.Len() < 6*narrow+trial*97 {
			b.WriteString(texts[r.IntN(len(texts))] + " ")
		}
		text := lower.ReplaceAllStringFunc(b.String(), strings.ToLower)
		tokens, at := randomTokens(r, text)
		windowed := checkChunker(t, "pipecat", &pipecatChunker{window: narrow}, tokens, at)
		whole := checkChunker(t, "pipecat", &pipecatChunker{window: 10 * 1024}, tokens, at)
		for _, c := range whole {
			if len(c) > narrow {
				long++
			}
		}
		if strings.Join(windowed, "|") == strings.Join(whole, "|") {
			same++
			continue
		}
		for i := range min(len(windowed), len(whole)) {
			if windowed[i] == whole[i] {
				continue
			}
			if listLine.MatchString("\n" + whole[i]) {
				lists++
			} else {
				t.Errorf("trial %d: chunk %d (%d bytes) windowed %q, whole %q", trial, i, len(whole[i]), windowed[i], whole[i])
			}
			break
		}
	}
	t.Logf("%d of 60 turns alike, %d differ after a list item; %d chunks longer than the window", same, lists, long)
	if long == 0 {
		t.Error("no chunk held longer than the window: the test tries nothing")
	}
}
