package pipeline

import (
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// TestEngineModesHandComputed plays one three-chunk turn with one stall
// through each timing mode. Tokens (one chunk each, 300 ms of audio) arrive
// at 0, 0 and 1000 ms; first audio 100 ms, continuation 20 ms, RTF 1
// (frames of 20 ms ready every 20 ms).
//
//	request:  c0 start 0, ready 100, done 400; c1 waits for c0: start 400,
//	          ready 500, done 800; c2 start 1000, ready 1100. Player
//	          100-400, gap 400-500 (synthesizer), 500-800, gap 800-1100
//	          (stall), 1100-1400.
//	stream:   c0 ready 100, done 400; c1 ready max(0+20, 400) = 400, done
//	          700; c2 ready max(1000+20, 700) = 1020. Player 100-400,
//	          400-700, gap 700-1020 (stall), 1020-1320.
//	parallel: c0 and c1 ready 100 (c1's frames all ready by 380); c2
//	          ready 1100. Player 100-400, 400-700, gap 700-1100 (stall),
//	          1100-1400.
//
// The smallest pre-roll: the player must start no earlier than S* =
// max(ready_c - audio before c): request max(100, 500-300, 1100-600) = 500,
// with 300 ms whole before it (c0) -> 301 ms; stream max(100, 100, 420) =
// 420, with c0 whole and one 20 ms frame of c1 before it -> 321 ms;
// parallel max(100, -200, 500) = 500, with c0 and c1 whole -> 601 ms.
func TestEngineModesHandComputed(t *testing.T) {
	t.Parallel()
	type gap struct {
		start, length time.Duration
		cause         Cause
	}
	tests := []struct {
		mode    tts.Mode
		gaps    []gap
		ready   []time.Duration
		preroll time.Duration
	}{
		{tts.ModeRequest, []gap{{400 * ms, 100 * ms, CauseSynthesizer}, {800 * ms, 300 * ms, CauseStall}},
			[]time.Duration{100 * ms, 500 * ms, 1100 * ms}, 301 * ms},
		{tts.ModeStream, []gap{{700 * ms, 320 * ms, CauseStall}},
			[]time.Duration{100 * ms, 400 * ms, 1020 * ms}, 321 * ms},
		{tts.ModeParallel, []gap{{700 * ms, 400 * ms, CauseStall}},
			[]time.Duration{100 * ms, 100 * ms, 1100 * ms}, 601 * ms},
	}
	for _, tt := range tests {
		t.Run(string(tt.mode), func(t *testing.T) {
			t.Parallel()
			cfg := fixedConfig(t, 300*ms)
			cfg.Synth = tts.Synth{Mode: tt.mode, TTFA: 100 * ms, Continuation: 20 * ms, RTF: 1, Frame: 20 * ms}
			turn := textless("m", 0, 0, 1000*ms)
			p := play(t, cfg, turn)
			var got []gap
			for _, u := range p.Underruns {
				got = append(got, gap{u.Start, u.Duration, u.Cause})
			}
			if !slices.Equal(got, tt.gaps) {
				t.Errorf("gaps %+v, want %+v", got, tt.gaps)
			}
			var ready []time.Duration
			for _, c := range p.Chunks {
				ready = append(ready, c.Ready)
				if want := c.Ready + 300*ms; c.Done != want {
					t.Errorf("chunk done %v, want ready + 300 ms = %v", c.Done, want)
				}
			}
			if !slices.Equal(ready, tt.ready) {
				t.Errorf("first audio %v, want %v", ready, tt.ready)
			}
			if p.MinPreroll != tt.preroll {
				t.Errorf("MinPreroll %v, want %v", p.MinPreroll, tt.preroll)
			}
			cfg.Preroll = p.MinPreroll
			if q := play(t, cfg, turn); len(q.Underruns) != 0 {
				t.Errorf("pre-roll %v leaves %+v", cfg.Preroll, q.Underruns)
			}
			cfg.Preroll = p.MinPreroll - ms
			if q := play(t, cfg, turn); len(q.Underruns) == 0 {
				t.Errorf("pre-roll %v, below the smallest, leaves no gap", cfg.Preroll)
			}
			// the last chunk's gap is there already: any later stall adds
			// to it
			if got := p.Tolerance[1]; got != 0 {
				t.Errorf("tolerance after token 1 = %v, want 0", got)
			}
		})
	}
}

// TestEngineStreamContinuation: in stream mode only a turn's first chunk
// waits the time to first audio; a later chunk, after a stall too, waits
// the continuation latency. Three tokens of 200 ms at 0, 0 and 1000 ms,
// first audio 300 ms, continuation 30 ms, RTF 0.
//
//	stream:  ready 300, max(30, 300) = 300, 1030: plays 300-700, gap
//	         700-1030.
//	request: ready 300, 300+300 = 600 (gap 500-600), 1300 (gap 800-1300).
func TestEngineStreamContinuation(t *testing.T) {
	t.Parallel()
	type gap struct{ start, length time.Duration }
	for _, tt := range []struct {
		mode tts.Mode
		gaps []gap
	}{
		{tts.ModeStream, []gap{{700 * ms, 330 * ms}}},
		{tts.ModeRequest, []gap{{500 * ms, 100 * ms}, {800 * ms, 500 * ms}}},
	} {
		cfg := fixedConfig(t, 200*ms)
		cfg.Synth = tts.Synth{Mode: tt.mode, TTFA: 300 * ms, Continuation: 30 * ms}
		p := play(t, cfg, textless("c", 0, 0, 1000*ms))
		var got []gap
		for _, u := range p.Underruns {
			got = append(got, gap{u.Start, u.Duration})
		}
		if !slices.Equal(got, tt.gaps) {
			t.Errorf("%s: gaps %+v, want %+v", tt.mode, got, tt.gaps)
		}
		if at, _ := p.Started(); at != 300*ms {
			t.Errorf("%s: first audio at %v, want the time to first audio 300ms", tt.mode, at)
		}
	}
}

// TestPropertyStreamNeverWorseThanRequest: with the same inputs, a
// continuation no longer than the time to first audio and the player
// starting at first audio, one context per turn never has more underrun
// time than a request per chunk.
func TestPropertyStreamNeverWorseThanRequest(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(11, 12))
	text := "Sure, I can book that. The flight leaves at seven, and the return is on Sunday evening. Shall I go ahead?"
	policies := []string{"token", "word", "sentence", "livekit", "elevenlabs", "timer:300ms"}
	better := 0
	for trial := range 300 {
		cfg := DefaultConfig()
		cfg.Policy, _ = tts.ParsePolicy(policies[trial%len(policies)])
		ttfa := time.Duration(rng.IntN(400)) * ms
		cfg.Synth = tts.Synth{Mode: tts.ModeRequest, TTFA: ttfa, RTF: rng.Float64() * 1.5}
		turn := randomTextTurn(rng, text, 10+rng.IntN(150))
		request := underrunTotal(play(t, cfg, turn))
		cfg.Synth.Mode, cfg.Synth.Continuation = tts.ModeStream, time.Duration(rng.Int64N(int64(ttfa)+1))
		stream := underrunTotal(play(t, cfg, turn))
		if stream > request {
			t.Fatalf("trial %d (%s %+v): stream %v of silence, request %v", trial, cfg.Policy.Name(), cfg.Synth, stream, request)
		}
		if stream < request {
			better++
		}
	}
	if better < 50 {
		t.Errorf("stream beat request in only %d of 300 trials", better)
	}
}

// TestPropertyZeroLatencyModesEqual: with no latency at all the modes are
// the same synthesizer: stream and request play every chunk alike at any
// RTF and pre-roll; parallel plays the same underruns when the synthesizer
// keeps up (RTF <= 1) and the player starts at first audio.
func TestPropertyZeroLatencyModesEqual(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(13, 14))
	text := "Well, the train leaves at nine. Then you change at the central station, which takes five minutes. Is that fine?"
	policies := []string{"token", "word", "sentence", "livekit", "elevenlabs", "timer:300ms"}
	gaps := 0
	for trial := range 200 {
		cfg := DefaultConfig()
		cfg.Policy, _ = tts.ParsePolicy(policies[trial%len(policies)])
		cfg.Synth = tts.Synth{Mode: tts.ModeRequest, RTF: rng.Float64() * 1.5}
		if trial%2 == 0 {
			cfg.Preroll = time.Duration(rng.IntN(600)) * ms
		}
		turn := randomTextTurn(rng, text, 10+rng.IntN(200))
		request := play(t, cfg, turn)
		wantChunks, wantGaps := slices.Clone(request.Chunks), slices.Clone(request.Underruns)
		gaps += len(wantGaps)
		cfg.Synth.Mode = tts.ModeStream
		stream := play(t, cfg, turn)
		if !slices.Equal(stream.Underruns, wantGaps) {
			t.Fatalf("trial %d (%s %+v): stream underruns %+v, request %+v", trial, cfg.Policy.Name(), cfg.Synth, stream.Underruns, wantGaps)
		}
		for i, c := range stream.Chunks {
			w := wantChunks[i]
			if c.Ready != w.Ready || c.Done != w.Done || c.PlayStart != w.PlayStart || c.PlayEnd != w.PlayEnd {
				t.Fatalf("trial %d chunk %d: stream %+v, request %+v", trial, i, c, w)
			}
		}
		if cfg.Synth.RTF <= 1 && cfg.Preroll == 0 {
			cfg.Synth.Mode = tts.ModeParallel
			if parallel := play(t, cfg, turn); !slices.Equal(parallel.Underruns, wantGaps) {
				t.Fatalf("trial %d (%s %+v): parallel underruns %+v, request %+v", trial, cfg.Policy.Name(), cfg.Synth, parallel.Underruns, wantGaps)
			}
		}
	}
	if gaps < 100 {
		t.Errorf("only %d underruns in all trials: the property was hardly tested", gaps)
	}
}

// TestEngineModeCauses: a chunk released in time that waits behind the
// request before it is the synthesizer's fault; the same turn in stream
// mode has no such gap.
func TestEngineModeCauses(t *testing.T) {
	t.Parallel()
	cfg := fixedConfig(t, 150*ms)
	cfg.Synth = tts.Synth{Mode: tts.ModeRequest, TTFA: 250 * ms, Continuation: 20 * ms}
	turn := textless("y", 0, 10*ms, 20*ms, 30*ms)
	p := play(t, cfg, turn)
	if len(p.Underruns) == 0 {
		t.Fatal("request mode: no underrun with 250 ms per request and 150 ms chunks")
	}
	for _, u := range p.Underruns {
		if u.Cause != CauseSynthesizer {
			t.Errorf("request mode: cause %s, want synthesizer (%+v)", u.Cause, u)
		}
	}
	cfg.Synth.Mode = tts.ModeStream
	if p := play(t, cfg, turn); len(p.Underruns) != 0 {
		t.Errorf("stream mode: %+v, want none", p.Underruns)
	}
}

func TestPlayoutNextLatency(t *testing.T) {
	t.Parallel()
	for _, mode := range []tts.Mode{tts.ModeStream, tts.ModeRequest, tts.ModeParallel} {
		cfg := fixedConfig(t, 100*ms)
		cfg.Synth = tts.Synth{Mode: mode, TTFA: 200 * ms, Continuation: 40 * ms}
		p, err := NewPlayout(cfg, "n")
		if err != nil {
			t.Fatal(err)
		}
		if got := p.NextLatency(); got != 200*ms {
			t.Errorf("%s: before the first chunk %v, want 200ms", mode, got)
		}
		if err := p.Push(Chunk{At: 0, Tokens: 1, Textless: true}); err != nil {
			t.Fatal(err)
		}
		want := 200 * ms
		if mode == tts.ModeStream {
			want = 40 * ms
		}
		if got := p.NextLatency(); got != want {
			t.Errorf("%s: after the first chunk %v, want %v", mode, got, want)
		}
	}
}

// TestMaxTPOTFollowsMode: the largest safe TPOT is that of the mode. With
// a synthesizer at RTF 0.9 and 250 ms to first audio, a request per token
// waits for the one before and then the full latency again, so the player
// starves between tokens however fast they come (no safe TPOT); one
// context per turn keeps up. With no latency the modes agree.
func TestMaxTPOTFollowsMode(t *testing.T) {
	t.Parallel()
	turn := steady("Sure, the express train leaves every fifteen minutes and takes about twenty minutes to town.", 30*ms)
	tpot := func(mode tts.Mode, latency time.Duration) (time.Duration, bool) {
		cfg := DefaultConfig()
		cfg.Policy, _ = tts.ParsePolicy("token")
		cfg.Synth = tts.Synth{Mode: mode, TTFA: latency, Continuation: latency / 5, RTF: 0.9}
		v, ok, err := MaxTPOT(cfg, turn, nil)
		if err != nil {
			t.Fatal(err)
		}
		return v, ok
	}
	if v, ok := tpot(tts.ModeRequest, 250*ms); ok {
		t.Errorf("request at 250 ms and RTF 0.9: a safe TPOT of %v, want none", v)
	}
	if v, ok := tpot(tts.ModeStream, 250*ms); !ok || v < 100*ms {
		t.Errorf("stream at 250 ms and RTF 0.9: safe TPOT %v (%v), want one above 100 ms", v, ok)
	}
	a, okA := tpot(tts.ModeStream, 0)
	b, okB := tpot(tts.ModeRequest, 0)
	if a != b || okA != okB || !okA {
		t.Errorf("no latency: stream %v (%v), request %v (%v); want equal", a, okA, b, okB)
	}
}
