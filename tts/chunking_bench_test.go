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
