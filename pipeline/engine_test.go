package pipeline

import (
	"math/rand/v2"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

const ms = time.Millisecond

// fixedConfig speaks every token for d, releases each token at once, and
// synthesizes instantly: the engine then is the plain reference player.
func fixedConfig(t testing.TB, d time.Duration) Config {
	t.Helper()
	cfg := DefaultConfig()
	p, err := tts.ParsePolicy("token")
	if err != nil {
		t.Fatal(err)
	}
	cfg.Policy = p
	cfg.TokenAudio = d
	cfg.Synth = tts.Synth{}
	return cfg
}

// textless builds a turn of text-less one-token chunks arriving at times.
func textless(id string, times ...time.Duration) *Turn {
	t := &Turn{ID: id, Status: StatusOK}
	for _, at := range times {
		t.Chunks = append(t.Chunks, Chunk{At: at, Tokens: 1, Textless: true})
	}
	return t
}

// referencePlayer plays each token for d as soon as it arrives, the way a
// user checks the engine by hand, and returns the gaps.
func referencePlayer(times []time.Duration, d time.Duration) (starts, lengths []time.Duration) {
	var end time.Duration
	for i, at := range times {
		if i > 0 && at > end {
			starts = append(starts, end)
			lengths = append(lengths, at-end)
		}
		end = max(end, at) + d
	}
	return starts, lengths
}

func play(t testing.TB, cfg Config, turn *Turn) *Playout {
	t.Helper()
	p, err := Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

func TestEngineHandComputed(t *testing.T) {
	t.Parallel()
	// Tokens of 200 ms audio at 0, 100, 500, 1000 ms.
	// Player: 0-200, 200-400, gap 400-500, 500-700, gap 700-1000, 1000-1200.
	p := play(t, fixedConfig(t, 200*ms), textless("a", 0, 100*ms, 500*ms, 1000*ms))
	if got, want := len(p.Underruns), 2; got != want {
		t.Fatalf("got %d underruns, want %d: %+v", got, want, p.Underruns)
	}
	tests := []struct {
		start, length time.Duration
		class         Class
		token         int
	}{
		{400 * ms, 100 * ms, Glitch, 2},
		{700 * ms, 300 * ms, Interruption, 3},
	}
	for i, tt := range tests {
		u := p.Underruns[i]
		if u.Start != tt.start || u.Duration != tt.length || u.Class != tt.class || u.Token != tt.token {
			t.Errorf("underrun %d = start %v len %v %s token %d; want %v %v %s %d",
				i, u.Start, u.Duration, u.Class, u.Token, tt.start, tt.length, tt.class, tt.token)
		}
		if got, want := u.Samples, int64(tt.length.Seconds()*tts.DefaultSampleRate); got != want {
			t.Errorf("underrun %d: %d samples, want %d", i, got, want)
		}
	}
	if got, want := p.Underruns[1].ITL, 500*ms; got != want {
		t.Errorf("ITL of the interruption = %v, want %v", got, want)
	}
	if got, want := p.Underruns[1].Tolerance, 200*ms; got != want {
		t.Errorf("tolerance of the interruption = %v, want %v (ITL 500 - gap 300)", got, want)
	}
	if at, _ := p.Started(); at != 0 {
		t.Errorf("TTFA = %v, want 0", at)
	}
	// The smallest pre-roll: start must be >= max(0-0, 100-200, 500-400, 1000-600) = 400 ms;
	// audio ready before 400 ms: tokens at 0 and 100 -> 400 ms; the smallest
	// whole millisecond above it.
	if got, want := p.MinPreroll, 401*ms; got != want {
		t.Errorf("MinPreroll = %v, want %v", got, want)
	}
}

func TestEngineMatchesReferencePlayer(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(1, 2))
	for trial := range 300 {
		d := time.Duration(20+rng.IntN(300)) * ms
		n := 1 + rng.IntN(60)
		times := make([]time.Duration, n)
		at := time.Duration(rng.IntN(500)) * ms
		for i := range times {
			at += time.Duration(rng.ExpFloat64() * float64(d))
			times[i] = at
		}
		p := play(t, fixedConfig(t, d), textless("r", times...))
		starts, lengths := referencePlayer(times, d)
		if len(p.Underruns) != len(starts) {
			t.Fatalf("trial %d: %d underruns, reference player has %d", trial, len(p.Underruns), len(starts))
		}
		for i, u := range p.Underruns {
			if u.Start != starts[i] || u.Duration != lengths[i] {
				t.Fatalf("trial %d underrun %d: %v+%v, reference %v+%v", trial, i, u.Start, u.Duration, starts[i], lengths[i])
			}
		}
	}
}

func TestEngineTextTurnWithText(t *testing.T) {
	t.Parallel()
	// "Hello there." in two tokens with token audio: the text tokens are
	// spoken for exactly the token audio too.
	turn := &Turn{ID: "t", Chunks: []Chunk{{At: 0, Text: "Hello", Tokens: 1}, {At: 600 * ms, Text: " there.", Tokens: 1}}}
	p := play(t, fixedConfig(t, 250*ms), turn)
	if len(p.Underruns) != 1 {
		t.Fatalf("got %d underruns, want 1", len(p.Underruns))
	}
	u := p.Underruns[0]
	if u.Start != 250*ms || u.Duration != 350*ms || u.Position != MidSentence {
		t.Errorf("got %v+%v at %s, want 250ms+350ms mid_sentence", u.Start, u.Duration, u.Position)
	}
}

func TestEngineSynthesizer(t *testing.T) {
	t.Parallel()
	// Two tokens of 100 ms audio arriving together; a request per chunk,
	// TTFA 50 ms, RTF 2: the second chunk waits for the first: start 0, done 50+200=250; second
	// starts 250, first audio at 300. Player: first chunk frames at
	// 50+k*40 (frame 20 ms, RTF 2): plays 50-70, gap 70-90, 90-110, ...
	cfg := fixedConfig(t, 100*ms)
	cfg.Synth = tts.Synth{Mode: tts.ModeRequest, TTFA: 50 * ms, RTF: 2, Frame: 20 * ms}
	p := play(t, cfg, textless("s", 0, 0))
	var intra, between int
	for _, u := range p.Underruns {
		if u.Cause != CauseSynthesizer {
			t.Errorf("cause %s, want synthesizer", u.Cause)
		}
		if u.Position == MidChunk {
			intra++
			if u.Duration != 20*ms {
				t.Errorf("intra-chunk gap %v, want 20ms", u.Duration)
			}
		} else {
			between++
		}
	}
	// chunk 1 frames: 5 frames, 4 gaps each; chunk 2 likewise; plus the gap
	// between chunks: chunk 1 plays 50..(50+4*40+20)=230, chunk 2 ready 300.
	if intra != 8 || between != 1 {
		t.Errorf("got %d intra-chunk and %d between-chunk gaps, want 8 and 1: %+v", intra, between, p.Underruns)
	}
	for _, u := range p.Underruns {
		if u.Position != MidChunk && (u.Start != 230*ms || u.Duration != 70*ms) {
			t.Errorf("gap between chunks %v+%v, want 230ms+70ms", u.Start, u.Duration)
		}
	}
}

func TestEnginePreroll(t *testing.T) {
	t.Parallel()
	times := []time.Duration{0, 100 * ms, 500 * ms, 1000 * ms}
	cfg := fixedConfig(t, 200*ms)
	cfg.Preroll = 300 * ms
	// 300 ms of audio is ready at 100 ms (the second token): the player
	// starts then and plays 100-500, 500-700, gap 700-1000.
	p := play(t, cfg, textless("p", times...))
	if at, _ := p.Started(); at != 100*ms {
		t.Errorf("start %v, want 100ms", at)
	}
	if len(p.Underruns) != 1 || p.Underruns[0].Start != 700*ms || p.Underruns[0].Duration != 300*ms {
		t.Errorf("got %+v, want one gap 700ms+300ms", p.Underruns)
	}
	// Pre-roll longer than the turn: start when everything is ready.
	cfg.Preroll = time.Hour
	p = play(t, cfg, textless("p", times...))
	if at, _ := p.Started(); at != 1000*ms || len(p.Underruns) != 0 {
		t.Errorf("start %v with %d underruns, want 1s and none", at, len(p.Underruns))
	}
}

func TestMinPrerollRemovesEveryUnderrun(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(3, 4))
	policies := []string{"token", "word", "sentence", "livekit", "elevenlabs", "timer:300ms"}
	text := "Well, the train leaves at nine. Then you change at the central station, which takes five minutes. Is that fine?"
	for trial := range 180 {
		cfg := DefaultConfig()
		cfg.Policy, _ = tts.ParsePolicy(policies[(trial/3)%len(policies)])
		cfg.Synth = randomSynth(rng, trial, 300*ms, 1.5)
		turn := randomTextTurn(rng, text, 20+rng.IntN(150))
		p := play(t, cfg, turn)
		need := p.MinPreroll
		if need%ms != 0 {
			t.Fatalf("trial %d: pre-roll %v is not a whole millisecond", trial, need)
		}
		cfg.Preroll = need
		if q := play(t, cfg, turn); len(q.Underruns) != 0 {
			t.Fatalf("trial %d (%s, %+v): pre-roll %v still leaves %d underruns, first %+v",
				trial, cfg.Policy.Name(), cfg.Synth, need, len(q.Underruns), q.Underruns[0])
		}
		if need > ms {
			cfg.Preroll = need - ms
			if q := play(t, cfg, turn); len(q.Underruns) == 0 {
				t.Fatalf("trial %d (%s %+v): pre-roll %v is not the smallest: %v also has no underrun",
					trial, cfg.Policy.Name(), cfg.Synth, need, cfg.Preroll)
			}
		}
	}
}

// randomSynth draws a synthesizer of every mode in turn (by trial), with
// latencies up to maxLatency and RTF up to maxRTF.
func randomSynth(rng *rand.Rand, trial int, maxLatency time.Duration, maxRTF float64) tts.Synth {
	modes := []tts.Mode{tts.ModeStream, tts.ModeRequest, tts.ModeParallel}
	return tts.Synth{
		Mode:         modes[trial%len(modes)],
		TTFA:         time.Duration(rng.Int64N(int64(maxLatency))),
		Continuation: time.Duration(rng.Int64N(int64(maxLatency))),
		RTF:          rng.Float64() * maxRTF,
	}
}

// randomTextTurn streams text at a mean ITL of itl ms with occasional
// stalls.
func randomTextTurn(rng *rand.Rand, text string, itl int) *Turn {
	t := &Turn{ID: "x", Status: StatusOK}
	at := time.Duration(100+rng.IntN(400)) * ms
	words := splitTokens(text)
	for i, w := range words {
		if i > 0 {
			at += time.Duration(rng.ExpFloat64() * float64(itl) * float64(ms))
			if rng.IntN(10) == 0 {
				at += time.Duration(rng.IntN(1500)) * ms
			}
		}
		t.Chunks = append(t.Chunks, Chunk{At: at, Text: w, Tokens: 1})
	}
	return t
}

// splitTokens splits text before each space and after punctuation.
func splitTokens(s string) []string {
	var out []string
	start := 0
	for i := 1; i < len(s); i++ {
		if s[i] == ' ' || s[i-1] == ',' || s[i-1] == '.' {
			out = append(out, s[start:i])
			start = i
		}
	}
	return append(out, s[start:])
}

func underrunTotal(p *Playout) time.Duration {
	var d time.Duration
	for _, u := range p.Underruns {
		d += u.Duration
	}
	return d
}

func TestPropertyNoStallNoUnderrun(t *testing.T) {
	t.Parallel()
	// Every token arrives before the player needs it: no underrun, for every
	// policy, whatever the synthesizer latency.
	for _, policy := range []string{"token", "word", "sentence", "livekit", "elevenlabs", "timer:200ms"} {
		cfg := DefaultConfig()
		cfg.Policy, _ = tts.ParsePolicy(policy)
		cfg.Synth = tts.Synth{TTFA: 150 * ms, RTF: 0.3}
		turn := &Turn{ID: "fast"}
		for i, w := range splitTokens("Sure. The express train leaves every fifteen minutes, and it takes twenty minutes to town.") {
			turn.Chunks = append(turn.Chunks, Chunk{At: time.Duration(i) * time.Millisecond, Text: w, Tokens: 1})
		}
		if p := play(t, cfg, turn); len(p.Underruns) != 0 {
			t.Errorf("%s: %d underruns with instant tokens, first %+v", policy, len(p.Underruns), p.Underruns[0])
		}
	}
}

func TestPropertyMoreDelayNeverLessSilence(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(5, 6))
	text := "I can help with that, of course. First, open the settings page. Then choose the account tab and press save."
	for trial := range 200 {
		cfg := DefaultConfig()
		policies := []string{"token", "word", "sentence", "livekit", "elevenlabs"}
		cfg.Policy, _ = tts.ParsePolicy(policies[trial%len(policies)])
		cfg.Synth = randomSynth(rng, trial/5, 200*ms, 1)
		cfg.Preroll = time.Duration(rng.IntN(3)) * 200 * ms
		turn := randomTextTurn(rng, text, 10+rng.IntN(200))
		before := underrunTotal(play(t, cfg, turn))
		k := rng.IntN(len(turn.Chunks))
		delay := time.Duration(1+rng.IntN(2000)) * ms
		later := *turn
		later.Chunks = append([]Chunk(nil), turn.Chunks...)
		for i := k; i < len(later.Chunks); i++ {
			later.Chunks[i].At += delay
		}
		after := underrunTotal(play(t, cfg, &later))
		if after < before {
			t.Fatalf("trial %d (%s): delaying tokens >= %d by %v cut silence from %v to %v", trial, cfg.Policy.Name(), k, delay, before, after)
		}
	}
}

// TestPropertyToleranceIsExact: a stall of tolerance+1ms after token i
// adds underrun time, one of tolerance-1ms does not.
func TestPropertyToleranceIsExact(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(7, 8))
	text := "Sure, I can book that. The flight leaves at seven, and the return is on Sunday evening. Shall I go ahead?"
	checked := 0
	exact := map[tts.Mode]int{} // tolerance+1ms adds silence after the start
	for trial := range 300 {
		cfg := DefaultConfig()
		policies := []string{"token", "word", "sentence", "livekit", "elevenlabs"}
		cfg.Policy, _ = tts.ParsePolicy(policies[trial%len(policies)])
		cfg.Synth = randomSynth(rng, trial/5, 200*ms, 1.4)
		if trial%4 == 0 {
			cfg.Preroll = time.Duration(rng.IntN(800)) * ms
		}
		turn := randomTextTurn(rng, text, 30+rng.IntN(120))
		base := play(t, cfg, turn)
		baseSilence := underrunTotal(base)
		tol := append([]time.Duration(nil), base.Tolerance...)
		for i := range len(turn.Chunks) - 1 {
			d := tol[i]
			if d == Unbounded {
				// any stall only delays the start, or nothing depends on it
				if s := underrunTotal(play(t, cfg, stalled(turn, i, 5*time.Second))); s > baseSilence {
					t.Fatalf("trial %d (%s) token %d: unbounded tolerance but a 5s stall adds %v of silence", trial, cfg.Policy.Name(), i, s-baseSilence)
				}
				continue
			}
			if d >= ms {
				if s := underrunTotal(play(t, cfg, stalled(turn, i, d-ms))); s > baseSilence {
					t.Fatalf("trial %d (%s %+v preroll %v) token %d: stall of tolerance-1ms (%v) adds %v of silence",
						trial, cfg.Policy.Name(), cfg.Synth, cfg.Preroll, i, d-ms, s-baseSilence)
				}
			}
			if s := underrunTotal(play(t, cfg, stalled(turn, i, d+ms))); s <= baseSilence {
				// conservative only where the player had not started yet and
				// the synthesizer was backlogged (see Playout.tolerance)
				if turn.Chunks[i].At >= startOf(base) {
					t.Fatalf("trial %d (%s %+v preroll %v) token %d: stall of tolerance+1ms (%v) adds no silence",
						trial, cfg.Policy.Name(), cfg.Synth, cfg.Preroll, i, d+ms)
				}
			} else if turn.Chunks[i].At >= startOf(base) {
				exact[cfg.Synth.Mode]++
			}
			checked++
		}
	}
	if checked < 2000 {
		t.Errorf("only %d tolerances checked", checked)
	}
	for _, m := range []tts.Mode{tts.ModeStream, tts.ModeRequest, tts.ModeParallel} {
		if exact[m] < 300 {
			t.Errorf("mode %s: only %d tolerances shown exact after the start", m, exact[m])
		}
	}
}

func startOf(p *Playout) time.Duration {
	at, _ := p.Started()
	return at
}

// stalled delays every chunk after index i by d.
func stalled(turn *Turn, i int, d time.Duration) *Turn {
	out := *turn
	out.Chunks = append([]Chunk(nil), turn.Chunks...)
	for k := i + 1; k < len(out.Chunks); k++ {
		out.Chunks[k].At += d
	}
	return &out
}

func TestEngineCauses(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name   string
		policy string
		synth  tts.Synth
		turn   *Turn
		want   Cause
	}{
		{
			name: "stall", policy: "token",
			turn: textless("s", 0, 50*ms, 100*ms, 150*ms, 200*ms, 2000*ms, 2050*ms),
			want: CauseStall,
		},
		{
			name: "pace", policy: "token",
			turn: textless("p", 0, 400*ms, 800*ms, 1200*ms, 1600*ms),
			want: CausePace,
		},
		{
			name: "synthesizer", policy: "token", synth: tts.Synth{Mode: tts.ModeRequest, TTFA: 300 * ms},
			turn: textless("y", 0, 0, 0),
			want: CauseSynthesizer,
		},
		{
			// the sentence was complete long before; the policy could only
			// release it when the next token showed the sentence had ended,
			// and that token came after a stall
			name: "stall behind a sentence end", policy: "sentence",
			turn: &Turn{ID: "h", Chunks: []Chunk{
				{At: 0, Text: "Hi."}, {At: 10 * ms, Text: " Okay"}, {At: 20 * ms, Text: " then."}, {At: 3000 * ms, Text: " Bye"},
			}},
			want: CauseStall,
		},
		{
			// tokens stream steadily, but the policy holds a long sentence
			// until it is complete
			name: "held", policy: "sentence",
			turn: steady("Hi. The train to the city leaves from platform nine every fifteen minutes today. Ok", 50*ms),
			want: CauseHeld,
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			cfg := fixedConfig(t, 282*ms)
			cfg.Policy, _ = tts.ParsePolicy(tt.policy)
			cfg.Synth = tt.synth
			if tt.policy == "sentence" {
				cfg.TokenAudio = 0
			}
			p := play(t, cfg, tt.turn)
			if len(p.Underruns) == 0 {
				t.Fatal("no underrun")
			}
			if got := p.Underruns[0].Cause; got != tt.want {
				t.Errorf("cause %s, want %s (%+v)", got, tt.want, p.Underruns[0])
			}
		})
	}
}

func TestEnginePositions(t *testing.T) {
	t.Parallel()
	cfg := fixedConfig(t, 100*ms)
	turn := &Turn{ID: "w", Chunks: []Chunk{
		{At: 0, Text: "Fine."}, {At: 500 * ms, Text: " Then"}, {At: 1000 * ms, Text: ","}, {At: 1500 * ms, Text: " wor"}, {At: 2000 * ms, Text: "ld"}, {At: 2500 * ms, Text: " ok"},
	}}
	p := play(t, cfg, turn)
	want := []Position{AtSentenceBoundary, MidSentence, AtClauseBoundary, MidWord, MidSentence}
	if len(p.Underruns) != len(want) {
		t.Fatalf("got %d underruns, want %d", len(p.Underruns), len(want))
	}
	for i, u := range p.Underruns {
		if u.Position != want[i] {
			t.Errorf("gap %d at %s, want %s", i, u.Position, want[i])
		}
	}
}

func TestPushRejectsDisorder(t *testing.T) {
	t.Parallel()
	p, err := NewPlayout(DefaultConfig(), "x")
	if err != nil {
		t.Fatal(err)
	}
	if err := p.Push(Chunk{At: 10 * ms, Text: "a"}); err != nil {
		t.Fatal(err)
	}
	if err := p.Push(Chunk{At: 5 * ms, Text: "b"}); err == nil {
		t.Error("a chunk arriving before the previous one was accepted")
	}
	if err := p.Push(Chunk{At: -1, Text: "b"}); err == nil {
		t.Error("a negative arrival time was accepted")
	}
	p.End()
	if err := p.Push(Chunk{At: 20 * ms, Text: "c"}); err == nil {
		t.Error("a chunk after End was accepted")
	}
}

func TestMaxTPOT(t *testing.T) {
	t.Parallel()
	// Tokens of 200 ms audio, token chunking, no TTS latency: any TPOT up
	// to 200 ms + 150 ms (just below the interruption threshold) is clean.
	cfg := fixedConfig(t, 200*ms)
	turn := textless("m", 100*ms, 200*ms, 300*ms, 400*ms)
	got, ok, err := MaxTPOT(cfg, turn, nil)
	if err != nil || !ok {
		t.Fatalf("MaxTPOT: %v %v", ok, err)
	}
	if want := 350 * ms; got < want-20*time.Microsecond || got >= want {
		t.Errorf("MaxTPOT = %v, want just under %v", got, want)
	}
}

// steady streams text split by splitTokens, one token every itl.
func steady(text string, itl time.Duration) *Turn {
	t := &Turn{ID: "steady", Status: StatusOK}
	for i, w := range splitTokens(text) {
		t.Chunks = append(t.Chunks, Chunk{At: time.Duration(i) * itl, Text: w, Tokens: 1})
	}
	return t
}
