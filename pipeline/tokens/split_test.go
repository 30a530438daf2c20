package tokens

import (
	"strings"
	"testing"
	"unicode/utf8"
)

func TestSplit(t *testing.T) {
	t.Parallel()
	tests := []struct {
		text string
		want []string
	}{
		{"", nil},
		{"   ", []string{"   "}},
		{"Hello", []string{"Hello"}},
		{"Hello there", []string{"Hello", " there"}},
		{"Sure, I can.", []string{"Sure", ",", " I", " can", "."}},
		{"  lead", []string{"  lead"}},
		{"trail  ", []string{"trail  "}},
		{"leading", []string{"leadin", "g"}},
		{"extraordinary", []string{"extrao", "rdinar", "y"}},
		{"don't stop", []string{"don't", " stop"}},
		{"10:30 p.m.", []string{"10", ":", "30", " p", ".", "m", "."}},
		{"a\nb", []string{"a", "\nb"}},
		{"über straße", []string{"über", " straße"}},
		{"东京", []string{"东京"}},
		{"hi 👋 there", []string{"hi", " 👋", " there"}},
		{"...", []string{".", ".", "."}},
	}
	for _, tt := range tests {
		got := Split(tt.text)
		if strings.Join(got, "|") != strings.Join(tt.want, "|") || len(got) != len(tt.want) {
			t.Errorf("Split(%q) = %q, want %q", tt.text, got, tt.want)
		}
		if n := Count(tt.text); n != len(tt.want) {
			t.Errorf("Count(%q) = %d, want %d", tt.text, n, len(tt.want))
		}
	}
}

func TestSplitRate(t *testing.T) {
	t.Parallel()
	// English prose: about 1.3 tokens per word, as the package says.
	text := "Your flight is delayed. The new departure time is nineteen forty, from gate fourteen. " +
		"Remember to bring your passport, your ticket, and a reusable water bottle."
	words := len(strings.Fields(text))
	got := float64(Count(text)) / float64(words)
	if got < 1.2 || got > 1.5 {
		t.Errorf("%.2f tokens per word, want about 1.3", got)
	}
}

func TestFiller(t *testing.T) {
	t.Parallel()
	var f Filler
	var b strings.Builder
	n := Count(FillerText)
	for range n {
		b.WriteString(f.Text(1))
	}
	if got := b.String(); got != FillerText {
		t.Errorf("one pass of filler pieces = %q, want %q", got, FillerText)
	}
	// it starts over, several pieces at a time
	if got, want := f.Text(2), "The quick"; got != want {
		t.Errorf("Text(2) after a full pass = %q, want %q", got, want)
	}
}

func FuzzSplit(f *testing.F) {
	for _, s := range []string{"", "Hello there, friend.", "  x  ", "extraordinary's", "a\tb\nc", "\xff\xfe", "東京 👋"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, text string) {
		got := Split(text)
		if strings.Join(got, "") != text {
			t.Fatalf("pieces %q do not give back %q", got, text)
		}
		if Count(text) != len(got) {
			t.Fatalf("Count = %d, Split made %d", Count(text), len(got))
		}
		for i, p := range got {
			if p == "" {
				t.Fatalf("piece %d is empty: %q", i, got)
			}
			if utf8.ValidString(text) && !utf8.ValidString(p) {
				t.Fatalf("piece %d %q cuts a character", i, p)
			}
		}
	})
}

func BenchmarkSplit(b *testing.B) {
	text := strings.Repeat("Your flight is delayed, and the new departure time is nineteen forty. ", 20)
	b.ReportAllocs()
	for b.Loop() {
		_ = Split(text)
	}
}
