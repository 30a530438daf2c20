package sim

import (
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
)

// Stall is an extra delay before one token: a prefill of another request,
// a garbage collection, a network hiccup.
type Stall struct {
	// Token is the index of the token that comes late.
	Token int `json:"token" yaml:"token"`
	// Delay is added to its inter-token latency (and so to every later
	// token's arrival).
	Delay time.Duration `json:"delay" yaml:"delay"`
}

// ConstantTurn streams text token by token: the first token at ttft, each
// next one tpot later, plus the given stalls.
func ConstantTurn(id, text string, ttft, tpot time.Duration, stalls []Stall) *pipeline.Turn {
	pieces := tokens.Split(text)
	extra := make(map[int]time.Duration, len(stalls))
	for _, s := range stalls {
		extra[s.Token] += s.Delay
	}
	t := &pipeline.Turn{ID: id, Status: pipeline.StatusOK, Chunks: make([]pipeline.Chunk, len(pieces))}
	at := ttft
	for i, p := range pieces {
		if i > 0 {
			at += tpot
		}
		at += extra[i]
		t.Chunks[i] = pipeline.Chunk{At: at, Text: p, Tokens: 1}
	}
	return t
}
