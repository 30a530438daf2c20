package sim

import (
	"reflect"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// TestPlainTurnMatchesGeneralLoop checks Turn's loop for turns of one
// token a step without reasoning against its general loop, on texts,
// text-less tokens and every timing.
func TestPlainTurnMatchesGeneralLoop(t *testing.T) {
	t.Parallel()
	for _, g := range []*Generator{
		{Timing: Sampled{TTFT: 250 * time.Millisecond, ITL: Dist{Shape: ShapeLognormal, Mean: 0.04, CV: 0.5}}, Texts: []string{benchText, "Short answer.", "Ok"}},
		{Timing: Sampled{TTFT: 100 * time.Millisecond, ITL: Dist{Shape: ShapeGamma, Mean: 0.03, CV: 1.5}}, Tokens: 57},
		{Timing: testRoofline(true), Texts: []string{benchText}},
		{Timing: testRoofline(false), Tokens: 3},
		{Timing: Constant{TTFT: 200 * time.Millisecond, TPOT: 30 * time.Millisecond}, Texts: []string{benchText}},
		{Timing: Sampled{ITL: Dist{Mean: 0.02, CV: 0.3}}, Tokens: 1, Speculative: Speculative{Cost: 0.5}},
	} {
		if err := g.Validate(); err != nil {
			t.Fatal(err)
		}
		fast, general := g.NewStream(7), g.NewStream(7)
		general.general = true
		for i := range 300 {
			got := fast.Turn(i)
			gotChunks := append([]pipeline.Chunk(nil), got.Chunks...)
			want := general.Turn(i)
			if !reflect.DeepEqual(gotChunks, want.Chunks) || got.Status != want.Status || got.ID != want.ID {
				t.Fatalf("%s turn %d: plain loop\n%+v\ngeneral loop\n%+v", g, i, gotChunks, want.Chunks)
			}
		}
	}
}

// TestTPOTSecondsMatchesTurn checks the Monte Carlo's TPOT against
// Turn.TPOTSeconds.
func TestTPOTSecondsMatchesTurn(t *testing.T) {
	t.Parallel()
	s := benchGenerator(t).NewStream(3)
	for i := range 50 {
		turn := *s.Turn(i)
		turn.Chunks = turn.Chunks[:i%len(turn.Chunks)]
		turn.Chunks = append([]pipeline.Chunk(nil), turn.Chunks...)
		if i%3 == 0 && len(turn.Chunks) > 0 {
			turn.Chunks[0].Tokens = 4
		}
		if i%5 == 0 {
			turn.OutputTokens = i
		}
		tokens := 0
		for _, c := range turn.Chunks {
			tokens += c.TokenCount()
		}
		if turn.OutputTokens > 0 {
			tokens = turn.OutputTokens // as the Monte Carlo worker counts
		}
		gv, gok := turn.TPOTOver(tokens)
		wv, wok := turn.TPOTSeconds()
		if gv != wv || gok != wok {
			t.Fatalf("turn %d: TPOTOver %v %v, TPOTSeconds %v %v", i, gv, gok, wv, wok)
		}
	}
}
