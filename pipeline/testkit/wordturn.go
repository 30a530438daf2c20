package testkit

import (
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// WordTurn streams text one word (with its leading space) per token: the
// first at ttft, each next tpot later, plus stalls[i] before token i.
func WordTurn(id, text string, ttft, tpot time.Duration, stalls map[int]time.Duration) *pipeline.Turn {
	t := &pipeline.Turn{ID: id, Status: pipeline.StatusOK}
	at := ttft
	for i, w := range strings.Fields(text) {
		if i > 0 {
			at += tpot
			w = " " + w
		}
		at += stalls[i]
		t.Chunks = append(t.Chunks, pipeline.Chunk{At: at, Text: w, Tokens: 1})
	}
	return t
}
