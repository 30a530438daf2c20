package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

func transport(t *testing.T, name string) tts.Transport {
	t.Helper()
	tr, err := tts.ParseTransport(name)
	if err != nil {
		t.Fatal(err)
	}
	return tr
}

type heardGap struct {
	start, length time.Duration
	cause         Cause
	stopped       bool
}

func heardGaps(p *Playout) []heardGap {
	var out []heardGap
	for _, u := range p.Underruns {
		out = append(out, heardGap{u.Start, u.Duration, u.Cause, u.Stopped})
	}
	return out
}

// TestTransportHandComputed plays two 50 ms tokens, at 0 and 50 ms, that
// the player plays back to back (0-100 ms, no gap), through each preset.
//
//	pipecat:   40 ms frames. [0,40) ready at 0 plays 0-40; [40,80) needs
//	           token 2 (ready 50): the 10 ms clock resumes at 50, a 10 ms
//	           gap the transport made; [80,100) is the padded rest, 90-110.
//	livekit:   100 ms frames: the turn is one frame, ready at 50: the
//	           listener's first audio is 50 ms late, with no gap.
//	telephony: 20 ms frames on a 20 ms clock. [40,60) is ready at 50,
//	           the clock resumes at 60: a 20 ms gap.
//	websocket-raw: 20 ms frames, each chunk framed alone (20, 20, 10 ms),
//	           the sender sleeping each frame plus 0.5 ms: it writes at
//	           0, 20.5, 41, then 51.5 (token 2 is ready at 50), 72, 92.5;
//	           the listener plays them as they come (0-20, 20.5-40.5,
//	           41-51, 51.5-71.5, 72-92, 92.5-102.5): every frame after the
//	           first comes 0.5 ms late.
//	websocket-raw with a lead (Transport.Lead): a sender that may send
//	           each frame up to the lead before the listener plays it,
//	           waking 0.5 ms after the time it slept to. lead=20ms: frames
//	           come early (0, 0.5, 20.5, 50, 50.5, 70.5) and play back to
//	           back: no gap. lead=200us: each sleep ends 0.3 ms after the
//	           listener ran out (20.3, 40.6, 50.9, 71.2, 91.5): five 0.3 ms
//	           gaps, the lead absorbing 0.2 ms of each 0.5 ms oversleep.
func TestTransportHandComputed(t *testing.T) {
	t.Parallel()
	us := time.Microsecond
	tests := []struct {
		transport string
		start     time.Duration
		gaps      []heardGap
	}{
		{"none", 0, nil},
		{"pipecat", 0, []heardGap{{40 * ms, 10 * ms, CauseTransport, false}}},
		{"livekit", 50 * ms, nil},
		{"telephony-20ms", 0, []heardGap{{40 * ms, 20 * ms, CauseTransport, false}}},
		{"websocket-raw", 0, []heardGap{
			{20 * ms, 500 * us, CauseTransport, false}, {40500 * us, 500 * us, CauseTransport, false},
			{51 * ms, 500 * us, CauseTransport, false}, {71500 * us, 500 * us, CauseTransport, false},
			{92 * ms, 500 * us, CauseTransport, false}}},
		{"websocket-raw,lead=20ms", 0, nil},
		{"websocket-raw,lead=200us", 0, []heardGap{
			{20 * ms, 300 * us, CauseTransport, false}, {40300 * us, 300 * us, CauseTransport, false},
			{50600 * us, 300 * us, CauseTransport, false}, {70900 * us, 300 * us, CauseTransport, false},
			{91200 * us, 300 * us, CauseTransport, false}}},
	}
	for _, tt := range tests {
		t.Run(tt.transport, func(t *testing.T) {
			t.Parallel()
			cfg := fixedConfig(t, 50*ms)
			cfg.Transport = transport(t, tt.transport)
			p := play(t, cfg, textless("tr", 0, 50*ms))
			if got := heardGaps(p); !slices.Equal(got, tt.gaps) {
				t.Errorf("gaps %v, want %v", got, tt.gaps)
			}
			for _, u := range p.Underruns {
				if u.Turn != "tr" {
					t.Errorf("the %v gap at %v (%s) is of turn %q, want \"tr\"", u.Duration, u.Start, u.Cause, u.Turn)
				}
			}
			if got := startOf(p); got != tt.start {
				t.Errorf("first audio heard at %v, want %v", got, tt.start)
			}
		})
	}
}

// TestTransportIdleStopsTheBot: a 4 s stall after 50 ms of audio. Pipecat
// sends the 10 ms it held 3 s after the last audio (padded to 40 ms) and
// signals that the bot stopped speaking, so the listener hears the stall
// as two gaps, the second with the bot stopped; LiveKit holds its frame
// (the whole 50 ms, less than one 100 ms frame) until the stalled token's
// audio completes it: the listener hears nothing for 4 s, a late start
// rather than a gap, and LiveKit signals nothing.
func TestTransportIdleStopsTheBot(t *testing.T) {
	t.Parallel()
	cfg := fixedConfig(t, 50*ms)
	turn := textless("idle", 0, 4000*ms)
	cfg.Transport = transport(t, "pipecat")
	got := heardGaps(play(t, cfg, turn))
	want := []heardGap{{40 * ms, 2960 * ms, CauseStall, false}, {3010 * ms, 990 * ms, CauseStall, true}}
	if !slices.Equal(got, want) {
		t.Errorf("pipecat: gaps %v, want %v", got, want)
	}
	cfg.Transport = transport(t, "livekit")
	got = heardGaps(play(t, cfg, turn))
	if len(got) != 0 {
		t.Errorf("livekit: gaps %v, want none", got)
	}
	if p := play(t, cfg, turn); startOf(p) != 4000*ms {
		t.Errorf("livekit: first audio heard at %v, want 4s (its one frame waits for the stalled token)", startOf(p))
	}
}

// TestPropertyTransportOfSynthFramesIsThePlayer: a transport that sends
// each chunk's synthesizer frames as they are ready, on no clock, is the
// player itself: the same gaps, causes and start, for every mode.
func TestPropertyTransportOfSynthFramesIsThePlayer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 33))
	text := "Sure, the train leaves at nine. It takes twenty minutes, and the fare is four euros. Anything else?"
	for trial := range 200 {
		cfg := DefaultConfig()
		cfg.Synth = randomSynth(rng, trial, 300*ms, 0.9)
		cfg.Synth.Frame = 20 * ms
		turn := randomTextTurn(rng, text, 60)
		want := play(t, cfg, turn)
		cfg.Transport = tts.Transport{Name: "frames", Frame: 20 * ms}
		got := play(t, cfg, turn)
		if !slices.Equal(got.Underruns, want.Underruns) || startOf(got) != startOf(want) {
			t.Fatalf("trial %d (%s): through the transport %v from %v, the player %v from %v",
				trial, cfg.Synth, got.Underruns, startOf(got), want.Underruns, startOf(want))
		}
	}
}

// TestPropertyTransportKeepsLongGaps: whatever the preset, the listener
// starts no earlier than the player, and every gap of the player's longer
// than a frame, a tick and the idle time is heard, with its cause.
func TestPropertyTransportKeepsLongGaps(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(8, 34))
	text := "Well, let me see. The museum opens at ten, closes at six, and on Mondays it is shut."
	for trial := range 200 {
		cfg := DefaultConfig()
		cfg.Synth = randomSynth(rng, trial, 200*ms, 0.5)
		turn := randomTextTurn(rng, text, 50)
		player := play(t, cfg, turn)
		for _, tr := range tts.Transports {
			cfg.Transport = tr
			heard := play(t, cfg, turn)
			if startOf(heard) < startOf(player) {
				t.Fatalf("trial %d %s: heard from %v, before the player's %v", trial, tr.Name, startOf(heard), startOf(player))
			}
			causes := map[Cause]bool{}
			for _, u := range heard.Underruns {
				causes[u.Cause] = true
			}
			for _, u := range player.Underruns {
				if u.Duration > tr.Frame+tr.Tick+tr.Idle && !causes[u.Cause] {
					t.Fatalf("trial %d %s: the player's %v gap (%s) is not heard: %v", trial, tr.Name, u.Duration, u.Cause, heard.Underruns)
				}
			}
		}
	}
}

// TestTransportToolCallEndsTheSegment: a reply that stops for a 4 s tool
// call ends the synthesis there, so Pipecat sends the partial frame it
// held at once instead of cutting the silence in two after its 3 s idle
// time: one tool-call silence, heard with the bot stopped.
func TestTransportToolCallEndsTheSegment(t *testing.T) {
	t.Parallel()
	cfg := fixedConfig(t, 50*ms)
	cfg.Transport = transport(t, "pipecat")
	turn := textless("tool", 0, 4000*ms)
	turn.ToolCalls = []ToolCall{{At: 10 * ms, Duration: 3990 * ms, Name: "lookup"}}
	got := heardGaps(play(t, cfg, turn))
	// 50 ms of audio: a frame (0-40), then the rest padded (40-50 speech,
	// 50-80 padding); token 2's audio comes at 4 s
	want := []heardGap{{50 * ms, 3950 * ms, CauseTool, true}}
	if !slices.Equal(got, want) {
		t.Errorf("gaps %v, want %v", got, want)
	}
}
