package plot

import (
	"math/rand/v2"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

const testText = "Sure. The quickest way to the station is to walk north along the river, " +
	"cross at the second bridge, and take the first left after the market. " +
	"It should take about fifteen minutes, a little longer if it rains. " +
	"Would you like me to send the route to your phone?"

// seededTurn streams testText word by word: TTFT 250 ms, ITLs around
// tpot with seeded jitter, and the given stalls (token index -> delay).
func seededTurn(id string, seed uint64, tpot time.Duration, stalls map[int]time.Duration) *pipeline.Turn {
	rng := rand.New(rand.NewPCG(seed, 7))
	words := strings.SplitAfter(testText, " ")
	t := &pipeline.Turn{ID: id, Status: pipeline.StatusOK}
	at := 250 * time.Millisecond
	for i, w := range words {
		if i > 0 {
			at += tpot/2 + time.Duration(rng.Int64N(int64(tpot)))
		}
		at += stalls[i]
		t.Chunks = append(t.Chunks, pipeline.Chunk{At: at, Text: w, Tokens: 1})
	}
	return t
}

// played runs a turn through the default engine.
func played(t testing.TB, turn *pipeline.Turn, cfg pipeline.Config) *pipeline.Playout {
	t.Helper()
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	return p
}

// stallyTurn is the seeded turn of the golden timeline: one early stall
// and one in steady state.
func stallyTurn() *pipeline.Turn {
	return seededTurn("t1", 1, 300*time.Millisecond, map[int]time.Duration{3: 1500 * time.Millisecond, 30: 3 * time.Second})
}
