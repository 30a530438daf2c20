package pipeline

import (
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// TestConfigRefusesRatesNoOneSpeaks: the speaking rates and token times
// that looped in minPreroll frame by frame (issue 45: --wpm 1e-8,
// --token-audio 2562047h) are refused before anything plays.
func TestConfigRefusesRatesNoOneSpeaks(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		name string
		set  func(*Config)
	}{
		{"wpm 1e-8", func(c *Config) { c.Voice.WPM = 1e-8 }},
		{"wpm 1e-10", func(c *Config) { c.Voice.WPM = 1e-10 }},
		{"wpm 1e12", func(c *Config) { c.Voice.WPM = 1e12 }},
		{"voice token audio 2562047h", func(c *Config) { c.Voice.TokenAudio = 2562047 * time.Hour }},
		{"token audio 2562047h", func(c *Config) { c.TokenAudio = 2562047 * time.Hour }},
		{"sentence pause 2562047h", func(c *Config) { c.Voice.SentencePause = 2562047 * time.Hour }},
	} {
		cfg := DefaultConfig()
		tc.set(&cfg)
		if _, err := NewPlayout(cfg, ""); !errors.Is(err, ErrConfig) {
			t.Errorf("%s: %v, want ErrConfig", tc.name, err)
		}
	}
}

// TestMinPrerollLongestTurn plays the longest turn the limits allow (the
// readers' 2^18 tokens a turn, text-less, each spoken tts.MaxTokenAudio:
// 728 hours of audio in one chunk, then one token 800 hours in) at an RTF
// that makes minPreroll count the first chunk's frames: the count is a
// search, not a walk, so it ends, and its pre-roll is the smallest that
// removes the gap.
func TestMinPrerollLongestTurn(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	p, err := tts.ParsePolicy("token")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy, cfg.TokenAudio = p, tts.MaxTokenAudio
	cfg.Synth = tts.Synth{Mode: tts.ModeStream, TTFA: 100 * ms, RTF: 0.5}
	turn := &Turn{ID: "long", Status: StatusOK, Chunks: []Chunk{
		{At: 0, Tokens: 1<<18 - 1, Textless: true},
		{At: 800 * time.Hour, Tokens: 1, Textless: true},
	}}
	pl := play(t, cfg, turn)
	if len(pl.Underruns) == 0 || pl.MinPreroll <= 0 {
		t.Fatalf("%d underruns, min pre-roll %v; want the gap before the last token and a pre-roll that removes it", len(pl.Underruns), pl.MinPreroll)
	}
	cfg.Preroll = pl.MinPreroll
	if q := play(t, cfg, turn); len(q.Underruns) != 0 {
		t.Errorf("pre-roll %v leaves %d underruns", cfg.Preroll, len(q.Underruns))
	}
	cfg.Preroll -= ms
	if q := play(t, cfg, turn); len(q.Underruns) == 0 {
		t.Errorf("pre-roll %v is not the smallest: %v removes the gap too", pl.MinPreroll, cfg.Preroll)
	}
}

// TestFramesBeforeIsTheCount: framesBefore's search gives the count a walk
// over the frames gives.
func TestFramesBeforeIsTheCount(t *testing.T) {
	t.Parallel()
	for _, rtf := range []float64{0.07, 0.5, 1, 1.3, 3} {
		cfg := DefaultConfig()
		cfg.Synth.RTF = rtf
		p, err := NewPlayout(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		const n = 40
		for d := time.Duration(-1); d < time.Duration(float64(n*p.frame)*rtf)+3*p.frame; d += p.frame / 7 {
			want := time.Duration(0)
			for want < n && p.frameOffset(want) < d {
				want++
			}
			if got := p.framesBefore(d, n); got != want {
				t.Fatalf("RTF %v, %v: framesBefore %d, a walk counts %d", rtf, d, got, want)
			}
		}
	}
}

// TestReplayRefusesFarStarts: turns whose starts lie near the int64
// limits (issue 45) are refused, naming the turn, instead of being laid
// out at a wrapped-around time.
func TestReplayRefusesFarStarts(t *testing.T) {
	t.Parallel()
	a := textless("a", ms)
	b := textless("b", ms)
	a.Start, b.Start = time.Unix(0, -9223372036854775000), time.Unix(0, 9223372036854775000)
	if _, err := ReplaySpan([]*Turn{a, b}); !errors.Is(err, ErrReplay) || !strings.Contains(err.Error(), `turn "b"`) {
		t.Errorf("ReplaySpan: %v, want ErrReplay naming turn b", err)
	}
	b.Start = a.Start.Add(time.Hour)
	if d, err := ReplaySpan([]*Turn{a, b}); err != nil || d != time.Hour+ms {
		t.Errorf("an hour apart: %v, %v; want %v", d, err, time.Hour+ms)
	}
}
