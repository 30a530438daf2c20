package tts

import (
	"strings"
	"testing"
	"time"
)

// releases feeds tokens (one per millisecond) and returns the text of each
// released chunk, with the index of the token whose arrival released it
// (-1 for the final flush).
func releases(t *testing.T, policy string, tokens ...string) []string {
	t.Helper()
	p, err := ParsePolicy(policy)
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewChunker()
	var all strings.Builder
	var out []string
	released := 0
	emit := func(rel int, label string) {
		if rel > released {
			out = append(out, all.String()[released:rel]+"@"+label)
			released = rel
		}
	}
	for i, tok := range tokens {
		at := time.Duration(i) * time.Millisecond
		if d, ok := c.Deadline(); ok && d <= at {
			emit(c.Expire(d), "timer")
		}
		all.WriteString(tok)
		emit(c.Append(at, tok), string(rune('0'+i)))
	}
	emit(c.Flush(), "end")
	return out
}

func TestChunkingPolicies(t *testing.T) {
	t.Parallel()
	tests := []struct {
		policy string
		tokens []string
		want   []string
	}{
		{"token", []string{"Hel", "lo", " there"}, []string{"Hel@0", "lo@1", " there@2"}},
		// a word is complete when white space follows it
		{"word", []string{"Hel", "lo", " there", ",", " you"}, []string{"Hello @2", "there, @4", "you@end"}},
		// a sentence is released when the next non-space character arrives
		{"sentence", []string{"Hi", ".", " How", " are", " you", "?"}, []string{"Hi. @2", "How are you?@end"}},
		{"sentence", []string{"Pi is 3", ".", "14", ". Yes"}, []string{"Pi is 3.14. @3", "Yes@end"}},
		{"sentence", []string{"He said \"hi.\"", " Then"}, []string{"He said \"hi.\" @1", "Then@end"}},
		// LiveKit: sentences under 20 characters merge into the next
		{"livekit", []string{"Hi.", " Ok.", " This sentence is long enough.", " Next"}, []string{"Hi. Ok. This sentence is long enough.@3", " Next@end"}},
		// Cartesia: a sentence, or everything held once the oldest text
		// has waited the delay; never inside 10:30 or a URL
		{"timer:2ms", []string{"a", "b", "c", "d", "e. F", "g"}, []string{"ab@timer", "cd@timer", "e. @4", "Fg@end"}},
		{"cartesia", []string{"See", " x", ".com", " at", " 10", ":", "30", ".", " Ok"}, []string{"See x.com at 10:30. @8", "Ok@end"}},
		{"cartesia:3ms", []string{"See", " https", "://", "x", ".com", " now", "."}, []string{"See https://@timer", "x.com now@timer", ".@end"}},
		{"cartesia", []string{"One", ".", " Two", " three"}, []string{"One. @2", "Two three@end"}},
	}
	for _, tt := range tests {
		got := releases(t, tt.policy, tt.tokens...)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") {
			t.Errorf("%s %q:\n got %q\nwant %q", tt.policy, tt.tokens, got, tt.want)
		}
	}
}

func TestElevenLabsSchedule(t *testing.T) {
	t.Parallel()
	// 10-character tokens: releases after 120, then 160, 250, 290, 290
	// more characters.
	tok := "abcdefghi "
	tokens := make([]string, 120)
	for i := range tokens {
		tokens[i] = tok
	}
	got := releases(t, "elevenlabs-schedule", tokens...)
	var lens []int
	for _, r := range got {
		lens = append(lens, strings.Index(r, "@"))
	}
	// releases at the end of the word that fills the schedule (the space
	// after it opens the next chunk)
	want := []int{119, 160, 250, 290, 290, 91}
	if len(lens) != len(want) {
		t.Fatalf("chunk lengths %v, want %v", lens, want)
	}
	for i := range want {
		if lens[i] != want[i] {
			t.Fatalf("chunk lengths %v, want %v", lens, want)
		}
	}
}

// TestElevenLabsScheduleAfterFlush: the reply after a flush (a tool call
// ends the LLM's reply) is a new ElevenLabs stream: its schedule starts
// at the first length again.
func TestElevenLabsScheduleAfterFlush(t *testing.T) {
	t.Parallel()
	p, err := ParsePolicy("elevenlabs-schedule:50,100")
	if err != nil {
		t.Fatal(err)
	}
	c := p.NewChunker()
	word := "abcdefghi " // 10 characters
	n := 0
	feed := func(words int) (released int) {
		for range words {
			released = c.Append(0, word)
			n += len(word)
		}
		return released
	}
	if rel := feed(6); rel != 49 {
		t.Fatalf("first reply released %d bytes, want 49 (the schedule's 50 characters)", rel)
	}
	if rel := c.Flush(); rel != n {
		t.Fatalf("flush released %d, want all %d", rel, n)
	}
	start := n
	if rel := feed(6); rel != start+49 {
		t.Errorf("after the flush %d bytes released, want %d: the schedule's first 50 characters again", rel-start, 49)
	}
}

func TestParsePolicyErrors(t *testing.T) {
	t.Parallel()
	for _, bad := range []string{"", "para", "timer:", "timer:-1s", "timer:abc"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("ParsePolicy(%q) accepted", bad)
		}
	}
	p, err := ParsePolicy("timer")
	if err != nil || p.Name() != "timer:3s" {
		t.Errorf("timer default = %v, %v", p, err)
	}
}

func TestChunkerReset(t *testing.T) {
	t.Parallel()
	for _, name := range []string{"token", "word", "sentence", "livekit", "elevenlabs", "timer:1s"} {
		p, _ := ParsePolicy(name)
		c := p.NewChunker()
		c.Append(0, "Some text. More")
		c.Flush()
		c.Reset()
		if got := c.Flush(); got != 0 {
			t.Errorf("%s: after Reset, Flush releases %d bytes", name, got)
		}
	}
}

func TestParsePolicyNames(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, want string }{
		{"token", "token"}, {"word", "word"}, {"sentence", "sentence"},
		{"pipecat", "pipecat"}, {"pipecat-0.0.96", "pipecat-0.0.96"},
		{"livekit", "livekit"}, {"livekit-basic", "livekit-basic"},
		{"elevenlabs", "elevenlabs"},
		{"elevenlabs-schedule", "elevenlabs-schedule:120,160,250,290"},
		{"elevenlabs-schedule:50,100", "elevenlabs-schedule:50,100"},
		{"cartesia", "cartesia:3s"}, {"cartesia:500ms", "cartesia:500ms"},
		{"timer:500ms", "timer:500ms"}, {" Pipecat ", "pipecat"},
	} {
		p, err := ParsePolicy(tt.in)
		if err != nil {
			t.Errorf("ParsePolicy(%q): %v", tt.in, err)
			continue
		}
		if got := p.Name(); got != tt.want {
			t.Errorf("ParsePolicy(%q).Name() = %q, want %q", tt.in, got, tt.want)
		}
	}
	for _, bad := range []string{"pipecat:1s", "elevenlabs-schedule:", "elevenlabs-schedule:0,10", "elevenlabs-schedule:a", "cartesia:0s", "livekit:20"} {
		if _, err := ParsePolicy(bad); err == nil {
			t.Errorf("ParsePolicy(%q) accepted", bad)
		}
	}
}
