package openai

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"strconv"
	"strings"
	"sync/atomic"
	"time"
	"unicode/utf8"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
	"github.com/speech-pipeline/underrun/tts/stream"
)

// DefaultMockModel is the model name a Mock reports when none is set.
const DefaultMockModel = "underrun-mock"

// maxRequestBody bounds the request bodies the Mock and the Proxy read.
const maxRequestBody = 32 << 20

// MockTurnHeader is a request header that picks the turn a Mock streams,
// by its ID, instead of the next one in turn.
const MockTurnHeader = "X-Underrun-Turn"

// Mock is an OpenAI-compatible server that streams recorded or simulated
// turns with their timing: each request gets the next of Turns (round
// robin, or the one MockTurnHeader names), and each chunk is written and
// flushed at its recorded time since the request arrived, in the chunk
// format of vLLM (a role chunk, content or reasoning_content deltas, a
// finish chunk, the usage chunk when asked for, and [DONE]). A turn whose
// status is error ends with an error event; one cancelled or incomplete
// ends with the connection dropped. Chunks without recorded text stream
// filler words. It serves POST /v1/chat/completions and /v1/completions
// (streaming or not), GET /v1/models and GET /health, and with Speech set
// POST /v1/audio/speech.
type Mock struct {
	// Turns are the turns to stream; at least one.
	Turns []*pipeline.Turn
	// Model is the model name reported (DefaultMockModel when empty).
	Model string
	// Logger receives one event per request served.
	Logger zerolog.Logger
	// Speech, when set, serves POST /v1/audio/speech as OpenAI's speech
	// API does: it speaks each request's input, and the audio goes out as
	// it is produced ("pcm": 16-bit at 24 kHz, resampled when the
	// synthesizer speaks at another rate; "wav", the default, at the
	// synthesizer's own rate; "stream_format": "sse" for OpenAI's
	// speech.audio.delta events). "speed" is checked, not applied.
	Speech stream.Synthesizer
	// SpeechLatency holds every speech answer this long after its request
	// arrived, before its first byte.
	SpeechLatency time.Duration
	// OnSend, when set, is called after each chunk of a turn is flushed,
	// with the index of the chunk in the turn and the time since the
	// request arrived: the mock's own record of what it sent when.
	OnSend func(turn string, chunk int, sent time.Duration)

	next   atomic.Uint64
	serial atomic.Uint64
}

var _ http.Handler = (*Mock)(nil)

type mockRequest struct {
	Model         string    `json:"model"`
	Messages      []Message `json:"messages"`
	Prompt        any       `json:"prompt"`
	Stream        bool      `json:"stream"`
	MaxTokens     *int      `json:"max_tokens"`
	MaxCompletion *int      `json:"max_completion_tokens"`
	StreamOptions *struct {
		IncludeUsage         bool `json:"include_usage"`
		ContinuousUsageStats bool `json:"continuous_usage_stats"`
	} `json:"stream_options"`
	Tools []struct {
		Function struct {
			Name string `json:"name"`
		} `json:"function"`
	} `json:"tools"`
}

func (m *Mock) model(req string) string {
	switch {
	case req != "":
		return req
	case m.Model != "":
		return m.Model
	}
	return DefaultMockModel
}

// ServeHTTP serves one request.
func (m *Mock) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	switch {
	case r.URL.Path == "/health" && r.Method == http.MethodGet:
		w.WriteHeader(http.StatusOK)
	case r.URL.Path == "/v1/models" && r.Method == http.MethodGet:
		w.Header().Set("Content-Type", "application/json")
		fmt.Fprintf(w, `{"object":"list","data":[{"id":%s,"object":"model","created":%d,"owned_by":"underrun"}]}`,
			quote(m.model("")), time.Now().Unix())
	case r.URL.Path == SpeechPath:
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		m.serveSpeech(w, r)
	case r.URL.Path == "/v1/chat/completions" || r.URL.Path == "/v1/completions":
		if r.Method != http.MethodPost {
			w.Header().Set("Allow", http.MethodPost)
			writeError(w, http.StatusMethodNotAllowed, "use POST")
			return
		}
		m.complete(w, r, r.URL.Path == "/v1/chat/completions")
	default:
		writeError(w, http.StatusNotFound, fmt.Sprintf("no route %s %s", r.Method, r.URL.Path))
	}
}

// writeError writes an OpenAI-style error body.
func writeError(w http.ResponseWriter, status int, msg string) {
	w.Header().Set("Content-Type", "application/json")
	w.WriteHeader(status)
	fmt.Fprintf(w, `{"object":"error","message":%s,"type":%s,"param":null,"code":%d}`,
		quote(msg), quote(strings.ReplaceAll(http.StatusText(status), " ", "")+"Error"), status)
}

func quote(s string) string { return string(appendQuote(nil, s)) }

// appendQuote appends s as a JSON string. Valid UTF-8 is kept as it is;
// other text goes through encoding/json, which replaces what is invalid.
func appendQuote(b []byte, s string) []byte {
	if !utf8.ValidString(s) {
		q, _ := json.Marshal(s) // a string always marshals
		return append(b, q...)
	}
	const hex = "0123456789abcdef"
	b = append(b, '"')
	start := 0
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c >= 0x20 && c != '"' && c != '\\' {
			continue
		}
		b = append(b, s[start:i]...)
		switch c {
		case '"', '\\':
			b = append(b, '\\', c)
		case '\n':
			b = append(b, '\\', 'n')
		case '\r':
			b = append(b, '\\', 'r')
		case '\t':
			b = append(b, '\\', 't')
		default:
			b = append(b, '\\', 'u', '0', '0', hex[c>>4], hex[c&0xf])
		}
		start = i + 1
	}
	b = append(b, s[start:]...)
	return append(b, '"')
}

func (m *Mock) pick(r *http.Request) (int, error) {
	if len(m.Turns) == 0 {
		return 0, fmt.Errorf("the mock has no turns to stream")
	}
	if id := r.Header.Get(MockTurnHeader); id != "" {
		for i, t := range m.Turns {
			if t.ID == id {
				return i, nil
			}
		}
		return 0, fmt.Errorf("no turn %q (header %s)", id, MockTurnHeader)
	}
	n := m.next.Add(1) - 1
	return int(n % uint64(len(m.Turns))), nil
}

// mockCallPrefix begins the ids of the tool calls the mock streams:
// call_underrun_TURN_K is the K-th tool call (from 1) of turn TURN (its
// index in Turns), so that the request carrying its result goes on with
// that turn after it.
const mockCallPrefix = "call_underrun_"

// continuation returns the turn and the part of it (from 1: after that
// many tool calls) a chat request asks for when its last message is the
// result of a tool call the mock streamed; ok is false for a new turn.
func (m *Mock) continuation(req mockRequest) (turn, part int, ok bool) {
	n := len(req.Messages)
	if n == 0 || req.Messages[n-1].Role != "tool" {
		return 0, 0, false
	}
	rest, found := strings.CutPrefix(req.Messages[n-1].ToolCallID, mockCallPrefix)
	a, b, two := strings.Cut(rest, "_")
	if !found || !two {
		return 0, 0, false
	}
	turn, err1 := strconv.Atoi(a)
	part, err2 := strconv.Atoi(b)
	if err1 != nil || err2 != nil || turn < 0 || turn >= len(m.Turns) || part < 1 || part > len(m.Turns[turn].ToolCalls) {
		return 0, 0, false
	}
	return turn, part, true
}

func (m *Mock) complete(w http.ResponseWriter, r *http.Request, chat bool) {
	arrived := time.Now()
	body, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody+1))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	if len(body) > maxRequestBody {
		writeError(w, http.StatusRequestEntityTooLarge, fmt.Sprintf("request body over %d bytes", maxRequestBody))
		return
	}
	var req mockRequest
	if err := json.Unmarshal(body, &req); err != nil {
		writeError(w, http.StatusBadRequest, "request body is not a JSON object: "+err.Error())
		return
	}
	if chat && len(req.Messages) == 0 {
		writeError(w, http.StatusBadRequest, `chat request without "messages"`)
		return
	}
	if !chat && req.Prompt == nil {
		writeError(w, http.StatusBadRequest, `completions request without "prompt"`)
		return
	}
	ti, part, cont := m.continuation(req)
	if !cont {
		var err error
		if ti, err = m.pick(r); err != nil {
			writeError(w, http.StatusNotFound, err.Error())
			return
		}
	}
	t := m.Turns[ti]
	limit := 0
	for _, p := range []*int{req.MaxTokens, req.MaxCompletion} {
		if p != nil && *p > 0 {
			limit = *p
		}
	}
	s := &mockStream{m: m, w: w, turn: t, chat: chat, modelJSON: appendQuote(nil, m.model(req.Model)), start: arrived, limit: limit,
		id: strconv.FormatUint(m.serial.Add(1), 10), created: arrived.Unix(), prompt: promptTokens(req)}
	if req.StreamOptions != nil {
		s.usage, s.continuous = req.StreamOptions.IncludeUsage, req.StreamOptions.ContinuousUsageStats
	}
	s.seg = t.Chunks
	if chat && req.Stream && len(req.Tools) > 0 && len(t.ToolCalls) > 0 {
		s.part(ti, part, req)
	}
	var sent int
	if req.Stream {
		sent, err = s.stream(r.Context())
	} else {
		sent, err = s.whole(r.Context())
	}
	ev := m.Logger.Info()
	if err != nil {
		ev = m.Logger.Warn().Str("error", err.Error())
	}
	ev.Str("event", "mock_request").Str("turn", t.ID).Bool("stream", req.Stream).Str("path", r.URL.Path).
		Int("chunks", sent).Float64("duration_ms", pipeline.Millis(time.Since(arrived))).Msg("mock_request")
}

// promptTokens estimates the prompt's tokens the way tokens.Split splits
// text: the mock has no tokenizer, and says so in no other way.
func promptTokens(req mockRequest) int {
	n := 0
	for _, msg := range req.Messages {
		n += tokens.Count(msg.Content)
	}
	if s, ok := req.Prompt.(string); ok {
		n += tokens.Count(s)
	}
	return n
}

type mockStream struct {
	m          *Mock
	w          http.ResponseWriter
	turn       *pipeline.Turn
	chat       bool
	modelJSON  []byte // the model's name, quoted
	id         string
	created    int64
	start      time.Time
	limit      int
	prompt     int
	usage      bool
	continuous bool
	buf        []byte
	fill       tokens.Filler // words for chunks without text
	// the part of the turn this answer streams: seg, its chunks (from
	// the turn's first), their times less shift; a tool call ends it at
	// tool.At - shift when tool is set (callID, toolName on the wire)
	seg              []pipeline.Chunk
	first            int
	shift            time.Duration
	tool             *pipeline.ToolCall
	callID, toolName string
}

// part makes the answer one part of a turn with tool calls, for a client
// that declared tools: part 0 streams the chunks up to the first tool call
// and then the call, and part k (the request carrying the result of call
// k) the chunks after it, timed from the call's end, up to the next call
// or the turn's end. The call names the trace's tool when the client
// declared one of that name, else the client's first.
func (s *mockStream) part(turn, k int, req mockRequest) {
	tools := s.turn.ToolPlaces()
	from, to := 0, len(s.turn.Chunks)
	if k > 0 {
		from, s.shift = tools[k-1], s.turn.ToolCalls[k-1].End()
	}
	if k < len(tools) {
		to = tools[k]
		tc := s.turn.ToolCalls[k]
		s.tool = &tc
		s.callID = mockCallPrefix + strconv.Itoa(turn) + "_" + strconv.Itoa(k+1)
		s.toolName = req.Tools[0].Function.Name
		for _, t := range req.Tools {
			if t.Function.Name == tc.Name {
				s.toolName = tc.Name
			}
		}
	}
	s.seg, s.first = s.turn.Chunks[from:to], from
}

// text returns what chunk c says on the wire.
func (s *mockStream) text(c pipeline.Chunk) string {
	if !c.Textless {
		return c.Text
	}
	return s.fill.Text(c.TokenCount())
}

// chunks returns how many of the part's chunks are sent (seg: the whole
// turn unless it has tool calls, see part), the tokens they carry, within
// the request's token limit, and the finish reason.
func (s *mockStream) chunks() (n, tokens int, finish string) {
	for _, c := range s.seg {
		if s.limit > 0 && tokens+c.TokenCount() > s.limit {
			return n, tokens, "length"
		}
		tokens += c.TokenCount()
		n++
	}
	switch {
	case s.tool != nil:
		return n, tokens, "tool_calls"
	case s.turn.OutputTokens > tokens && n == len(s.turn.Chunks):
		tokens = s.turn.OutputTokens
	}
	return n, tokens, "stop"
}

// ends reports whether the answer streams the end of the turn, n of its
// part's chunks sent: there its recorded status shows.
func (s *mockStream) ends(n int) bool {
	return s.tool == nil && s.first+n == len(s.turn.Chunks)
}

// toolDelta appends the chunk event of the tool call that ends the part,
// its arguments whole in it.
func (s *mockStream) toolDelta() {
	s.head()
	s.buf = append(s.buf, `,"choices":[{"index":0,"delta":{"tool_calls":[{"index":0,"id":`...)
	s.buf = appendQuote(s.buf, s.callID)
	s.buf = append(s.buf, `,"type":"function","function":{"name":`...)
	s.buf = appendQuote(s.buf, s.toolName)
	s.buf = append(s.buf, `,"arguments":"{}"}}]},"logprobs":null,"finish_reason":null}]}`+"\n\n"...)
}

// head starts a chunk's JSON object.
func (s *mockStream) head() {
	s.buf = append(s.buf, `data: {"id":"`...)
	if s.chat {
		s.buf = append(s.buf, `chatcmpl-mock-`...)
	} else {
		s.buf = append(s.buf, `cmpl-mock-`...)
	}
	s.buf = append(s.buf, s.id...)
	if s.chat {
		s.buf = append(s.buf, `","object":"chat.completion.chunk","created":`...)
	} else {
		s.buf = append(s.buf, `","object":"text_completion","created":`...)
	}
	s.buf = strconv.AppendInt(s.buf, s.created, 10)
	s.buf = append(s.buf, `,"model":`...)
	s.buf = append(s.buf, s.modelJSON...)
}

func (s *mockStream) appendUsage(completion int) {
	s.buf = append(s.buf, `"usage":{"prompt_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(s.prompt), 10)
	s.buf = append(s.buf, `,"total_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(s.prompt+completion), 10)
	s.buf = append(s.buf, `,"completion_tokens":`...)
	s.buf = strconv.AppendInt(s.buf, int64(completion), 10)
	s.buf = append(s.buf, '}')
}

// delta appends one chunk event: role, text (reasoning or not) and finish
// reason as given; sent counts the tokens so far for continuous usage.
func (s *mockStream) delta(role, text string, reasoning bool, finish string, sent int) {
	s.head()
	s.buf = append(s.buf, `,"choices":[{"index":0,`...)
	if s.chat {
		s.buf = append(s.buf, `"delta":{`...)
		sep := ""
		if role != "" {
			s.buf = append(s.buf, `"role":`...)
			s.buf = appendQuote(s.buf, role)
			sep = ","
		}
		if reasoning {
			s.buf = append(s.buf, sep+`"reasoning_content":`...)
		} else {
			s.buf = append(s.buf, sep+`"content":`...)
		}
		s.buf = appendQuote(s.buf, text)
		s.buf = append(s.buf, `},"logprobs":null,"finish_reason":`...)
	} else {
		s.buf = append(s.buf, `"text":`...)
		s.buf = appendQuote(s.buf, text)
		s.buf = append(s.buf, `,"logprobs":null,"finish_reason":`...)
	}
	if finish == "" {
		s.buf = append(s.buf, `null,"stop_reason":null}]`...)
	} else {
		s.buf = appendQuote(s.buf, finish)
		s.buf = append(s.buf, `,"stop_reason":null}]`...)
	}
	if s.continuous {
		s.buf = append(s.buf, ',')
		s.appendUsage(sent)
	}
	s.buf = append(s.buf, "}\n\n"...)
}

// flush writes the buffered events and flushes them to the client.
func (s *mockStream) flush(f http.Flusher) error {
	_, err := s.w.Write(s.buf)
	s.buf = s.buf[:0]
	if err != nil {
		return err
	}
	f.Flush()
	return nil
}

func (s *mockStream) stream(ctx context.Context) (int, error) {
	f, ok := s.w.(http.Flusher)
	if !ok {
		writeError(s.w, http.StatusInternalServerError, "the server cannot stream")
		return 0, fmt.Errorf("response writer cannot flush")
	}
	h := s.w.Header()
	h.Set("Content-Type", "text/event-stream; charset=utf-8")
	h.Set("Cache-Control", "no-cache")
	s.w.WriteHeader(http.StatusOK)
	if err := s.flush(f); err != nil {
		return 0, err
	}
	n, tokens, finish := s.chunks()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	sent := 0
	for i, c := range s.seg[:n] {
		if err := pipeline.SleepUntil(ctx, timer, s.start.Add(max(0, c.At-s.shift))); err != nil {
			return i, err
		}
		if i == 0 && s.chat {
			s.delta("assistant", "", false, "", 0)
		}
		sent += c.TokenCount()
		s.delta("", s.text(c), c.Reasoning, "", sent)
		if err := s.flush(f); err != nil {
			return i, err
		}
		if s.m.OnSend != nil {
			s.m.OnSend(s.turn.ID, s.first+i, time.Since(s.start))
		}
	}
	switch {
	case s.turn.Status == pipeline.StatusError && s.ends(n):
		msg := s.turn.Error
		if msg == "" {
			msg = "the recorded turn ended in an error"
		}
		s.buf = append(s.buf, `data: {"error":{"object":"error","message":`...)
		s.buf = append(s.buf, quote(msg)...)
		s.buf = append(s.buf, `,"type":"InternalServerError","param":null,"code":500}}`+"\n\n"...)
	case (s.turn.Status == pipeline.StatusCancelled || s.turn.Status == pipeline.StatusIncomplete) && s.ends(n):
		// the recording stopped here: so does the stream, without an end
		panic(http.ErrAbortHandler)
	default:
		if s.chat && n == 0 {
			s.delta("assistant", "", false, "", 0)
		}
		if finish == "tool_calls" {
			// the stream stops for the tool call at its recorded time
			if err := pipeline.SleepUntil(ctx, timer, s.start.Add(max(0, s.tool.At-s.shift))); err != nil {
				return n, err
			}
			s.toolDelta()
		}
		s.delta("", "", false, finish, tokens)
		if s.usage {
			s.head()
			s.buf = append(s.buf, `,"choices":[],`...)
			s.appendUsage(tokens)
			s.buf = append(s.buf, "}\n\n"...)
		}
	}
	s.buf = append(s.buf, "data: [DONE]\n\n"...)
	return n, s.flush(f)
}

// whole answers a request without "stream": true, once the turn's last
// chunk would have arrived.
func (s *mockStream) whole(ctx context.Context) (int, error) {
	n, tokens, finish := s.chunks()
	if n > 0 {
		timer := time.NewTimer(time.Hour)
		defer timer.Stop()
		if err := pipeline.SleepUntil(ctx, timer, s.start.Add(s.turn.Chunks[n-1].At)); err != nil {
			return 0, err
		}
	}
	if s.turn.Status == pipeline.StatusError && n == len(s.turn.Chunks) {
		msg := s.turn.Error
		if msg == "" {
			msg = "the recorded turn ended in an error"
		}
		writeError(s.w, http.StatusInternalServerError, msg)
		return n, nil
	}
	var text, reasoning strings.Builder
	for _, c := range s.turn.Chunks[:n] {
		if c.Reasoning {
			reasoning.WriteString(s.text(c))
		} else {
			text.WriteString(s.text(c))
		}
	}
	s.buf = append(s.buf[:0], `{"id":"`...)
	if s.chat {
		s.buf = append(s.buf, `chatcmpl-mock-`+s.id+`","object":"chat.completion"`...)
	} else {
		s.buf = append(s.buf, `cmpl-mock-`+s.id+`","object":"text_completion"`...)
	}
	s.buf = append(s.buf, `,"created":`...)
	s.buf = strconv.AppendInt(s.buf, s.created, 10)
	s.buf = append(s.buf, `,"model":`...)
	s.buf = append(s.buf, s.modelJSON...)
	s.buf = append(s.buf, `,"choices":[{"index":0,`...)
	if s.chat {
		s.buf = append(s.buf, `"message":{"role":"assistant","content":`+quote(text.String())...)
		if reasoning.Len() > 0 {
			s.buf = append(s.buf, `,"reasoning_content":`+quote(reasoning.String())...)
		}
		s.buf = append(s.buf, '}')
	} else {
		s.buf = append(s.buf, `"text":`+quote(text.String())...)
	}
	s.buf = append(s.buf, `,"logprobs":null,"finish_reason":`+quote(finish)+`}],`...)
	s.appendUsage(tokens)
	s.buf = append(s.buf, "}\n"...)
	s.w.Header().Set("Content-Type", "application/json")
	_, err := s.w.Write(s.buf)
	return n, err
}
