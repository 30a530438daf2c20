package sim

import (
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// ToolCall pauses a turn for a tool call: after AfterTokens tokens the
// stream stops for Duration (the tool named Name runs), and the tokens
// after it arrive that much later. It is a scenario's tool_calls entry.
type ToolCall struct {
	AfterTokens int           `yaml:"after_tokens"`
	Duration    time.Duration `yaml:"duration"`
	Name        string        `yaml:"name"`
}

// InsertToolCalls pauses t for each tool call, in order of AfterTokens:
// the stream stops when its AfterTokens-th token has arrived (at 0 for
// none), and every chunk after it arrives Duration later. A tool call past
// the turn's tokens is left out. t's chunks and tool calls must be its
// own: both are changed in place.
func InsertToolCalls(t *pipeline.Turn, tcs []ToolCall) {
	if len(tcs) == 0 {
		return
	}
	t.ToolCalls = t.ToolCalls[:0]
	k, tokens := 0, 0
	for _, tc := range tcs {
		for k < len(t.Chunks) && tokens < tc.AfterTokens {
			tokens += t.Chunks[k].TokenCount()
			k++
		}
		if k >= len(t.Chunks) {
			return
		}
		at := time.Duration(0)
		if k > 0 {
			at = t.Chunks[k-1].At
		}
		for j := k; j < len(t.Chunks); j++ {
			t.Chunks[j].At += tc.Duration
		}
		t.ToolCalls = append(t.ToolCalls, pipeline.ToolCall{At: at, Duration: tc.Duration, Name: tc.Name})
	}
}
