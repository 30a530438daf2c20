package scenarios

import (
	_ "embed"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/sim"
)

//go:embed texts/default.txt
var defaultText string

// The default turn's timing: TTFT 250 ms and a decode pace of 37 ms per
// token, which with the two stalls makes the turn's TPOT just under the
// usual 50 ms target.
const (
	DefaultTTFT = 250 * time.Millisecond
	DefaultTPOT = 37 * time.Millisecond
)

// DefaultStalls are the two prefill-like stalls of the default turn: one
// early, while the buffer is still thin, and one in steady state.
var DefaultStalls = []sim.Stall{
	{Token: 3, Delay: 700 * time.Millisecond},
	{Token: 60, Delay: 700 * time.Millisecond},
}

// DefaultText returns the text of the default turn.
func DefaultText() string { return strings.TrimSpace(defaultText) }

// DefaultTurn returns the built-in default: one turn of real text whose TPOT
// meets the 50 ms target, with two prefill-like stalls.
func DefaultTurn() *pipeline.Turn {
	return sim.ConstantTurn("default", DefaultText(), DefaultTTFT, DefaultTPOT, DefaultStalls)
}
