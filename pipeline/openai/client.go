package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net"
	"net/http"
	"net/http/httptrace"
	"net/url"
	"slices"
	"strings"
	"sync"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// API names one of the two streaming endpoints.
type API string

// The endpoints a Client can drive.
const (
	// APIChat is /v1/chat/completions: messages in, delta.content out.
	APIChat API = "chat"
	// APICompletions is /v1/completions: a prompt in, text out.
	APICompletions API = "completions"
)

// Path returns the endpoint's path under the server's root.
func (a API) Path() string {
	if a == APICompletions {
		return "/v1/completions"
	}
	return "/v1/chat/completions"
}

// ErrRequest reports a request that cannot be sent as given.
var ErrRequest = errors.New("invalid request")

// Endpoint returns the URL of api on the server at base, which may be the
// server's root ("http://host:8000"), its /v1 ("http://host:8000/v1"), or
// the endpoint itself.
func Endpoint(base string, api API) (string, error) {
	return endpoint(base, api.Path(), "/chat/completions", "/completions")
}

// endpoint returns the URL of the endpoint at path (under /v1) on the
// server at base: its root, its /v1, or, when base's path ends in one of
// whole, the endpoint itself.
func endpoint(base, path string, whole ...string) (string, error) {
	u, err := url.Parse(base)
	if err != nil {
		return "", fmt.Errorf("%w: URL %q: %w", ErrRequest, base, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return "", fmt.Errorf("%w: URL %q: want an http:// or https:// URL", ErrRequest, base)
	}
	if u.Host == "" {
		return "", fmt.Errorf("%w: URL %q has no host", ErrRequest, base)
	}
	p := strings.TrimRight(u.Path, "/")
	switch {
	case slices.ContainsFunc(whole, func(w string) bool { return strings.HasSuffix(p, w) }):
	case strings.HasSuffix(p, "/v1"):
		p += strings.TrimPrefix(path, "/v1")
	default:
		p += path
	}
	u.Path = p
	return u.String(), nil
}

// Message is one chat message. ToolCallID names, in a "tool" message,
// the call whose result it carries.
type Message struct {
	Role       string `json:"role"`
	Content    string `json:"content"`
	ToolCallID string `json:"tool_call_id,omitempty"`
}

// Prompt is what a request asks: a plain text (a user message for chat,
// the prompt for completions) or, for chat, whole messages.
type Prompt struct {
	Text     string    `json:"prompt,omitempty"`
	Messages []Message `json:"messages,omitempty"`
}

// Request is one streaming request.
type Request struct {
	// API chooses the endpoint (default APIChat).
	API API
	// Model is the model to ask.
	Model string
	// Prompt is what to ask.
	Prompt Prompt
	// MaxTokens caps the answer (0: the server's default).
	MaxTokens int
	// NoUsage leaves out "stream_options": {"include_usage": true}, for
	// servers that reject it.
	NoUsage bool
	// Header holds extra request headers (a session header, a mock's
	// X-Underrun-Turn). They are sent, never recorded.
	Header http.Header
}

type streamOptions struct {
	IncludeUsage bool `json:"include_usage"`
}

type wireRequest struct {
	Model         string         `json:"model"`
	Messages      []Message      `json:"messages,omitempty"`
	Prompt        *string        `json:"prompt,omitempty"`
	MaxTokens     int            `json:"max_tokens,omitempty"`
	Stream        bool           `json:"stream"`
	StreamOptions *streamOptions `json:"stream_options,omitempty"`
}

// Body returns the JSON body of the request.
func (r Request) Body() ([]byte, error) {
	w := wireRequest{Model: r.Model, MaxTokens: r.MaxTokens, Stream: true}
	if !r.NoUsage {
		w.StreamOptions = &streamOptions{IncludeUsage: true}
	}
	switch r.API {
	case APICompletions:
		if len(r.Prompt.Messages) > 0 {
			return nil, fmt.Errorf("%w: the completions API takes a prompt, not messages", ErrRequest)
		}
		w.Prompt = &r.Prompt.Text
	case APIChat, "":
		w.Messages = r.Prompt.Messages
		if len(w.Messages) == 0 {
			w.Messages = []Message{{Role: "user", Content: r.Prompt.Text}}
		}
	default:
		return nil, fmt.Errorf("%w: API %q; want chat or completions", ErrRequest, r.API)
	}
	if r.MaxTokens < 0 {
		return nil, fmt.Errorf("%w: max tokens %d; want 0 (server default) or more", ErrRequest, r.MaxTokens)
	}
	return json.Marshal(w)
}

// TraceWriter receives a turn as it streams: BeginTurn when its request is
// sent, WriteChunk for each chunk as it arrives, EndTurn when it ends.
// *trace.Writer is one; it must be safe for concurrent use when turns
// stream at once (see SyncTrace).
type TraceWriter interface {
	BeginTurn(t *pipeline.Turn) error
	WriteChunk(turn string, c pipeline.Chunk) error
	EndTurn(t *pipeline.Turn) error
}

// SyncTrace makes w safe for concurrent use by serializing its calls.
func SyncTrace(w TraceWriter) TraceWriter { return &syncTrace{w: w} }

type syncTrace struct {
	mu sync.Mutex
	w  TraceWriter
}

// BeginTurn calls the writer's BeginTurn, alone.
func (s *syncTrace) BeginTurn(t *pipeline.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.BeginTurn(t)
}

// WriteChunk calls the writer's WriteChunk, alone.
func (s *syncTrace) WriteChunk(id string, c pipeline.Chunk) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.WriteChunk(id, c)
}

// WriteToolCall calls the writer's WriteToolCall, alone, where it has
// one (a trace.Writer does).
func (s *syncTrace) WriteToolCall(id string, tc pipeline.ToolCall) error {
	tw, ok := s.w.(toolWriter)
	if !ok {
		return nil
	}
	s.mu.Lock()
	defer s.mu.Unlock()
	return tw.WriteToolCall(id, tc)
}

// EndTurn calls the writer's EndTurn, alone.
func (s *syncTrace) EndTurn(t *pipeline.Turn) error {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.w.EndTurn(t)
}

// Client sends streaming requests to one server and records each answer
// as a turn. Network and server failures are not errors of Stream: they
// are recorded in the turn (status error, with the reason), as a
// benchmark must count them. A Client is safe for concurrent use.
type Client struct {
	// BaseURL is the server (see Endpoint).
	BaseURL string
	// APIKey, when set, is sent as a bearer token. It is never recorded:
	// a server that echoes it in an error has it redacted.
	APIKey string
	// HTTP is the client to send with (nil: one made by NewHTTPClient).
	HTTP *http.Client
	// Trace, when set, records every turn as it streams.
	Trace TraceWriter
	// Capture, when set, records every read of every response body.
	Capture *trace.CaptureWriter
	// IdleTimeout, when positive, ends a stream that sends nothing (not
	// even a keep-alive) for this long, as an error.
	IdleTimeout time.Duration
	// ReadClock times every read by the moment it returned. Otherwise a
	// read of an HTTP/1 response over a connection NewHTTPClient made is
	// timed by the kernel's receive stamp of its newest bytes (package
	// rxstamp), which a busy machine's scheduling does not delay; reads
	// without a stamp (HTTP/2, another client's connections, other
	// systems) keep the read time either way.
	ReadClock bool

	once        sync.Once
	defaultHTTP *http.Client
}

// NewHTTPClient returns an HTTP client fit for many concurrent streams to
// one server: connections kept for reuse, no transparent compression (it
// would change when bytes are seen), no overall timeout (streams are
// bounded by their context), and TCP connections that carry the kernel's
// receive time of what they read (see Client.ReadClock).
func NewHTTPClient() *http.Client {
	return &http.Client{Transport: newTransport(true)}
}

// newTransport returns NewHTTPClient's transport, with kernel receive
// stamps or without.
func newTransport(stamped bool) *http.Transport {
	dial := (&net.Dialer{Timeout: 30 * time.Second, KeepAlive: 30 * time.Second}).DialContext
	if stamped {
		dial = rxstamp.Dialer(dial)
	}
	return &http.Transport{
		Proxy:                 http.ProxyFromEnvironment,
		DialContext:           dial,
		MaxIdleConns:          4096,
		MaxIdleConnsPerHost:   4096,
		IdleConnTimeout:       90 * time.Second,
		DisableCompression:    true,
		ForceAttemptHTTP2:     true,
		TLSHandshakeTimeout:   10 * time.Second,
		ExpectContinueTimeout: time.Second,
	}
}

func (c *Client) httpClient() *http.Client {
	if c.HTTP != nil {
		return c.HTTP
	}
	c.once.Do(func() { c.defaultHTTP = NewHTTPClient() })
	return c.defaultHTTP
}

// replayable lets the HTTP transport send a request again on a new
// connection when the kept-alive one it was written to turns out closed
// before any byte of an answer came back: a server that closes a
// connection once a long stream on it is over (llama.cpp's server, after
// about 5 s) leaves the next request on it to fail with EOF, a request the
// server never read. The header is marked, not sent (a key with no value:
// see net/http.Transport), unless the caller set one.
func replayable(h http.Header) {
	if _, ok := h["Idempotency-Key"]; !ok {
		if _, ok := h["X-Idempotency-Key"]; !ok {
			h["Idempotency-Key"] = nil
		}
	}
}

// readBuf is the size of each read of a response body.
const readBuf = 32 << 10

var bufPool = sync.Pool{New: func() any { b := make([]byte, readBuf); return &b }}

// Stream sends req as turn id of session and records the answer as it
// streams. It returns when the stream ends, the context is cancelled (the
// turn is then cancelled), or IdleTimeout passes. The error is for
// requests that cannot be sent (ErrRequest) and for failures of Trace or
// Capture; what the server did is in the returned Stream.
func (c *Client) Stream(ctx context.Context, id, session string, req Request) (*trace.Stream, error) {
	body, err := req.Body()
	if err != nil {
		return nil, err
	}
	api := req.API
	if api == "" {
		api = APIChat
	}
	endpoint, err := Endpoint(c.BaseURL, api)
	if err != nil {
		return nil, err
	}
	parent := ctx
	ctx, cancel := context.WithCancelCause(ctx)
	defer cancel(nil)
	hreq, err := http.NewRequestWithContext(ctx, http.MethodPost, endpoint, bytes.NewReader(body))
	if err != nil {
		return nil, fmt.Errorf("%w: %w", ErrRequest, err)
	}
	for k, vs := range req.Header {
		for _, v := range vs {
			hreq.Header.Add(k, v)
		}
	}
	hreq.Header.Set("Content-Type", "application/json")
	hreq.Header.Set("Accept", "text/event-stream")
	replayable(hreq.Header)
	if c.APIKey != "" {
		hreq.Header.Set("Authorization", "Bearer "+c.APIKey)
	}

	var idle *time.Timer
	if c.IdleTimeout > 0 {
		idle = time.AfterFunc(c.IdleTimeout, func() {
			cancel(fmt.Errorf("no data from the server for %v", c.IdleTimeout))
		})
		defer idle.Stop()
	}
	hc := c.httpClient()
	var conn net.Conn // the connection the response came on
	if !c.ReadClock {
		hreq = hreq.WithContext(httptrace.WithClientTrace(ctx, &httptrace.ClientTrace{
			GotConn: func(info httptrace.GotConnInfo) { conn = info.Conn },
		}))
	}

	start := time.Now()
	resp, err := hc.Do(hreq)
	if err == nil && resp.ProtoMajor != 1 {
		conn = nil // HTTP/2: one connection's stamps are many streams'
	}
	// arrival is when the bytes just read arrived: the kernel's stamp
	// where there is one, the read's return otherwise
	arrival := func() time.Duration {
		now := time.Since(start)
		if conn != nil {
			if t, ok := rxstamp.Stamp(conn); ok {
				return min(max(t.Sub(start), 0), now)
			}
		}
		return now
	}
	at := arrival()

	// the turn's records are written once the request is out, so that
	// writing them adds nothing to the TTFT
	s := trace.NewStream(id, session, start)
	var secrets []string
	if c.APIKey != "" {
		secrets = []string{c.APIKey}
	}
	s.Secrets = secrets
	s.Turn.Model, s.Turn.Operation = req.Model, trace.PathOperation(api.Path())
	var errs []error
	record := func(err error) {
		if err != nil && len(errs) < 4 {
			errs = append(errs, err)
		}
	}
	if c.Trace != nil {
		record(c.Trace.BeginTurn(&s.Turn))
		s.OnChunk = func(ch pipeline.Chunk) { record(c.Trace.WriteChunk(id, ch)) }
	}
	var capture *trace.CaptureStream
	if c.Capture != nil {
		var cerr error
		capture, cerr = c.Capture.Begin(trace.CaptureRequest{Stream: id, Session: session, Start: start, Method: http.MethodPost, Path: hreq.URL.Path, Model: req.Model,
			Secrets: secrets})
		record(cerr)
	}
	var readErr error
	if err != nil {
		readErr = err
	} else {
		if idle != nil {
			idle.Reset(c.IdleTimeout)
		}
		s.Response(resp.StatusCode, resp.Header.Get("Content-Type"), at)
		if capture != nil {
			record(capture.Response(resp.StatusCode, resp.Header.Get("Content-Type"), at))
		}
		bp := bufPool.Get().(*[]byte)
		buf := *bp
		for {
			n, err := resp.Body.Read(buf)
			at = max(arrival(), at)
			if n > 0 {
				if idle != nil {
					idle.Reset(c.IdleTimeout)
				}
				if capture != nil {
					record(capture.Read(buf[:n], at))
				}
				_ = s.Read(buf[:n], at) // a parse error is recorded in the turn
			}
			if s.Refused() != nil {
				break // past the limits: the turn ends as an error, the rest unread
			}
			if err != nil {
				if err != io.EOF {
					readErr = err
				}
				break
			}
		}
		bufPool.Put(bp)
		resp.Body.Close()
	}
	cancelled := false
	switch {
	case readErr == nil:
	case parent.Err() != nil:
		// the caller gave up (cancelled, or its deadline passed)
		cancelled = true
		readErr = trace.ErrCancelled
		if !errors.Is(parent.Err(), context.Canceled) {
			readErr = parent.Err()
		}
	case context.Cause(ctx) != nil:
		readErr = context.Cause(ctx) // the idle timeout
	}
	if capture != nil {
		record(capture.Close(at, readErr, cancelled))
	}
	s.Close(at, readErr, cancelled)
	if c.Trace != nil {
		record(c.Trace.EndTurn(&s.Turn))
	}
	return s, errors.Join(errs...)
}
