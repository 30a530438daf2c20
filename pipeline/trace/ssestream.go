package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// MaxErrorBody is how much of a response that is not an event stream (an
// HTTP error, a JSON answer) a Stream keeps for its error text.
const MaxErrorBody = 64 << 10

// StreamStats counts everything a stream carried besides its chunks, so
// that nothing the server sent goes unrecorded.
type StreamStats struct {
	// HTTPStatus and ContentType are the response's; Headers is when its
	// headers arrived.
	HTTPStatus  int
	ContentType string
	Headers     time.Duration
	// Bytes is the size of the response body read.
	Bytes int64
	// Events counts dispatched data events; Comments counts comment lines
	// (keep-alives); Dropped counts events without data.
	Events, Comments, Dropped int
	// RoleOnly counts chunks with a role and no text; Empty counts chunks
	// of choice 0 with neither text nor role (finish chunks, keep-alive
	// chunks); ToolCalls counts chunks carrying tool calls; NoChoice counts
	// chunks without a choice 0 (usage chunks among them); OtherChoices
	// counts deltas of other choices, which are not recorded.
	RoleOnly, Empty, ToolCalls, NoChoice, OtherChoices int
	// UsageChunks counts chunks that carried usage; Usage is the last.
	UsageChunks int
	Usage       *Usage
	// FinishReason is the first choice's finish reason, if one came.
	FinishReason string
	// Done is true when "[DONE]" arrived, at DoneAt; AfterDone counts
	// events after it.
	Done      bool
	DoneAt    time.Duration
	AfterDone int
	// BadEvents counts events whose data was not a JSON chunk.
	BadEvents int
	// Closed is when the body ended.
	Closed time.Duration
}

// Stream assembles one streamed response into a pipeline.Turn: give it
// the response (Response), every read of the body (Read) and the end
// (Close). Content deltas become chunks, reasoning deltas become reasoning
// chunks; everything else is counted in Stats. The same Stream parses a
// live response and a recorded capture, so both give the same turn.
type Stream struct {
	// Turn is the turn recorded so far; its Status and Error are set by
	// Close.
	Turn pipeline.Turn
	// Stats counts what the stream carried.
	Stats StreamStats
	// OnChunk, when set, is called with each chunk as it is recorded.
	OnChunk func(pipeline.Chunk)
	// ToolCalls are the tool calls the stream carried, in order: each
	// call's id and name, and when its first delta arrived.
	ToolCalls []StreamToolCall
	// Secrets are the credentials the request carried (an API key): a
	// server that echoes one in an error (a 401 body) has it replaced by
	// "[redacted]" in the turn's error, which is logged and recorded.
	Secrets []string

	parser    SSEParser
	budget    TurnBudget // what the turn took in, against the limits
	refused   error      // the limit the stream passed: nothing more is recorded
	sse       bool
	body      []byte // the body of a response that is not an event stream
	errs      []string
	lastUsage int
	lastRead  time.Duration
	closed    bool
	emitFn    func(*SSEEvent) error
}

// StreamToolCall is a tool call an answer streamed (OpenAI's
// choices[0].delta.tool_calls): its id and function name, and the arrival
// of the delta that named it.
type StreamToolCall struct {
	ID, Name string
	At       time.Duration
}

// NewStream returns a Stream for turn id of session (may be ""), whose
// request was sent at start.
func NewStream(id, session string, start time.Time) *Stream {
	s := &Stream{Turn: pipeline.Turn{ID: id, Session: session, Start: start, Status: pipeline.StatusIncomplete}}
	s.emitFn = s.event
	return s
}

// Response records the response status line and content type, which
// arrived at at.
func (s *Stream) Response(status int, contentType string, at time.Duration) {
	s.Stats.HTTPStatus, s.Stats.ContentType, s.Stats.Headers = status, contentType, at
	mt, _, _ := strings.Cut(contentType, ";")
	s.sse = status >= 200 && status < 300 && strings.EqualFold(strings.TrimSpace(mt), "text/event-stream")
	if status >= 200 && status < 300 && !s.sse {
		s.errs = append(s.errs, fmt.Sprintf("response is not an event stream (Content-Type %q); was \"stream\": true sent?", contentType))
	}
}

// Read records the bytes of one read of the body, which returned at at.
func (s *Stream) Read(b []byte, at time.Duration) error {
	if s.closed {
		return fmt.Errorf("turn %q: read after the stream was closed", s.Turn.ID)
	}
	s.Stats.Bytes += int64(len(b))
	s.lastRead = max(s.lastRead, at)
	if !s.sse {
		if room := MaxErrorBody - len(s.body); room > 0 && s.refused == nil {
			s.body = append(s.body, b[:min(len(b), room)]...)
		}
		return nil
	}
	err := s.parser.Feed(b, at, s.emitFn)
	if err != nil {
		s.errs = append(s.errs, err.Error())
		s.sse = false // no more parsing: the rest is counted as bytes
	}
	return err
}

// Close ends the stream at at. err is the error that ended the read, if
// any (io.EOF is not an error); cancelled says the client gave up (the
// context was cancelled), which makes the turn cancelled. Close sets the
// turn's Status and Error from everything the stream carried.
func (s *Stream) Close(at time.Duration, err error, cancelled bool) {
	if s.closed {
		return
	}
	s.closed = true
	s.Stats.Closed = at
	if s.sse {
		if perr := s.parser.Close(at, s.emitFn); perr != nil && !s.Stats.Done {
			s.errs = append(s.errs, perr.Error())
		}
	}
	s.Stats.Dropped = s.parser.Dropped
	if s.Stats.Usage != nil {
		if err := CheckOutputTokens(s.Stats.Usage.CompletionTokens); err != nil {
			s.refuse(fmt.Errorf("usage: %w", err))
		} else {
			s.Turn.OutputTokens = s.Stats.Usage.CompletionTokens
		}
	}
	switch {
	case s.Stats.HTTPStatus != 0 && (s.Stats.HTTPStatus < 200 || s.Stats.HTTPStatus >= 300):
		s.errs = append([]string{HTTPErrorText(s.Stats.HTTPStatus, s.body, s.Secrets...)}, s.errs...)
	case s.Stats.HTTPStatus == 0 && err == nil && !cancelled:
		s.errs = append(s.errs, "no response")
	}
	if err != nil && !cancelled {
		s.errs = append(s.errs, err.Error())
	}
	switch {
	case cancelled:
		s.Turn.Status, s.Turn.Error = pipeline.StatusCancelled, "cancelled"
		if err != nil && !errors.Is(err, ErrCancelled) {
			s.Turn.Error = CutText(Redact("cancelled: "+err.Error(), s.Secrets...), MaxErrorText)
		}
	case len(s.errs) > 0:
		s.Turn.Status, s.Turn.Error = pipeline.StatusError, CutText(Redact(strings.Join(s.errs, "; "), s.Secrets...), MaxErrorText)
	case !s.Stats.Done && s.Stats.FinishReason == "":
		s.Turn.Status, s.Turn.Error = pipeline.StatusError, "stream ended before [DONE] or a finish reason"
	default:
		s.Turn.Status = pipeline.StatusOK
	}
}

// ErrCancelled is the error a cancelled read reports when nothing more
// specific is known.
var ErrCancelled = errors.New("cancelled")

// HTTPErrorText words an HTTP error response, with the message of an OpenAI
// error body when there is one, every secret (the request's credentials)
// in it redacted, before any cut could leave part of one.
func HTTPErrorText(status int, body []byte, secrets ...string) string {
	body = redactBytes(body, secrets)
	msg := ""
	if d, err := ParseDelta(body); err == nil && d.Error != "" {
		msg = d.Error
	} else if t := strings.TrimSpace(string(body)); t != "" {
		if len(t) > 300 {
			t = t[:300] + "..."
		}
		msg = t
	}
	if msg == "" {
		return fmt.Sprintf("HTTP %d", status)
	}
	return fmt.Sprintf("HTTP %d: %s", status, Redact(msg, secrets...)) // a message may spell one with JSON escapes
}

var doneData = []byte("[DONE]")

func (s *Stream) event(e *SSEEvent) error {
	if e.Comment {
		s.Stats.Comments++
		return nil
	}
	s.Stats.Events++
	if s.Stats.Done {
		s.Stats.AfterDone++
		return nil
	}
	data := bytes.TrimSpace(e.Data)
	if bytes.Equal(data, doneData) {
		s.Stats.Done, s.Stats.DoneAt = true, e.At
		return nil
	}
	d, err := decodeDelta(data)
	if err != nil && e.Type == "error" {
		s.errs = append(s.errs, "error in stream: "+string(data))
		return nil
	}
	if err != nil {
		s.Stats.BadEvents++
		if s.Stats.BadEvents == 1 {
			s.errs = append(s.errs, fmt.Sprintf("event %d at %v: %v", s.Stats.Events, e.At, err))
		}
		return nil
	}
	if d.Error == "" && e.Type == "error" {
		d.Error = strings.TrimSpace(string(data))
	}
	if d.Error != "" {
		s.errs = append(s.errs, "error in stream: "+d.Error)
	}
	tokens := 0
	if d.Usage != nil {
		s.Stats.UsageChunks++
		u := *d.Usage
		if d.HasChoice && u.CompletionTokens > s.lastUsage && s.lastUsage >= 0 {
			// usage in every chunk: the growth is this chunk's tokens
			tokens = u.CompletionTokens - s.lastUsage
		}
		s.lastUsage = u.CompletionTokens
		s.Stats.Usage = &u
	}
	s.Stats.OtherChoices += d.OtherChoices
	if !d.HasChoice {
		s.Stats.NoChoice++
		return nil
	}
	if d.FinishReason != "" && s.Stats.FinishReason == "" {
		s.Stats.FinishReason = d.FinishReason
	}
	if d.ToolCalls {
		s.Stats.ToolCalls++
		s.toolCalls(data, e.At)
	}
	switch {
	case d.Reasoning == "" && d.Content == "" && d.Role != "":
		s.Stats.RoleOnly++
		return nil
	case d.Reasoning == "" && d.Content == "":
		s.Stats.Empty++
		return nil
	}
	if d.Reasoning != "" {
		c := pipeline.Chunk{At: e.At, Text: d.Reasoning, Reasoning: true}
		if d.Content == "" {
			c.Tokens = tokens
		}
		s.add(c)
	}
	if d.Content != "" {
		s.add(pipeline.Chunk{At: e.At, Text: d.Content, Tokens: tokens})
	}
	return nil
}

// toolCalls notes the tool calls a delta names (a call's first delta
// has its id; the others carry its arguments). A chunk with tool calls is
// rare: it is decoded again, whole.
func (s *Stream) toolCalls(data []byte, at time.Duration) {
	var ev struct {
		Choices []struct {
			Delta struct {
				ToolCalls []struct {
					ID       string `json:"id"`
					Function struct {
						Name string `json:"name"`
					} `json:"function"`
				} `json:"tool_calls"`
			} `json:"delta"`
		} `json:"choices"`
	}
	if json.Unmarshal(data, &ev) != nil || len(ev.Choices) == 0 {
		return
	}
	for _, tc := range ev.Choices[0].Delta.ToolCalls {
		if tc.ID != "" && len(s.ToolCalls) < maxStreamToolCalls {
			s.ToolCalls = append(s.ToolCalls, StreamToolCall{ID: CutText(tc.ID, MaxName), Name: CutText(tc.Function.Name, MaxName), At: at})
		}
	}
}

// maxStreamToolCalls bounds the tool calls a Stream keeps.
const maxStreamToolCalls = 64

// Refused returns why the stream passed the limits (the chunk that would
// have taken the turn past them, a usage count out of range), or nil. A
// refused stream records nothing more and ends as an error: a client may
// stop reading it.
func (s *Stream) Refused() error { return s.refused }

// refuse ends the recording of the stream at a limit: the reason goes in
// the turn's error, and the rest of the body is counted, not parsed.
func (s *Stream) refuse(err error) {
	if s.refused != nil {
		return
	}
	s.refused = err
	s.errs = append(s.errs, "refused at the limits: "+err.Error())
	s.sse = false
}

func (s *Stream) add(c pipeline.Chunk) {
	if s.refused != nil {
		return
	}
	if err := s.budget.Admit(c); err != nil {
		s.refuse(err)
		return
	}
	s.Turn.Chunks = append(s.Turn.Chunks, c)
	if s.OnChunk != nil {
		s.OnChunk(c)
	}
}
