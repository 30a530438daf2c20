package pipeline

import (
	"math/rand/v2"
	"runtime"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// benchTurns makes turns of n text-less tokens at a mean ITL of 40 ms
// with occasional stalls.
func benchTurns(count, n int) []*Turn {
	rng := rand.New(rand.NewPCG(1, 2))
	turns := make([]*Turn, count)
	for i := range turns {
		t := &Turn{ID: "b", Status: StatusOK, Chunks: make([]Chunk, n)}
		at := 300 * time.Millisecond
		for k := range t.Chunks {
			at += time.Duration(20+rng.IntN(40)) * time.Millisecond
			if rng.IntN(50) == 0 {
				at += time.Duration(rng.IntN(800)) * time.Millisecond
			}
			t.Chunks[k] = Chunk{At: at, Tokens: 1, Textless: true}
		}
		turns[i] = t
	}
	return turns
}

const (
	benchText  = "Sure, the express train leaves every fifteen minutes and takes about twenty-five minutes. Tickets cost twelve euros; buy them at the machines. "
	benchText2 = "Yes, the night bus stops outside terminal two every thirty minutes until dawn. A taxi costs forty euros; it takes half an hour. "
)

// textTurns makes turns that speak benchText twice, each token a word.
func textTurns(count int) []*Turn {
	words := splitTokens(benchText + benchText)
	turns := benchTurns(count, len(words))
	for _, t := range turns {
		for k := range t.Chunks {
			t.Chunks[k].Textless = false
			t.Chunks[k].Text = words[k]
		}
	}
	return turns
}

// variedTurns makes turns that speak benchText and benchText2 in turn
// (twice each): no turn has the text of the turn before it, so a Playout
// reuses nothing of the previous turn.
func variedTurns(count int) []*Turn {
	words := [2][]string{splitTokens(benchText + benchText), splitTokens(benchText2 + benchText2)}
	turns := make([]*Turn, 0, count)
	for _, w := range words {
		turns = append(turns, benchTurns(count/2, len(w))...)
	}
	out := make([]*Turn, count)
	for i := range out {
		t := turns[i/2+(i%2)*(count/2)]
		w := words[i%2]
		for k := range t.Chunks {
			t.Chunks[k].Textless = false
			t.Chunks[k].Text = w[k]
		}
		out[i] = t
	}
	return out
}

// bareLoop plays each token of turns for a fixed time and counts the gaps,
// with nothing else: the floor an engine over the same ITLs is set
// against.
func bareLoop(turns []*Turn) int {
	gaps := 0
	for _, t := range turns {
		var end time.Duration
		for _, c := range t.Chunks {
			if c.At > end {
				gaps++
				end = c.At
			}
			end += 280 * time.Millisecond
		}
	}
	return gaps
}

// benchEngine plays turns under policy and reports tokens per second,
// allocations per turn and the ratio to the bare loop over the same turns
// (x-bare), timed between the engine's passes so both see the same
// machine, by wall clock and by the thread's CPU time (x-bare-cpu).
func benchEngine(b *testing.B, policy string, turns []*Turn) {
	benchEngineThrough(b, policy, "none", turns)
}

// benchEngineThrough is benchEngine with the underruns heard through an
// output transport (tts.ParseTransport).
func benchEngineThrough(b *testing.B, policy, transport string, turns []*Turn) {
	cfg := DefaultConfig()
	cfg.Policy, _ = tts.ParsePolicy(policy)
	var err error
	if cfg.Transport, err = tts.ParseTransport(transport); err != nil {
		b.Fatal(err)
	}
	p, err := NewPlayout(cfg, "")
	if err != nil {
		b.Fatal(err)
	}
	tokens := 0
	for _, t := range turns {
		tokens += len(t.Chunks)
	}
	for _, t := range turns { // warm up: the Playout's memory grows once
		if err := p.PlayTurn(t); err != nil {
			b.Fatal(err)
		}
	}
	// the goroutine stays on one thread, whose CPU time counts the work
	// of each side alone on a machine others share
	runtime.LockOSThread()
	defer runtime.UnlockOSThread()
	var bare time.Duration
	var engineCPU, bareCPU int64
	gaps := 0
	var before, after runtime.MemStats
	runtime.ReadMemStats(&before)
	b.ReportAllocs()
	b.ResetTimer()
	last, cpuOK := threadCPU()
	for b.Loop() {
		for _, t := range turns {
			if err := p.PlayTurn(t); err != nil {
				b.Fatal(err)
			}
		}
		b.StopTimer()
		mid, _ := threadCPU()
		engineCPU += mid - last
		start := time.Now()
		gaps += bareLoop(turns)
		bare += time.Since(start)
		last, _ = threadCPU()
		bareCPU += last - mid
		b.StartTimer()
	}
	b.StopTimer()
	runtime.ReadMemStats(&after)
	if gaps == 0 {
		b.Fatal("no gaps")
	}
	n := float64(tokens) * float64(b.N)
	rate := n / b.Elapsed().Seconds()
	b.ReportMetric(rate/1e6, "Mtokens/s")
	b.ReportMetric(rate/(n/bare.Seconds()), "x-bare")
	if cpuOK && engineCPU > 0 && bareCPU > 0 {
		// the same ratio by CPU time, which other work on the machine
		// does not stretch
		b.ReportMetric(float64(bareCPU)/float64(engineCPU), "x-bare-cpu")
		b.ReportMetric(n/(float64(engineCPU)/1e9)/1e6, "Mtokens/cpu-s")
	}
	b.ReportMetric(float64(after.Mallocs-before.Mallocs)/float64(len(turns)*b.N), "allocs/turn")
}

func BenchmarkEngineTokenTextless(b *testing.B) { benchEngine(b, "token", benchTurns(100, 2000)) }
func BenchmarkEngineSentenceText(b *testing.B)  { benchEngine(b, "sentence", textTurns(2000)) }
func BenchmarkEngineTokenText(b *testing.B)     { benchEngine(b, "token", textTurns(2000)) }

// BenchmarkEngineSentenceTextPipecat is SentenceText heard through
// Pipecat's output transport: the cost of framing every turn's audio.
func BenchmarkEngineSentenceTextPipecat(b *testing.B) {
	benchEngineThrough(b, "sentence", "pipecat", textTurns(2000))
}

// BenchmarkEngineSentenceTextVaried is SentenceText with the text
// changing from turn to turn: nothing carries over between turns.
func BenchmarkEngineSentenceTextVaried(b *testing.B) { benchEngine(b, "sentence", variedTurns(2000)) }

// BenchmarkBareLoop is the baseline: a loop over the same ITLs that plays
// each token for a fixed time and counts gaps, with nothing else.
func BenchmarkBareLoop(b *testing.B) {
	turns := benchTurns(100, 2000)
	tokens := 0
	for _, t := range turns {
		tokens += len(t.Chunks)
	}
	gaps := 0
	for b.Loop() {
		gaps += bareLoop(turns)
	}
	if gaps == 0 {
		b.Fatal("no gaps")
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mtokens/s")
}
