package trace

import (
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// An OpenAI tool-calling exchange is one turn of several streams: the
// reply streams until it ends in tool calls (finish_reason "tool_calls"),
// the app runs them, and the request that carries their results streams
// the rest of the reply. openai.Proxy joins the streams as they come; a
// capture's request record names the turn its stream resumes, and
// CaptureReader joins them again. Both join with these functions, so a
// capture reads back as the turns the proxy recorded.

// StopForTools notes, when stream s ended in tool calls, that turn t (which
// s streamed into, its times offset later in t) stopped for the first of
// them, no earlier than t's last chunk; false when s did not.
func StopForTools(t *pipeline.Turn, s *Stream, offset time.Duration) bool {
	if s.Stats.FinishReason != "tool_calls" || len(s.ToolCalls) == 0 || s.Turn.Status != pipeline.StatusOK {
		return false
	}
	tc := pipeline.ToolCall{At: s.ToolCalls[0].At + offset, Name: s.ToolCalls[0].Name}
	if n := len(t.Chunks); n > 0 {
		tc.At = max(tc.At, t.Chunks[n-1].At)
	}
	t.ToolCalls = append(t.ToolCalls, tc)
	return true
}

// ResumeAfterTools notes that the request with the results of the tool
// call t stopped for was sent at at (in t's time, since its first
// request): the call returned then, and that request's stream's times are
// at later in t.
func ResumeAfterTools(t *pipeline.Turn, at time.Duration) {
	tc := &t.ToolCalls[len(t.ToolCalls)-1]
	tc.Duration = max(0, at-tc.At)
}

// EndResumed ends turn t with the end of stream s, which resumed it: t
// takes s's status, and s's usage adds to t's (a stream without usage
// leaves t without: its chunks count).
func EndResumed(t *pipeline.Turn, s *Stream) {
	t.Status, t.Error = s.Turn.Status, s.Turn.Error
	if t.OutputTokens > 0 && s.Turn.OutputTokens > 0 {
		t.OutputTokens += s.Turn.OutputTokens
	} else {
		t.OutputTokens = 0
	}
}
