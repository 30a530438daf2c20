package pipeline

import (
	"fmt"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// reuseTexts are answers with the punctuation, quotes, apostrophes and
// non-ASCII text the chunkers and the voice model treat apart.
var reuseTexts = []string{
	"Sure, the express train leaves every fifteen minutes. Tickets cost twelve euros; buy them at the machines! Anything else?",
	"He said \"wait.\" Then (quietly) it's done… Dr. Smith arrived at 5 p.m. and left—fast.",
	"Die Straße ist gesperrt: nehmen Sie die Umleitung. Danke schön! 東京へようこそ。次の駅です！",
	"one two three four five six seven eight nine ten eleven twelve thirteen fourteen",
	"Yes.  No.\nMaybe? 'Quoted.' [Bracketed.] Ok",
}

// reuseTurn cuts text into chunks of one to three tokens (text-less ones
// and reasoning mixed in when asked) at random times: shape decides the
// cut and kinds, rng the times.
func reuseTurn(id string, text string, shape, rng *rand.Rand, textless, reasoning bool) *Turn {
	t := &Turn{ID: id, Status: StatusOK}
	at := time.Duration(rng.IntN(600)) * time.Millisecond
	step := func() {
		switch r := rng.IntN(20); {
		case r == 0:
			at += time.Duration(rng.IntN(1500)) * time.Millisecond // a stall
		case r == 1:
			// the same arrival time as the chunk before
		default:
			at += time.Duration(5+rng.IntN(80)) * time.Millisecond
		}
	}
	words := strings.SplitAfter(text, " ")
	for i := 0; i < len(words); {
		step()
		switch r := shape.IntN(10); {
		case reasoning && r == 0:
			t.Chunks = append(t.Chunks, Chunk{At: at, Tokens: 1 + shape.IntN(3), Reasoning: true})
			continue
		case textless && r == 1:
			t.Chunks = append(t.Chunks, Chunk{At: at, Tokens: 1 + shape.IntN(2), Textless: true})
			continue
		}
		n := min(len(words)-i, 1+shape.IntN(2))
		t.Chunks = append(t.Chunks, Chunk{At: at, Text: strings.Join(words[i:i+n], ""), Tokens: shape.IntN(3)})
		i += n
	}
	return t
}

// playoutState is everything a caller can read of a played turn.
type playoutState struct {
	Chunks      []SpeechChunk
	Underruns   []Underrun
	Tolerance   []time.Duration
	MinPreroll  time.Duration
	StartAt     time.Duration
	Started     bool
	Ended       bool
	Speech      time.Duration
	Err         string
	InContext   bool
	NextLatency time.Duration
	Texts       []string
	Textless    []bool
	Backlogs    []Backlog
	Drains      time.Duration
	DrainsOK    bool
}

func stateOf(p *Playout) playoutState {
	s := playoutState{
		Chunks:      append([]SpeechChunk(nil), p.Chunks...),
		Underruns:   append([]Underrun(nil), p.Underruns...),
		Tolerance:   append([]time.Duration(nil), p.Tolerance...),
		MinPreroll:  p.MinPreroll,
		Ended:       p.Ended(),
		Speech:      p.Speech(),
		InContext:   p.InContext(),
		NextLatency: p.NextLatency(),
	}
	s.StartAt, s.Started = p.Started()
	s.Drains, s.DrainsOK = p.DrainsAt()
	if err := p.Err(); err != nil {
		s.Err = err.Error()
	}
	var last time.Duration
	for _, c := range p.Chunks {
		s.Texts = append(s.Texts, p.Text(c))
		s.Textless = append(s.Textless, p.Textless(c))
		last = max(last, c.PlayEnd)
	}
	for t := time.Duration(0); t <= last+50*time.Millisecond; t += 37 * time.Millisecond {
		s.Backlogs = append(s.Backlogs, p.Backlog(t))
	}
	return s
}

// reuseConfig draws an engine configuration.
func reuseConfig(t *testing.T, rng *rand.Rand) Config {
	t.Helper()
	policies := []string{"token", "word", "sentence", "pipecat", "pipecat-0.0.96", "livekit", "livekit-basic", "elevenlabs-schedule:20,40", "timer:300ms"}
	modes := []tts.Mode{tts.ModeStream, tts.ModeRequest, tts.ModeParallel}
	cfg := DefaultConfig()
	var err error
	if cfg.Policy, err = tts.ParsePolicy(policies[rng.IntN(len(policies))]); err != nil {
		t.Fatal(err)
	}
	cfg.Synth = tts.Synth{
		Mode:         modes[rng.IntN(len(modes))],
		TTFA:         time.Duration(rng.IntN(400)) * time.Millisecond,
		Continuation: time.Duration(rng.IntN(100)) * time.Millisecond,
		RTF:          []float64{0, 0.1, 0.5, 1, 1.7}[rng.IntN(5)],
	}
	cfg.Preroll = []time.Duration{0, 0, 150 * time.Millisecond, time.Second}[rng.IntN(4)]
	if rng.IntN(5) == 0 {
		cfg.TokenAudio = time.Duration(50+rng.IntN(300)) * time.Millisecond
	}
	cfg.StallFactor = 1 + 4*rng.Float64()
	return cfg
}

// TestPlayTurnReuseMatchesFreshPlayout plays random turns on one Playout,
// many of them with the text of the turn before (which PlayTurn reuses),
// and checks every one against a fresh Playout that reuses nothing, and
// its stall tolerances and smallest pre-roll against the algorithms as
// first written.
func TestPlayTurnReuseMatchesFreshPlayout(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(16, 4))
	replays := 0
	for trial := range 300 {
		cfg := reuseConfig(t, rng)
		warm, err := NewPlayout(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		textless, reasoning := rng.IntN(3) == 0, rng.IntN(3) == 0
		var seed uint64
		for turn := range 8 {
			same := turn > 0
			if turn == 0 || rng.IntN(4) == 0 {
				seed, same = rng.Uint64(), false // a new text or a new cut of it
			}
			shape := rand.New(rand.NewPCG(seed, 1))
			text := reuseTexts[seed%uint64(len(reuseTexts))]
			var tr *Turn
			if seed%7 == 0 {
				// text-less tokens only, as benchmark files keep them
				tr = &Turn{ID: "textless", Status: StatusOK}
				at := time.Duration(0)
				for range 5 + int(seed%40) {
					at += time.Duration(rng.IntN(120)) * time.Millisecond
					// a text-less token's Text, which the engine never reads
					junk := []string{"", "", "x", " tok", "Hello."}[rng.IntN(5)]
					tr.Chunks = append(tr.Chunks, Chunk{At: at, Tokens: 1, Textless: true, Text: junk})
				}
			} else {
				tr = reuseTurn(fmt.Sprintf("t%d", turn), text, shape, rng, textless, reasoning)
			}
			if rng.IntN(15) == 0 && len(tr.Chunks) > 2 {
				tr.Chunks[1].At = tr.Chunks[0].At - time.Millisecond // out of order
			}
			was := warm.memo
			werr := warm.PlayTurn(tr)
			fresh, ferr := NewPlayout(cfg, "")
			if ferr != nil {
				t.Fatal(ferr)
			}
			ferr = fresh.PlayTurn(tr)
			if fmt.Sprint(werr) != fmt.Sprint(ferr) {
				t.Fatalf("trial %d turn %d: error %v, fresh Playout %v", trial, turn, werr, ferr)
			}
			if was && warm.replaying {
				t.Fatal("replaying left set")
			}
			if was && same && werr == nil {
				replays++
			}
			if werr == nil {
				if got, want := warm.Tolerance, refTolerance(warm); !reflect.DeepEqual(got, want) {
					t.Fatalf("trial %d turn %d: tolerance %v, the first written algorithm %v", trial, turn, got, want)
				}
				if got, want := warm.MinPreroll, refMinPreroll(warm); got != want {
					t.Fatalf("trial %d turn %d: min pre-roll %v, the first written algorithm %v", trial, turn, got, want)
				}
			}
			if got, want := stateOf(warm), stateOf(fresh); !reflect.DeepEqual(got, want) {
				t.Fatalf("trial %d turn %d (%s, %s): the Playout that played the turn before differs from a fresh one:\n got %+v\nwant %+v",
					trial, turn, cfg.Policy.Name(), cfg.Synth.Timing(), got, want)
			}
		}
	}
	if replays < 300 {
		t.Errorf("only %d turns were replayed: the test does not exercise reuse", replays)
	}
}

// durationsFunc adapts a function to Durations.
type durationsFunc func(text string) (time.Duration, error)

// Duration calls f.
func (f durationsFunc) Duration(text string) (time.Duration, error) { return f(text) }

// TestPlayTurnReuseOnlyByText checks that a timer policy, measured
// durations or a policy that does not say its releases depend on the
// text alone are never replayed.
func TestPlayTurnReuseOnlyByText(t *testing.T) {
	t.Parallel()
	timer, err := tts.ParsePolicy("timer:200ms")
	if err != nil {
		t.Fatal(err)
	}
	word, err := tts.ParsePolicy("word")
	if err != nil {
		t.Fatal(err)
	}
	opaque := tts.PolicyFunc{Label: "opaque", New: word.NewChunker}
	measured := durationsFunc(func(text string) (time.Duration, error) { return time.Duration(len(text)) * 50 * time.Millisecond, nil })
	for _, c := range []struct {
		name      string
		policy    tts.Policy
		durations Durations
		reuse     bool
	}{{"word", word, nil, true}, {"timer", timer, nil, false}, {"opaque", opaque, nil, false}, {"measured durations", word, measured, false}} {
		cfg := DefaultConfig()
		cfg.Policy, cfg.Durations = c.policy, c.durations
		p, err := NewPlayout(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		tr := reuseTurn("a", reuseTexts[0], rand.New(rand.NewPCG(1, 1)), rand.New(rand.NewPCG(2, 2)), false, false)
		for range 2 {
			if err := p.PlayTurn(tr); err != nil {
				t.Fatal(err)
			}
		}
		if got := p.memo; got != c.reuse {
			t.Errorf("%s: reuse %v, want %v", c.name, got, c.reuse)
		}
	}
}

// refTolerance is Playout.tolerance as it was first written, one loop
// walking chunks and streamed chunks backward together: the reference the
// engine's is checked against.
func refTolerance(p *Playout) []time.Duration {
	n := len(p.at)
	C := len(p.Chunks)
	tol := make([]time.Duration, n)
	if C == 0 {
		for i := range tol {
			tol[i] = Unbounded
		}
		return tol
	}
	M := Unbounded
	T := Unbounded
	backlog := p.startHeld // some chunk >= c0 (or the start) waited
	end := p.Chunks[C-1].PlayEnd
	var tail time.Duration // audio of the chunks after c
	// Walk chunks backward while walking streamed chunks backward, so
	// each streamed chunk k gets T for c0(k) = first chunk with Trigger > k.
	k := n - 1
	for c := C - 1; c >= -1; c-- {
		// assign tolerances to streamed chunks whose c0 is c+1
		lowTrigger := -1
		if c >= 0 {
			lowTrigger = p.Chunks[c].Trigger
		}
		for ; k >= 0 && k >= lowTrigger; k-- {
			switch {
			case c+1 >= C || T == Unbounded:
				tol[k] = Unbounded
			case c+1 <= p.startChunk && !backlog:
				tol[k] = Unbounded
			default:
				tol[k] = max(0, T)
			}
		}
		if c < 0 {
			break
		}
		ch := &p.Chunks[c]
		L := Unbounded
		if c > p.startChunk {
			// the latest first-audio time that keeps the turn's last
			// audio, and so its total silence, where it is
			L = end - tail - ch.Audio - p.allowance(ch)
		}
		tail += ch.Audio
		// M holds M_{c+1}: follow the chain from chunk c to chunk c+1
		switch {
		case M == Unbounded:
		case p.mode == modeParallel:
			M = Unbounded
		case p.mode == modeRequest:
			M -= ch.Done - ch.Ready + p.cfg.Synth.TTFA
		default:
			M -= ch.Done - ch.Ready
		}
		M = min(M, L)
		l := p.latency(c)
		if M != Unbounded {
			T = min(T, M-l-ch.Release)
		}
		if ch.Ready > ch.Release+l {
			backlog = true
		}
	}
	return tol
}

// refMinPreroll is Playout.minPreroll written the slow, plain way: S* from
// the chunks themselves (not the engine's earliestStart), and the audio
// held just before S* counted one frame at a time rather than solved for.
func refMinPreroll(p *Playout) time.Duration {
	if len(p.Chunks) == 0 {
		return 0
	}
	var before time.Duration
	S := time.Duration(math.MinInt64)
	for i := range p.Chunks {
		c := &p.Chunks[i]
		S = max(S, c.Ready+p.allowance(c)-before)
		before += c.Audio
	}
	var held time.Duration
	for i := range p.Chunks {
		c := &p.Chunks[i]
		if c.Ready >= S {
			break
		}
		if p.cfg.Synth.RTF == 0 {
			held += c.Audio
			continue
		}
		whole := true
		for k := time.Duration(0); k*p.frame < c.Audio; k++ {
			if c.Ready+p.frameOffset(k) >= S {
				whole = false
				break
			}
			held += min(p.frame, c.Audio-k*p.frame)
		}
		if !whole {
			break // the chunks after it wait behind it
		}
	}
	if held == 0 {
		return 0
	}
	return (held/time.Millisecond + 1) * time.Millisecond
}

// TestPlayTurnAllocatesNothing checks that a warm Playout plays a turn,
// replayed or in full, without allocating.
func TestPlayTurnAllocatesNothing(t *testing.T) {
	for _, c := range []struct {
		name, policy string
		turns        []*Turn
	}{
		{"text-less tokens, replayed", "token", benchTurns(2, 500)},
		{"sentences, replayed", "sentence", textTurns(2)},
		{"sentences, text changing", "sentence", variedTurns(2)},
		{"words, text changing", "word", variedTurns(2)},
	} {
		cfg := DefaultConfig()
		var err error
		if cfg.Policy, err = tts.ParsePolicy(c.policy); err != nil {
			t.Fatal(err)
		}
		p, err := NewPlayout(cfg, "")
		if err != nil {
			t.Fatal(err)
		}
		play := func() {
			for _, tr := range c.turns {
				if err := p.PlayTurn(tr); err != nil {
					t.Fatal(err)
				}
			}
		}
		play() // the Playout's memory grows once
		if got := testing.AllocsPerRun(20, play); got != 0 {
			t.Errorf("%s: %v allocations per %d turns, want 0", c.name, got, len(c.turns))
		}
	}
}
