package trace

import (
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// streamOf runs reads (one per ms) through a Stream with the given status
// and content type.
func streamOf(status int, ctype string, reads ...string) *Stream {
	s := NewStream("t1", "", time.Time{})
	s.Response(status, ctype, 0)
	for i, r := range reads {
		_ = s.Read([]byte(r), time.Duration(i+1)*time.Millisecond)
	}
	s.Close(time.Duration(len(reads)+1)*time.Millisecond, nil, false)
	return s
}

func TestStream(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	sse := "text/event-stream; charset=utf-8"
	tests := []struct {
		name      string
		status    int
		ctype     string
		reads     []string
		chunks    []pipeline.Chunk
		st        pipeline.Status
		errHas    string
		check     func(t *testing.T, s *Stream)
		outTokens int
	}{
		{
			name: "chat with role, usage and done", status: 200, ctype: sse,
			reads:  []string{testkit.ChatChunk(`{"role":"assistant","content":""}`) + testkit.ChatChunk(`{"content":"Hi"}`), testkit.ChatChunk(`{"content":" there"}`), testkit.FinishChunk + testkit.UsageChunk + testkit.Done},
			chunks: []pipeline.Chunk{{At: ms, Text: "Hi"}, {At: 2 * ms, Text: " there"}},
			st:     pipeline.StatusOK, outTokens: 4,
			check: func(t *testing.T, s *Stream) {
				if s.Stats.RoleOnly != 1 || s.Stats.Empty != 1 || s.Stats.NoChoice != 1 || !s.Stats.Done ||
					s.Stats.FinishReason != "stop" || s.Stats.Usage.ReasoningTokens != 1 || s.Stats.DoneAt != 3*ms {
					t.Errorf("stats %+v", s.Stats)
				}
			},
		},
		{
			name: "reasoning_content and reasoning", status: 200, ctype: sse,
			reads: []string{testkit.ChatChunk(`{"reasoning_content":"hmm"}`), testkit.ChatChunk(`{"reasoning":"so"}`), testkit.ChatChunk(`{"content":"Yes"}`), testkit.Done},
			chunks: []pipeline.Chunk{{At: ms, Text: "hmm", Reasoning: true}, {At: 2 * ms, Text: "so", Reasoning: true},
				{At: 3 * ms, Text: "Yes"}},
			st: pipeline.StatusOK,
		},
		{
			name: "reasoning and content in one delta", status: 200, ctype: sse,
			reads:  []string{testkit.ChatChunk(`{"reasoning_content":"a","content":"b"}`), testkit.Done},
			chunks: []pipeline.Chunk{{At: ms, Text: "a", Reasoning: true}, {At: ms, Text: "b"}},
			st:     pipeline.StatusOK,
		},
		{
			name: "completions text", status: 200, ctype: "text/event-stream",
			reads: []string{`data: {"object":"text_completion","choices":[{"index":0,"text":"One","finish_reason":null}]}` + "\n\n",
				`data: {"object":"text_completion","choices":[{"index":0,"text":"","finish_reason":"length"}]}` + "\n\n"},
			chunks: []pipeline.Chunk{{At: ms, Text: "One"}},
			st:     pipeline.StatusOK, // a finish reason and the end of the body: a whole answer without [DONE]
		},
		{
			name: "continuous usage gives tokens per chunk", status: 200, ctype: sse,
			reads: []string{
				`data: {"choices":[{"index":0,"delta":{"content":"ab"}}],"usage":{"completion_tokens":2}}` + "\n\n",
				`data: {"choices":[{"index":0,"delta":{"content":"c"}}],"usage":{"completion_tokens":3}}` + "\n\n", testkit.Done},
			chunks: []pipeline.Chunk{{At: ms, Text: "ab", Tokens: 2}, {At: 2 * ms, Text: "c", Tokens: 1}},
			st:     pipeline.StatusOK, outTokens: 3,
		},
		{
			name: "keep-alive comments and CRLF", status: 200, ctype: sse,
			reads:  []string{": ping\r\n\r\n", "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"x\"}}]}\r\n\r\n", ":\r\n", "data: [DONE]\r\n\r\n"},
			chunks: []pipeline.Chunk{{At: 2 * ms, Text: "x"}},
			st:     pipeline.StatusOK,
			check: func(t *testing.T, s *Stream) {
				if s.Stats.Comments != 2 {
					t.Errorf("comments %d, want 2", s.Stats.Comments)
				}
			},
		},
		{
			name: "data over several lines", status: 200, ctype: sse,
			reads:  []string{"data: {\"choices\":[{\"index\":0,\ndata: \"delta\":{\"content\":\"y\"}}]}\n\n", testkit.Done},
			chunks: []pipeline.Chunk{{At: ms, Text: "y"}},
			st:     pipeline.StatusOK,
		},
		{
			name: "error object in the stream", status: 200, ctype: sse,
			reads:  []string{testkit.ChatChunk(`{"content":"a"}`), `data: {"error":{"object":"error","message":"boom","type":"InternalServerError","code":500}}` + "\n\n", testkit.Done},
			chunks: []pipeline.Chunk{{At: ms, Text: "a"}},
			st:     pipeline.StatusError, errHas: "error in stream: boom (InternalServerError)",
		},
		{
			name: "event: error", status: 200, ctype: sse,
			reads: []string{"event: error\ndata: overloaded\n\n"},
			st:    pipeline.StatusError, errHas: "overloaded",
		},
		{
			name: "vLLM error object", status: 200, ctype: sse,
			reads: []string{`data: {"object":"error","message":"too long","code":400}` + "\n\n", testkit.Done},
			st:    pipeline.StatusError, errHas: "too long",
		},
		{
			name: "HTTP error with an OpenAI body", status: 429, ctype: "application/json",
			reads: []string{`{"error":{"message":"rate limited","type":"requests"}}`},
			st:    pipeline.StatusError, errHas: "HTTP 429: rate limited (requests)",
		},
		{
			name: "HTTP error with a text body", status: 502, ctype: "text/plain",
			reads: []string{"bad gateway"},
			st:    pipeline.StatusError, errHas: "HTTP 502: bad gateway",
		},
		{
			name: "not an event stream", status: 200, ctype: "application/json",
			reads: []string{`{"choices":[{"message":{"content":"hi"}}]}`},
			st:    pipeline.StatusError, errHas: "not an event stream",
		},
		{
			name: "cut before done", status: 200, ctype: sse,
			reads:  []string{testkit.ChatChunk(`{"content":"a"}`)},
			chunks: []pipeline.Chunk{{At: ms, Text: "a"}},
			st:     pipeline.StatusError, errHas: "before [DONE]",
		},
		{
			name: "cut inside a line", status: 200, ctype: sse,
			reads:  []string{testkit.ChatChunk(`{"content":"a"}`), `data: {"choi`},
			chunks: []pipeline.Chunk{{At: ms, Text: "a"}},
			st:     pipeline.StatusError, errHas: "inside an SSE line",
		},
		{
			name: "data that is not JSON", status: 200, ctype: sse,
			reads: []string{"data: hello\n\n", testkit.Done},
			st:    pipeline.StatusError, errHas: "not a JSON object",
		},
		{
			name: "events after done are counted, not recorded", status: 200, ctype: sse,
			reads: []string{testkit.Done, testkit.ChatChunk(`{"content":"late"}`)},
			st:    pipeline.StatusOK,
			check: func(t *testing.T, s *Stream) {
				if s.Stats.AfterDone != 1 {
					t.Errorf("after done %d, want 1", s.Stats.AfterDone)
				}
			},
		},
		{
			name: "other choices and tool calls", status: 200, ctype: sse,
			reads: []string{`data: {"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"tool_calls":[{"id":"x"}]}}]}` + "\n\n", testkit.Done},
			st:    pipeline.StatusOK,
			check: func(t *testing.T, s *Stream) {
				if s.Stats.OtherChoices != 1 || s.Stats.ToolCalls != 1 || s.Stats.Empty != 1 {
					t.Errorf("stats %+v", s.Stats)
				}
			},
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			s := streamOf(tt.status, tt.ctype, tt.reads...)
			if got, want := len(s.Turn.Chunks), len(tt.chunks); got != want {
				t.Fatalf("%d chunks %+v, want %d %+v", got, s.Turn.Chunks, want, tt.chunks)
			}
			for i := range tt.chunks {
				if got, want := s.Turn.Chunks[i], tt.chunks[i]; got != want {
					t.Errorf("chunk %d: got %+v, want %+v", i, got, want)
				}
			}
			if s.Turn.Status != tt.st || !strings.Contains(s.Turn.Error, tt.errHas) {
				t.Errorf("status %s %q, want %s containing %q", s.Turn.Status, s.Turn.Error, tt.st, tt.errHas)
			}
			if s.Turn.OutputTokens != tt.outTokens {
				t.Errorf("output tokens %d, want %d", s.Turn.OutputTokens, tt.outTokens)
			}
			if tt.check != nil {
				tt.check(t, s)
			}
		})
	}
}

func TestStreamCancelled(t *testing.T) {
	t.Parallel()
	s := NewStream("t", "", time.Time{})
	s.Response(200, "text/event-stream", 0)
	_ = s.Read([]byte(testkit.ChatChunk(`{"content":"a"}`)), time.Millisecond)
	s.Close(2*time.Millisecond, ErrCancelled, true)
	if s.Turn.Status != pipeline.StatusCancelled || s.Turn.Error != "cancelled" || len(s.Turn.Chunks) != 1 {
		t.Fatalf("turn %+v", s.Turn)
	}
	if err := s.Read([]byte("x"), 3*time.Millisecond); err == nil {
		t.Error("a read after Close was accepted")
	}
}

func BenchmarkStream(b *testing.B) {
	ev := []byte(testkit.ChatChunk(`{"content":" hello"}`))
	s := NewStream("t", "", time.Time{})
	s.Response(200, "text/event-stream", 0)
	b.ReportAllocs()
	for i := 0; b.Loop(); i++ {
		if i%4096 == 0 {
			s.Turn.Chunks = s.Turn.Chunks[:0]
		}
		if err := s.Read(ev, time.Duration(i)); err != nil {
			b.Fatal(err)
		}
	}
}
