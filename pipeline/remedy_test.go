package pipeline_test

import (
	"slices"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/scenarios"
	"github.com/speech-pipeline/underrun/tts"
)

const ms = time.Millisecond

// interrupted plays t with cfg in a Playout of its own and reports
// whether an interruption is left, the first audio and the gaps.
func interrupted(t *testing.T, cfg pipeline.Config, turn *pipeline.Turn) (bool, time.Duration, []pipeline.Underrun) {
	t.Helper()
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	at, _ := p.Started()
	for _, u := range p.Underruns {
		if u.Class == pipeline.Interruption && u.Cause != pipeline.CauseTool {
			return true, at, p.Underruns
		}
	}
	return false, at, p.Underruns
}

func remedyOf(t *testing.T, rs []pipeline.Remedy, kind pipeline.RemedyKind) pipeline.Remedy {
	t.Helper()
	for _, r := range rs {
		if r.Kind == kind {
			return r
		}
	}
	t.Fatalf("no %s remedy in %+v", kind, rs)
	return pipeline.Remedy{}
}

// TestRemediesDefaultTurn: the default turn's one gap (242.48 ms after a
// 737 ms ITL before token 3, where the buffer held 494.52 ms: the
// tolerance) and each remedy, made by hand here and played again, at its
// limit and past it:
//
//   - a stall limit L leaves a gap of L - 494.52 ms, under 150 ms for L
//     under 644.52 ms (the tolerance plus the interruption threshold);
//   - the pre-roll of 445 ms (the turn's MinPreroll) removes it and
//     moves the first audio from 424 to 1111 ms; 444 ms leaves a gap;
//   - a keep-alive after 149 ms of silence leaves 149 ms of it, covering
//     93.5 ms;
//   - the largest steady TPOT is MaxTPOT's;
//   - a send-ahead lead cannot fill a stall: audio that is not made
//     cannot be sent ahead, even through a transport with a 1 s lead.
//
// They rank by what they cost the listener: the stall limit and the TPOT
// nothing, the filler the 242.5 ms it fills, the pre-roll 687 ms of wait.
func TestRemediesDefaultTurn(t *testing.T) {
	t.Parallel()
	cfg, turn := pipeline.DefaultConfig(), scenarios.DefaultTurn()
	rs, err := pipeline.Remedies(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	var kinds []pipeline.RemedyKind
	for _, r := range rs {
		kinds = append(kinds, r.Kind)
		if r.Removes {
			// the remedy as the report states it, played again
			c, tt, err := r.Apply(cfg, turn)
			if err != nil {
				t.Fatal(err)
			}
			p, err := pipeline.Play(c, tt)
			if err != nil {
				t.Fatal(err)
			}
			if r.Interrupts(p) {
				t.Errorf("%s (%s) leaves an interruption: %v", r.Kind, r.Setting, p.Underruns)
			}
		}
	}
	want := []pipeline.RemedyKind{pipeline.RemedyStallTimeout, pipeline.RemedyTPOT, pipeline.RemedyFiller,
		pipeline.RemedyChunking, pipeline.RemedyPreroll, pipeline.RemedySendAhead}
	if !slices.Equal(kinds, want) {
		t.Errorf("remedies ranked %v, want %v", kinds, want)
	}

	// the stall limit, by hand: every ITL cut to it
	_, _, gaps := interrupted(t, cfg, turn)
	edge := gaps[0].Tolerance + cfg.Interruption
	stall := remedyOf(t, rs, pipeline.RemedyStallTimeout)
	if d := stall.Value - edge; !stall.Removes || d >= 0 || d < -20*time.Microsecond || stall.CostMs != 0 {
		t.Errorf("stall limit %v (removes %v, cost %v), want just under %v", stall.Value, stall.Removes, stall.CostMs, edge)
	}
	if bad, _, _ := interrupted(t, cfg, pipeline.CapStalls(turn, stall.Value)); bad {
		t.Errorf("stalls cut to %v still interrupt", stall.Value)
	}
	if bad, _, us := interrupted(t, cfg, pipeline.CapStalls(turn, edge)); !bad {
		t.Errorf("stalls cut to %v, the limit, interrupt no more: %v", edge, us)
	}

	// the pre-roll, by hand
	pre := remedyOf(t, rs, pipeline.RemedyPreroll)
	if pre.Value != 445*ms || pre.Setting != "--preroll 445ms" || pre.FirstAudioMs != 424 || pre.NewFirstAudioMs != 1111 || pre.CostMs != 687 {
		t.Errorf("pre-roll %+v, want 445ms moving first audio 424 -> 1111 ms", pre)
	}
	c := cfg
	c.Preroll = 445 * ms
	if bad, at, _ := interrupted(t, c, turn); bad || at != 1111*ms {
		t.Errorf("--preroll 445ms: interrupted %v, first audio %v", bad, at)
	}
	c.Preroll = 444 * ms
	if _, _, us := interrupted(t, c, turn); len(us) == 0 {
		t.Errorf("--preroll 444ms has no gap, so 445ms is not the smallest")
	}

	// the filler: 149 ms of silence, then the sound
	fill := remedyOf(t, rs, pipeline.RemedyFiller)
	cov := pipeline.Filler{Kind: pipeline.FillerKeepalive, Delay: fill.Value}.Cover(242481038, cfg)
	if !fill.Removes || fill.Value != 149*ms || cov.Silent != 149*ms || cov.Covered != 93481038 || fill.CostMs != 242.481038 {
		t.Errorf("filler %+v covers %+v", fill, cov)
	}

	// the steady TPOT is the inversion's
	tpot := remedyOf(t, rs, pipeline.RemedyTPOT)
	if max, ok, _ := pipeline.MaxTPOT(cfg, turn, nil); !ok || tpot.Value != max || !tpot.Removes {
		t.Errorf("steady TPOT %v, MaxTPOT %v", tpot.Value, max)
	}

	// the lead: no transport, and none can help
	lead := remedyOf(t, rs, pipeline.RemedySendAhead)
	if lead.Removes {
		t.Errorf("a send-ahead lead removes a stall: %+v", lead)
	}
	c = cfg
	c.Transport, _ = tts.ParseTransport("websocket-raw,lead=1s")
	if bad, _, _ := interrupted(t, c, turn); !bad {
		t.Errorf("a 1 s lead filled a token stall")
	}
}

// TestRemediesSendAhead: a sender that wakes 200 ms late after every
// 20 ms frame makes the listener wait 200 ms before each frame; a lead L
// lets it send that much ahead, so each wait is 200 - L ms: an
// interruption (150 ms or more) for L <= 50 ms, none from 51 ms (the
// lead is found to the millisecond), and the turn's other remedies still
// rank after it at no cost to the listener.
func TestRemediesSendAhead(t *testing.T) {
	t.Parallel()
	cfg := pipeline.DefaultConfig()
	cfg.Transport, _ = tts.ParseTransport("websocket-raw,overshoot=200ms")
	turn := testkit.WordTurn("late", "Sure, the train leaves at nine.", 200*ms, 30*ms, nil)
	rs, err := pipeline.Remedies(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	lead := remedyOf(t, rs, pipeline.RemedySendAhead)
	if !lead.Removes || lead.Value != 51*ms || lead.Setting != "--transport websocket-raw,overshoot=200ms,lead=51ms" || lead.CostMs != 0 {
		t.Fatalf("lead %+v, want 51ms", lead)
	}
	if rs[0].Kind != pipeline.RemedySendAhead && rs[0].CostMs != 0 {
		t.Errorf("the first remedy costs the listener %v ms: %+v", rs[0].CostMs, rs[0])
	}
	for _, tc := range []struct {
		transport string
		bad       bool
	}{{"websocket-raw,overshoot=200ms,lead=51ms", false}, {"websocket-raw,overshoot=200ms,lead=50ms", true}} {
		c := cfg
		c.Transport, _ = tts.ParseTransport(tc.transport)
		if bad, _, us := interrupted(t, c, turn); bad != tc.bad {
			t.Errorf("%s: interrupted %v, want %v: %v", tc.transport, bad, tc.bad, us)
		}
	}
}

// TestRemediesCleanTurn: a turn with no interruption has no remedies.
func TestRemediesCleanTurn(t *testing.T) {
	t.Parallel()
	rs, err := pipeline.Remedies(pipeline.DefaultConfig(), testkit.WordTurn("ok", "Sure, the train leaves at nine.", 200*ms, 30*ms, nil))
	if err != nil || rs != nil {
		t.Errorf("remedies %+v, %v; want none", rs, err)
	}
}

// TestCapStalls: ITLs of 100, 900 (a tool call of 500 ms within it) and
// 700 ms cut to 300 ms: the model's 400 ms of the second interval is cut
// by 100 ms, the third by 400 ms; the tool call keeps its place after the
// chunk before it, and its length.
func TestCapStalls(t *testing.T) {
	t.Parallel()
	turn := &pipeline.Turn{ID: "cap", Chunks: []pipeline.Chunk{{At: 200 * ms}, {At: 300 * ms}, {At: 1200 * ms}, {At: 1900 * ms}},
		ToolCalls: []pipeline.ToolCall{{At: 400 * ms, Duration: 500 * ms}}}
	got := pipeline.CapStalls(turn, 300*ms)
	var at []time.Duration
	for _, c := range got.Chunks {
		at = append(at, c.At)
	}
	if want := []time.Duration{200 * ms, 300 * ms, 1100 * ms, 1400 * ms}; !slices.Equal(at, want) {
		t.Errorf("chunks at %v, want %v", at, want)
	}
	if tc := got.ToolCalls[0]; tc.At != 400*ms || tc.Duration != 500*ms {
		t.Errorf("tool call %+v, want at 400ms for 500ms", tc)
	}
	if turn.Chunks[2].At != 1200*ms {
		t.Errorf("the turn given was changed")
	}
}
