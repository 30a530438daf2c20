package pipeline

import (
	"errors"
	"slices"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// toolTurn streams text-less tokens every 50 ms, stops at 200 ms for a
// tool call of dur, and goes on after it.
func toolTurn(dur time.Duration, tools ...ToolCall) *Turn {
	t := textless("t", 0, 50*ms, 100*ms, 150*ms, 200*ms, 200*ms+dur, 250*ms+dur)
	t.ToolCalls = tools
	return t
}

func TestToolCallSilenceIsApart(t *testing.T) {
	t.Parallel()
	weather := ToolCall{At: 200 * ms, Duration: 1500 * ms, Name: "get_weather"}
	tests := []struct {
		name       string
		turn       *Turn
		want       Cause
		underruns  int
		toolSilent int
	}{
		{"tool call before the gap", toolTurn(1500*ms, weather), CauseTool, 0, 1},
		{"same stall, no tool call", toolTurn(1500 * ms), CauseStall, 1, 0},
		{"tool call earlier in the turn", toolTurn(1500*ms, ToolCall{At: 20 * ms, Duration: 10 * ms, Name: "x"}), CauseStall, 1, 0},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := fixedConfig(t, 60*ms)
			cfg.Filler = Filler{Kind: FillerKeepalive, Delay: 800 * ms}
			p := play(t, cfg, tt.turn)
			if len(p.Underruns) != 1 {
				t.Fatalf("gaps = %+v, want one", p.Underruns)
			}
			if got := p.Underruns[0].Cause; got != tt.want {
				t.Fatalf("cause = %s, want %s", got, tt.want)
			}
			r := NewReport(cfg, ReportOptions{TPOTSLO: time.Second})
			r.Add(tt.turn, p)
			r.Close()
			if r.Underruns.Count != tt.underruns || r.ToolSilences.Count != tt.toolSilent || len(r.ToolList) != tt.toolSilent {
				t.Fatalf("underruns %d, tool silences %d (%d listed), want %d and %d", r.Underruns.Count, r.ToolSilences.Count, len(r.ToolList), tt.underruns, tt.toolSilent)
			}
			if tt.toolSilent == 1 {
				if r.SpeechGoodput != 1 || !r.Verdict.Pass() {
					t.Errorf("goodput %v, verdict %+v: a tool-call silence must not count", r.SpeechGoodput, r.Verdict)
				}
				ts := r.ToolList[0]
				// five tokens of 60 ms play out at 300 ms, speech resumes at 1700 ms
				if ts.Tool != "get_weather" || ts.ToolMs != 1500 || ts.SilenceMs != 1400 || ts.CoveredMs != 600 || ts.SilentMs != 800 {
					t.Errorf("tool silence = %+v", ts)
				}
			}
		})
	}
}

// TestFillerHoldsBackTheReply: five tokens of 60 ms play out at 300 ms;
// a tool call from 200 ms to 700 ms; the reply's tokens at 700 and 750
// ms, then a stall to 1100 ms. Without a filler, or with a keep-alive
// sound, the reply plays at 700 ms and runs dry at 820 ms: a 280 ms
// stall. A phrase asked for as the player drains, longer than the
// silence, holds the reply back to its end, and the stall's gap is gone:
// the tokens had come by then.
func TestFillerHoldsBackTheReply(t *testing.T) {
	t.Parallel()
	turn := textless("t", 0, 50*ms, 100*ms, 150*ms, 200*ms, 700*ms, 750*ms, 1100*ms)
	turn.ToolCalls = []ToolCall{{At: 200 * ms, Duration: 500 * ms, Name: "get_weather"}}
	const phrase = "One moment, please, while I look that up for you."
	for _, tc := range []struct {
		filler string
		start  time.Duration // the reply's
		gaps   int           // besides the tool call's silence
	}{
		{"none", 700 * ms, 1},
		{"keepalive:0s", 700 * ms, 1},
		{`after:0s:"` + phrase + `"`, 300*ms + DefaultConfig().Voice.Duration(phrase), 0},
	} {
		cfg := fixedConfig(t, 60*ms)
		var err error
		if cfg.Filler, err = ParseFiller(tc.filler); err != nil {
			t.Fatal(err)
		}
		p := play(t, cfg, turn)
		tool := p.Underruns[0]
		if tool.Cause != CauseTool || tool.Start != 300*ms || tool.Duration != 400*ms {
			t.Fatalf("%s: first gap %+v, want the tool call's silence, 400 ms at 300 ms", tc.filler, tool)
		}
		if got := p.Chunks[5].PlayStart; got != tc.start {
			t.Errorf("%s: the reply plays at %v, want %v", tc.filler, got, tc.start)
		}
		if got := len(p.Underruns) - 1; got != tc.gaps {
			t.Errorf("%s: %d gaps after the tool call's silence, want %d: %+v", tc.filler, got, tc.gaps, p.Underruns)
		}
		if late := cfg.Filler.Cover(tool.Duration, cfg).Late; p.Chunks[5].PlayStart != 700*ms+late {
			t.Errorf("%s: the reply plays at %v, want the silence's end plus the report's wait (%v)", tc.filler, p.Chunks[5].PlayStart, late)
		}
	}
}

func TestFillerCover(t *testing.T) {
	t.Parallel()
	cfg := DefaultConfig()
	cfg.Voice = tts.Voice{WPM: 150}
	cfg.Synth.TTFA = 50 * time.Millisecond
	phrase := cfg.Voice.Duration("One moment.")
	if phrase <= 0 {
		t.Fatalf("phrase audio %v", phrase)
	}
	tests := []struct {
		filler  string
		silence time.Duration
		covered time.Duration
		late    time.Duration // the speech after waits for the phrase
	}{
		{"none", 2 * time.Second, 0, 0},
		{"keepalive:800ms", 2 * time.Second, 1200 * ms, 0},
		{"keepalive:800ms", 500 * ms, 0, 0},
		{"keepalive:0s", 300 * ms, 300 * ms, 0},
		{`after:800ms:"One moment."`, 5 * time.Second, phrase, 0},
		{`after:800ms:"One moment."`, 850*ms + phrase, phrase, 0},        // ends as the speech resumes
		{`after:800ms:"One moment."`, 900 * ms, 50 * ms, phrase - 50*ms}, // the phrase's first audio at 850 ms
		{`after:800ms:"One moment."`, 850 * ms, 0, phrase},
		{`after:800ms:"One moment."`, 820 * ms, 0, phrase + 30*ms}, // asked for, its audio after the silence
		{`after:800ms:"One moment."`, 800 * ms, 0, 0},              // never asked for
	}
	for _, tt := range tests {
		t.Run(tt.filler, func(t *testing.T) {
			t.Parallel()
			f, err := ParseFiller(tt.filler)
			if err != nil {
				t.Fatal(err)
			}
			c := f.Cover(tt.silence, cfg)
			if c.Covered != tt.covered || c.Covered+c.Silent != tt.silence || c.Late != tt.late {
				t.Errorf("%s over %v: covered %v silent %v late %v, want covered %v late %v", f, tt.silence, c.Covered, c.Silent, c.Late, tt.covered, tt.late)
			}
			if g, err := ParseFiller(f.String()); err != nil || g != f {
				t.Errorf("round trip %q: %+v %v", f.String(), g, err)
			}
		})
	}
}

func TestParseFillerErrors(t *testing.T) {
	t.Parallel()
	for _, s := range []string{"after:800ms", "after:800ms:\"\"", "keepalive:soon", "keepalive:800ms:x", "music:1s", "after:-1s:hi"} {
		t.Run(s, func(t *testing.T) {
			t.Parallel()
			if _, err := ParseFiller(s); err == nil {
				t.Errorf("ParseFiller(%q) = nil error", s)
			}
		})
	}
	// a policy built in code: Config.Validate refuses what ParseFiller would
	for _, f := range []Filler{{Kind: "music"}, {Kind: FillerKeepalive, Delay: -ms}, {Kind: FillerPhrase, Phrase: " "},
		{Kind: FillerKeepalive, Phrase: "hi"}} {
		cfg := DefaultConfig()
		cfg.Filler = f
		if err := cfg.Validate(); !errors.Is(err, ErrConfig) {
			t.Errorf("Config.Validate with filler %+v: %v, want ErrConfig", f, err)
		}
	}
	for _, s := range []string{"none", "keepalive:0s", `after:1s:"Hi."`} {
		f, _ := ParseFiller(s)
		if err := f.Validate(); err != nil {
			t.Errorf("ParseFiller(%q).Validate() = %v", s, err)
		}
	}
}

// TestStreamAfterToolCall: in stream mode the reply after a tool call is
// a new stream: its first chunk waits the time to first audio, the next
// the continuation latency (the other modes wait the time to first audio
// for every chunk already). Without the tool call, the same chunk waits
// the continuation latency.
func TestStreamAfterToolCall(t *testing.T) {
	t.Parallel()
	cfg := fixedConfig(t, 60*ms)
	cfg.Synth = tts.Synth{Mode: tts.ModeStream, TTFA: 200 * ms, Continuation: 20 * ms}
	turn := textless("t", 0, 50*ms, 1100*ms, 1400*ms)
	waits := func(p *Playout) []time.Duration {
		var out []time.Duration
		for _, c := range p.Chunks {
			out = append(out, c.Ready-c.Release)
		}
		return out
	}
	// chunk 1 waits for chunk 0's synthesis (ready at 200 ms)
	if got, want := waits(play(t, cfg, turn)), []time.Duration{200 * ms, 150 * ms, 20 * ms, 20 * ms}; !slices.Equal(got, want) {
		t.Errorf("without a tool call the chunks waited %v, want %v", got, want)
	}
	turn.ToolCalls = []ToolCall{{At: 55 * ms, Duration: 1000 * ms, Name: "get_weather"}}
	if got, want := waits(play(t, cfg, turn)), []time.Duration{200 * ms, 150 * ms, 200 * ms, 20 * ms}; !slices.Equal(got, want) {
		t.Errorf("with a tool call the chunks waited %v, want %v: the one after it opens a stream", got, want)
	}
}

// TestTurnSteps: a tool call comes after the chunk at its very moment,
// returns at its end but no later than the next chunk, and the calls after
// the last chunk come at the end.
func TestTurnSteps(t *testing.T) {
	t.Parallel()
	turn := textless("t", 10*ms, 20*ms, 50*ms)
	turn.ToolCalls = []ToolCall{{At: 20 * ms, Duration: 100 * ms}, {At: 60 * ms, Duration: 30 * ms}}
	var got []TurnStep
	for st := range turn.Steps() {
		got = append(got, st)
	}
	want := []TurnStep{
		{At: 10 * ms, Chunk: 0, Tool: -1}, {At: 20 * ms, Chunk: 1, Tool: -1},
		{At: 20 * ms, Chunk: -1, Tool: 0}, {At: 50 * ms, Chunk: -1, Tool: 0, Return: true},
		{At: 50 * ms, Chunk: 2, Tool: -1},
		{At: 60 * ms, Chunk: -1, Tool: 1}, {At: 90 * ms, Chunk: -1, Tool: 1, Return: true},
	}
	if !slices.Equal(got, want) {
		t.Errorf("steps\n got %+v\nwant %+v", got, want)
	}
}
