package pipeline

import (
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// withToolCall pauses turn for a tool call of 0.5 to 4 s after a random
// token of its middle, as scenarios' tool_calls do.
func withToolCall(rng *rand.Rand, turn *Turn) *Turn {
	out := *turn
	out.Chunks = append([]Chunk(nil), turn.Chunks...)
	k := 3 + rng.IntN(len(out.Chunks)-6)
	dur := time.Duration(500+rng.IntN(3500)) * ms
	for i := k; i < len(out.Chunks); i++ {
		out.Chunks[i].At += dur
	}
	out.ToolCalls = []ToolCall{{At: out.Chunks[k-1].At, Duration: dur, Name: "lookup"}}
	return &out
}

// stalledWithTools is stalled, the tool calls that start after token i
// moving with the tokens.
func stalledWithTools(turn *Turn, i int, d time.Duration) *Turn {
	out := stalled(turn, i, d)
	out.ToolCalls = append([]ToolCall(nil), turn.ToolCalls...)
	for j := range out.ToolCalls {
		if out.ToolCalls[j].At > turn.Chunks[i].At {
			out.ToolCalls[j].At += d
		}
	}
	return out
}

// underrunSilence is the silence of p's underruns, tool-call silences
// left out.
func underrunSilence(p *Playout) time.Duration { return TallyUnderruns(p.Underruns).Silence }

// firstToolChunk is the chunk after p's first tool-call silence (-1: none).
func firstToolChunk(p *Playout) int {
	for _, u := range p.Underruns {
		if u.Cause == CauseTool {
			return u.Chunk
		}
	}
	return -1
}

// phrasesAsked says, per tool-call silence of p, whether it is long
// enough for its filler phrase to be asked for (longer than its delay).
func phrasesAsked(p *Playout) []bool {
	var out []bool
	f := p.Config().Filler
	for _, u := range p.Underruns {
		if u.Cause == CauseTool {
			out = append(out, f.Kind == FillerPhrase && u.Duration > f.Delay)
		}
	}
	return out
}

// TestPropertyToleranceAcrossToolCalls: with a tool call in the turn, a
// stall of tolerance-1ms after token i adds no underrun time (a longer
// tool-call silence is none), and one of tolerance+1ms does, after the
// player started; in a third of the trials a filler phrase that may
// outlast the silence holds back the reply.
func TestPropertyToleranceAcrossToolCalls(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	text := "Let me look that up for you. The flight leaves at seven, and the return is on Sunday evening. Shall I go ahead?"
	phrases := []string{"One moment.", "One moment, please, while I look that up for you in the timetable."}
	checked, exact, beforeTool, held := 0, 0, 0, 0
	for trial := range 240 {
		cfg := DefaultConfig()
		policies := []string{"token", "word", "sentence", "livekit", "elevenlabs"}
		cfg.Policy, _ = tts.ParsePolicy(policies[trial%len(policies)])
		cfg.Synth = randomSynth(rng, trial/5, 200*ms, 1.4)
		if trial%3 == 1 {
			cfg.Filler = Filler{Kind: FillerPhrase, Delay: time.Duration(rng.IntN(1500)) * ms, Phrase: phrases[rng.IntN(len(phrases))]}
		}
		turn := withToolCall(rng, randomTextTurn(rng, text, 30+rng.IntN(120)))
		base := play(t, cfg, turn)
		if firstToolChunk(base) < 0 {
			continue // the player never drained during the tool call
		}
		baseSilence := underrunSilence(base)
		if u := base.Underruns[slices.IndexFunc(base.Underruns, func(u Underrun) bool { return u.Cause == CauseTool })]; cfg.Filler.Cover(u.Duration, cfg).Late > 0 {
			held++
		}
		tol := append([]time.Duration(nil), base.Tolerance...)
		for i := range len(turn.Chunks) - 1 {
			d := tol[i]
			if d == Unbounded {
				if s := underrunSilence(play(t, cfg, stalledWithTools(turn, i, 5*time.Second))); s > baseSilence {
					t.Fatalf("trial %d (%s %+v) token %d: unbounded tolerance but a 5s stall adds %v of underrun", trial, cfg.Policy.Name(), cfg.Synth, i, s-baseSilence)
				}
				continue
			}
			if d >= ms {
				if s := underrunSilence(play(t, cfg, stalledWithTools(turn, i, d-ms))); s > baseSilence {
					t.Fatalf("trial %d (%s %+v) token %d: stall of tolerance-1ms (%v) adds %v of underrun",
						trial, cfg.Policy.Name(), cfg.Synth, i, d-ms, s-baseSilence)
				}
			}
			checked++
			later := play(t, cfg, stalledWithTools(turn, i, d+ms))
			if s := underrunSilence(later); s > baseSilence {
				exact++
				if turn.Chunks[i].At < turn.ToolCalls[0].At {
					beforeTool++
				}
			} else if turn.Chunks[i].At >= startOf(base) && cfg.Synth.RTF <= 1 && slices.Equal(phrasesAsked(base), phrasesAsked(later)) {
				// (a longer silence that asks for the phrase can take away
				// more than it adds: the phrase holds back the reply, which
				// then has audio to spare for a later stall)
				t.Fatalf("trial %d (%s %+v) token %d: stall of tolerance+1ms (%v) adds no underrun",
					trial, cfg.Policy.Name(), cfg.Synth, i, d+ms)
			}
		}
	}
	if checked < 1000 || exact < 500 || beforeTool < 200 || held < 20 {
		t.Errorf("checked %d tolerances, %d shown exact, %d of them before the tool call; %d turns whose reply a filler held back", checked, exact, beforeTool, held)
	}
}

// TestMinPrerollBeforeTheToolCall: the smallest pre-roll removes every
// underrun before the first tool-call silence, and 1 ms less leaves one
// there; the tool-call silence and what comes after it are not the
// pre-roll's to fix.
func TestMinPrerollBeforeTheToolCall(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	policies := []string{"token", "word", "sentence", "livekit", "elevenlabs", "timer:300ms"}
	text := "Well, the train leaves at nine. Then you change at the central station, which takes five minutes. Is that fine?"
	tried := 0
	for trial := range 180 {
		cfg := DefaultConfig()
		cfg.Policy, _ = tts.ParsePolicy(policies[(trial/3)%len(policies)])
		cfg.Synth = randomSynth(rng, trial, 300*ms, 1.5)
		turn := withToolCall(rng, randomTextTurn(rng, text, 20+rng.IntN(150)))
		p := play(t, cfg, turn)
		if firstToolChunk(p) < 0 {
			continue
		}
		tried++
		cfg.Preroll = p.MinPreroll
		q := play(t, cfg, turn)
		b := firstToolChunk(q)
		for _, u := range q.Underruns {
			if u.Cause != CauseTool && (b < 0 || u.Chunk < b) {
				t.Fatalf("trial %d (%s %+v): pre-roll %v leaves %+v before the tool call", trial, cfg.Policy.Name(), cfg.Synth, cfg.Preroll, u)
			}
		}
		if p.MinPreroll > ms {
			cfg.Preroll = p.MinPreroll - ms
			q := play(t, cfg, turn)
			b := firstToolChunk(q)
			found := false
			for _, u := range q.Underruns {
				found = found || (u.Cause != CauseTool && (b < 0 || u.Chunk < b))
			}
			if !found {
				t.Fatalf("trial %d (%s %+v): pre-roll %v is not the smallest: %v leaves no underrun before the tool call", trial, cfg.Policy.Name(), cfg.Synth, p.MinPreroll, cfg.Preroll)
			}
		}
	}
	if tried < 100 {
		t.Errorf("only %d turns had a tool-call silence", tried)
	}
}

// TestTPOTLeavesOutToolCalls: the stream waits for the tool, not for the
// model: TPOT, the ITLs and a retimed turn leave the call's time out.
func TestTPOTLeavesOutToolCalls(t *testing.T) {
	t.Parallel()
	weather := ToolCall{At: 200 * ms, Duration: 1500 * ms, Name: "get_weather"}
	turn := toolTurn(1500*ms, weather) // 7 tokens 50 ms apart but for the call
	if s, ok := turn.TPOTSeconds(); !ok || math.Abs(s-0.250/6) > 1e-12 {
		t.Errorf("TPOT %v s, want 250 ms / 6", s)
	}
	if tm, _ := turn.Timing(); tm.TPOT != time.Duration(math.Round(float64(250*ms)/6)) {
		t.Errorf("Timing TPOT %v", tm.TPOT)
	}
	without := toolTurn(1500 * ms) // the same stall, no tool call: the model's
	if s, _ := without.TPOTSeconds(); math.Abs(s-1.750/6) > 1e-12 {
		t.Errorf("TPOT without the tool call %v s, want 1750 ms / 6", s)
	}
	cfg := fixedConfig(t, 60*ms)
	r := NewReport(cfg, ReportOptions{TPOTSLO: time.Second})
	r.Add(turn, play(t, cfg, turn))
	r.Close()
	if r.ITL.Max != 50 || r.ITL.P50 != 50 {
		t.Errorf("ITL %+v, want every one 50 ms", r.ITL)
	}
	re := Retime(turn, 100*ms, 10*ms)
	want := []time.Duration{100 * ms, 110 * ms, 120 * ms, 130 * ms, 140 * ms, 1650 * ms, 1660 * ms}
	for i, c := range re.Chunks {
		if c.At != want[i] {
			t.Errorf("retimed chunk %d at %v, want %v", i, c.At, want[i])
		}
	}
	if re.ToolCalls[0].At != 140*ms || re.ToolCalls[0].Duration != 1500*ms || turn.ToolCalls[0].At != 200*ms {
		t.Errorf("retimed tool call %+v (the turn's own %+v)", re.ToolCalls[0], turn.ToolCalls[0])
	}
	if s, _ := re.TPOTSeconds(); math.Abs(s-0.010) > 1e-12 {
		t.Errorf("retimed TPOT %v s, want 10 ms", s)
	}
}
