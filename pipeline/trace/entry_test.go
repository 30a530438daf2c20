package trace

import (
	"bytes"
	"errors"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// streamOfBody runs an SSE body through a Stream in reads of 32 KiB, as
// a client reads it (see streamOf).
func streamOfBody(body []byte) *Stream {
	var reads []string
	for rest := body; len(rest) > 0; {
		n := min(len(rest), 32<<10)
		reads = append(reads, string(rest[:n]))
		rest = rest[n:]
	}
	return streamOf(200, "text/event-stream", reads...)
}

// TestStreamRefusedAtTheLimits: what a server streams past the limits
// (issue 45: 300,000 chunks, one 2 MB delta, usage of 2147483647 tokens)
// ends the turn as an error that says why, with what came before the
// limit kept; the turn written as a trace reads back.
func TestStreamRefusedAtTheLimits(t *testing.T) {
	t.Parallel()
	var many bytes.Buffer
	for range MaxTurnTokens + 1000 {
		many.WriteString(testkit.ChatChunk(`{"content":" w"}`))
	}
	many.WriteString(testkit.Done)
	huge := testkit.ChatChunk(`{"content":"Hi"}`) + testkit.ChatChunk(`{"content":"`+strings.Repeat("a", 2<<20)+`"}`) + testkit.Done
	usage := testkit.ChatChunk(`{"content":"Hi"}`) + `data: {"choices":[],"usage":{"completion_tokens":2147483647}}` + "\n\n" + testkit.Done
	perChunkUsage := `data: {"choices":[{"index":0,"delta":{"content":"Hi"}}],"usage":{"completion_tokens":2147483647}}` + "\n\n" + testkit.Done
	for _, tc := range []struct {
		name   string
		body   []byte
		chunks int
		why    string
	}{
		{"300,000 chunks", many.Bytes(), MaxTurnTokens, "takes the turn past 262144 tokens"},
		{"a 2 MB delta", []byte(huge), 1, "has 2097152 bytes of text; want at most 131072"},
		{"usage of 2147483647 tokens", []byte(usage), 1, "usage: 2147483647 output tokens"},
		{"a chunk of 2147483647 tokens", []byte(perChunkUsage), 0, "has 2147483647 tokens"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			s := streamOfBody(tc.body)
			turn := &s.Turn
			if turn.Status != pipeline.StatusError || !strings.Contains(turn.Error, "refused at the limits") || !strings.Contains(turn.Error, tc.why) {
				t.Errorf("status %s, error %.300q; want an error saying %q", turn.Status, turn.Error, tc.why)
			}
			if len(turn.Chunks) != tc.chunks || s.Refused() == nil || turn.OutputTokens != 0 {
				t.Errorf("%d chunks (want %d), refused %v, output tokens %d", len(turn.Chunks), tc.chunks, s.Refused(), turn.OutputTokens)
			}
			var buf bytes.Buffer
			if err := NewWriter(&buf, "test").WriteTurn(turn); err != nil {
				t.Fatal(err)
			}
			back, err := drain(buf.Bytes(), "")
			if err != nil || len(back) != 1 || len(back[0].Chunks) != tc.chunks || back[0].Status != pipeline.StatusError {
				t.Errorf("the written turn reads back as %d turns, %v", len(back), err)
			}
		})
	}
}

// TestLongErrorAndNamesCut: a server's error text of megabytes and a tool
// call's name of megabytes are cut to the limits, so the trace's end and
// tool records fit a line a reader reads.
func TestLongErrorAndNamesCut(t *testing.T) {
	t.Parallel()
	long := strings.Repeat("é", 1<<20)
	s := streamOfBody([]byte(`data: {"error":{"message":"` + long + `"}}` + "\n\n" +
		`data: {"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":"c1","function":{"name":"` + long + `"}}]}}]}` + "\n\n" + testkit.Done))
	if n := len(s.Turn.Error); n > MaxErrorText || !strings.HasSuffix(s.Turn.Error, "...") {
		t.Errorf("error of %d bytes, want at most %d, cut with ...", n, MaxErrorText)
	}
	if len(s.ToolCalls) != 1 || len(s.ToolCalls[0].Name) > MaxName {
		t.Errorf("tool calls %d, name of %d bytes", len(s.ToolCalls), len(s.ToolCalls[0].Name))
	}
	var buf bytes.Buffer
	w := NewWriter(&buf, "test")
	w.WriteToolCall("t", pipeline.ToolCall{At: 1, Duration: 1, Name: s.ToolCalls[0].Name})
	w.EndTurn(&s.Turn)
	if _, err := drain(buf.Bytes(), ""); err != nil {
		t.Errorf("the records do not read back: %v", err)
	}
}

// TestBenchmarkReadersHoldTheLimits: a benchmark file whose one-token
// turn carries megabytes of text (convert would write a trace line no
// reader takes) is refused where it is read, naming the file and turn.
func TestBenchmarkReadersHoldTheLimits(t *testing.T) {
	t.Parallel()
	vllm := fixture(t, "testdata/vllm/basic/result.json")
	in := strings.Replace(vllm, `"Yes, sure."`, `"`+strings.Repeat("a", 1<<20)+`"`, 1)
	_, err := drain([]byte(in), "vllm")
	if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), "in: turn ") || !strings.Contains(err.Error(), "bytes of text; want at most 131072") {
		t.Errorf("error %v; want ErrFormat naming the input, the turn and the limit", err)
	}
}
