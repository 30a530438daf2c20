package pipeline

import (
	"math/rand/v2"
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

func textTurns(count int) []*Turn {
	text := "Sure, the express train leaves every fifteen minutes and takes about twenty-five minutes. Tickets cost twelve euros; buy them at the machines. "
	turns := benchTurns(count, len(splitTokens(text+text)))
	words := splitTokens(text + text)
	for _, t := range turns {
		for k := range t.Chunks {
			t.Chunks[k].Textless = false
			t.Chunks[k].Text = words[k]
		}
	}
	return turns
}

func benchEngine(b *testing.B, policy string, turns []*Turn) {
	cfg := DefaultConfig()
	cfg.Policy, _ = tts.ParsePolicy(policy)
	p, err := NewPlayout(cfg, "")
	if err != nil {
		b.Fatal(err)
	}
	tokens := 0
	for _, t := range turns {
		tokens += len(t.Chunks)
	}
	b.ReportAllocs()
	b.ResetTimer()
	for b.Loop() {
		for _, t := range turns {
			if err := p.PlayTurn(t); err != nil {
				b.Fatal(err)
			}
		}
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mtokens/s")
}

func BenchmarkEngineTokenTextless(b *testing.B) { benchEngine(b, "token", benchTurns(100, 2000)) }
func BenchmarkEngineSentenceText(b *testing.B)  { benchEngine(b, "sentence", textTurns(2000)) }
func BenchmarkEngineTokenText(b *testing.B)     { benchEngine(b, "token", textTurns(2000)) }

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
	}
	if gaps == 0 {
		b.Fatal("no gaps")
	}
	b.ReportMetric(float64(tokens)*float64(b.N)/b.Elapsed().Seconds()/1e6, "Mtokens/s")
}
