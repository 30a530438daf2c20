package tts

import (
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/tokens"
)

// benchTurn is a long assistant turn of varied replies (the property
// texts, repeated), as tokens.
var benchTurn = tokens.Split(strings.Repeat(strings.Join(propertyTexts[:5], " ")+" ", 8))

// BenchmarkChunker streams one turn per iteration through each preset's
// chunker, reused with Reset as the engine reuses it; compare each with
// the plain sentence rule of the same run.
func BenchmarkChunker(b *testing.B) {
	for _, name := range presetNames {
		b.Run(name, func(b *testing.B) {
			p, err := ParsePolicy(name)
			if err != nil {
				b.Fatal(err)
			}
			c := p.NewChunker()
			b.ReportAllocs()
			for b.Loop() {
				for i, tok := range benchTurn {
					at := time.Duration(i) * time.Millisecond
					if d, ok := c.Deadline(); ok && d <= at {
						c.Expire(d)
					}
					c.Append(at, tok)
				}
				c.Flush()
				c.Reset()
			}
			b.ReportMetric(float64(b.N*len(benchTurn))/b.Elapsed().Seconds()/1e6, "Mtokens/s")
		})
	}
}

// BenchmarkPresetHeldText streams turns in which the Pipecat presets hold
// long text without a sentence end while asking their splitter again and
// again (an abbreviation every few words, or an opening quotation mark
// that never closes), the worst case for the splitting window; compare
// pipecat (sentencex, an 8 KiB window) with pipecat-1.11 (Punkt, 512 bytes).
func BenchmarkPresetHeldText(b *testing.B) {
	for _, turn := range []struct{ name, text string }{
		{"abbreviations", strings.Repeat("see Dr. Lee and ", 1500)},
		{"open-quotes", strings.Repeat("« a. b ", 3000)},
	} {
		toks := tokens.Split(turn.text)
		for _, name := range []string{"pipecat", "pipecat-1.11"} {
			b.Run(turn.name+"/"+name, func(b *testing.B) {
				p, err := ParsePolicy(name)
				if err != nil {
					b.Fatal(err)
				}
				c := p.NewChunker()
				for b.Loop() {
					for i, tok := range toks {
						c.Append(time.Duration(i)*time.Millisecond, tok)
					}
					c.Flush()
					c.Reset()
				}
				b.ReportMetric(float64(len(turn.text))/1024, "KiB/turn")
			})
		}
	}
}
