package openai

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"log"
	"net/http"
	"net/http/httputil"
	"net/url"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// DefaultSessionHeader is the request header a Proxy takes a turn's
// session from.
const DefaultSessionHeader = "X-Session-Id"

// Proxy is a transparent reverse proxy in front of an OpenAI-compatible
// server. Every request and response passes through unchanged, byte for
// byte, each response write flushed at once; streaming requests to
// /v1/chat/completions and /v1/completions ("stream": true) are also
// watched as they pass: each becomes a turn, timed from the moment the
// request reached the proxy, its chunks fed to Guard as they are
// forwarded, and recorded to Trace and Capture. Everything else (other
// routes, requests without "stream": true) is forwarded untouched and not
// recorded. Request headers, Authorization among them, are never logged or
// recorded, and a server that echoes a request's credential (a 401 body
// quoting the API key) has it redacted from what is logged and recorded.
//
// Set the fields before serving; a Proxy is safe for concurrent use.
type Proxy struct {
	// Guard, when set, watches each stream in wall-clock time. The Proxy
	// calls Begin, Chunk (with the measured arrival) and End.
	Guard *pipeline.Guard
	// Trace and Capture, when set, record each stream (as Client does).
	Trace   TraceWriter
	Capture *trace.CaptureWriter
	// Logger receives one "proxy_stream" event per stream, one
	// "proxy_error" event per failed upstream request, and one
	// "record_error" event the moment a stream first fails to be recorded.
	Logger zerolog.Logger
	// SessionHeader names the request header holding the session
	// (DefaultSessionHeader when empty).
	SessionHeader string
	// OnStream, when set, is called with each stream once it has ended.
	// Calls may be concurrent.
	OnStream func(s *trace.Stream)
	// OnTurn, when set, is called with each turn once it has ended: a
	// stream's, or, for a tool-calling exchange, the streams joined (see
	// ToolWait). Calls may be concurrent.
	OnTurn func(t *pipeline.Turn)
	// ToolWait is how long a stream that ended in tool calls waits for
	// the request that carries their results (its last message a "tool"
	// message naming one of the calls) before its turn ends
	// (DefaultToolWait when 0). That request's stream goes on with the
	// same turn: the Guard and Trace see one turn, stopped for a tool call
	// between the two streams, as a voice app's listener hears it.
	ToolWait time.Duration

	upstream *url.URL
	rp       *httputil.ReverseProxy
	seq      atomic.Uint64
	failed   atomic.Bool // a stream failed to be recorded or guarded
	mu       sync.Mutex
	waiting  map[string]*toolTurn // tool call id -> the turn waiting for its result
}

// DefaultToolWait is how long a turn stopped for tool calls waits for
// their results.
const DefaultToolWait = 2 * time.Minute

// toolTurn is a turn whose stream ended in tool calls, waiting for the
// request with their results.
type toolTurn struct {
	turn    pipeline.Turn // as it streamed so far (times since its first request)
	ids     []string      // its tool calls' ids
	guarded bool
	timer   *time.Timer
}

var _ http.Handler = (*Proxy)(nil)

// NewProxy returns a Proxy forwarding to the server at upstream (its root:
// "http://127.0.0.1:8000"; a path prefix is kept in front of each request's
// path) through transport (nil: a transport like NewHTTPClient's, less
// the receive stamps: the proxy times a chunk when it passes it on).
func NewProxy(upstream string, transport http.RoundTripper) (*Proxy, error) {
	u, err := url.Parse(upstream)
	if err != nil {
		return nil, fmt.Errorf("%w: upstream %q: %w", ErrRequest, upstream, err)
	}
	if (u.Scheme != "http" && u.Scheme != "https") || u.Host == "" {
		return nil, fmt.Errorf("%w: upstream %q: want http://host:port or https://host", ErrRequest, upstream)
	}
	u.Path = strings.TrimSuffix(u.Path, "/")
	u.Path = strings.TrimSuffix(u.Path, "/v1")
	if transport == nil {
		transport = newTransport(false)
	}
	p := &Proxy{upstream: u}
	p.rp = &httputil.ReverseProxy{
		Rewrite: func(pr *httputil.ProxyRequest) {
			pr.SetURL(u)
			pr.Out.Host = u.Host
			if pr.Out.GetBody != nil {
				replayable(pr.Out.Header) // as the Client's: an upstream that closed a kept-alive connection
			}
			// Rewrite drops these; a transparent proxy passes them on
			for _, h := range []string{"X-Forwarded-For", "X-Forwarded-Host", "X-Forwarded-Proto"} {
				if v := pr.In.Header.Values(h); len(v) > 0 {
					pr.Out.Header[h] = v
				}
			}
		},
		Transport:      transport,
		FlushInterval:  -1, // every write reaches the client at once
		ModifyResponse: p.modifyResponse,
		ErrorHandler:   p.errorHandler,
		ErrorLog:       log.New(io.Discard, "", 0), // errors are events, never printed
	}
	return p, nil
}

// watchKey finds a request's watched stream in its context.
type watchKey struct{}

// watch is one stream the proxy watches.
type watch struct {
	p         *Proxy
	id        string
	turn      *pipeline.Turn // the turn it streams into: its stream's (s.Turn), or one its request resumes after tool calls
	offset    time.Duration  // its times in the turn's (the turn's first request began this much earlier)
	resumed   bool
	path      string
	model     string
	start     time.Time
	s         *trace.Stream
	capture   *trace.CaptureStream
	begun     bool
	guarded   bool
	readErr   error
	upErr     error
	eof       bool // the upstream's body was read to its end
	mu        sync.Mutex
	errs      []error
	unwatched string // why the response could not be parsed
}

func (w *watch) record(err error) {
	if err == nil {
		return
	}
	w.p.firstFailure(w.id, err)
	w.mu.Lock()
	defer w.mu.Unlock()
	if len(w.errs) < 4 {
		w.errs = append(w.errs, err)
	}
}

// requestSecrets returns the credentials a request carries: the token of
// its Authorization header (a bearer token, or the whole value) and the
// values of the API-key headers other APIs use. A server's echo of one is
// redacted from what the proxy logs and records.
func requestSecrets(h http.Header) []string {
	var out []string
	if v := h.Get("Authorization"); v != "" {
		if _, tok, ok := strings.Cut(v, " "); ok {
			out = append(out, strings.TrimSpace(tok))
		}
		out = append(out, v)
	}
	for _, k := range []string{"Api-Key", "X-Api-Key"} {
		if v := h.Get(k); v != "" {
			out = append(out, v)
		}
	}
	return out
}

// firstFailure logs the proxy's first failure to record or guard a
// stream at once, as a "record_error" event naming the stream: a recording
// to a full disk is said the moment it fails, not when the stream ends
// (each stream's "proxy_stream" event lists its own). The bytes go on
// being forwarded.
func (p *Proxy) firstFailure(stream string, err error) {
	if p.failed.CompareAndSwap(false, true) {
		p.Logger.Error().Str("event", "record_error").Str("turn", stream).Str("error", err.Error()).
			Msg("record_error: the streams are still forwarded")
	}
}

// ServeHTTP forwards one request.
func (p *Proxy) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	op := trace.PathOperation(r.URL.Path)
	if r.Method != http.MethodPost || op == "" {
		p.rp.ServeHTTP(w, r)
		return
	}
	start := time.Now()
	head, err := io.ReadAll(io.LimitReader(r.Body, maxRequestBody))
	if err != nil {
		writeError(w, http.StatusBadRequest, "reading the request: "+err.Error())
		return
	}
	body := io.Reader(bytes.NewReader(head))
	if len(head) == maxRequestBody {
		body = io.MultiReader(body, r.Body) // too big to look at: forwarded as it is
	}
	r2 := r.Clone(r.Context())
	r2.Body = io.NopCloser(body)
	if len(head) < maxRequestBody { // read whole: it can be sent again
		r2.GetBody = func() (io.ReadCloser, error) { return io.NopCloser(bytes.NewReader(head)), nil }
	}
	var req struct {
		Stream   bool      `json:"stream"`
		Model    string    `json:"model"`
		Messages []Message `json:"messages"`
	}
	if len(head) == maxRequestBody || json.Unmarshal(head, &req) != nil || !req.Stream {
		p.rp.ServeHTTP(w, r2)
		return
	}
	hdr := p.SessionHeader
	if hdr == "" {
		hdr = DefaultSessionHeader
	}
	session := trace.CutText(r.Header.Get(hdr), trace.MaxName) // a name, not a payload
	wt := &watch{p: p, id: "p" + strconv.FormatUint(p.seq.Add(1), 10), path: r.URL.Path, model: req.Model, start: start}
	wt.s = trace.NewStream(wt.id, session, start)
	wt.s.Secrets = requestSecrets(r.Header)
	wt.s.Turn.Model = trace.CutText(req.Model, trace.MaxName) // a name, not a payload
	wt.s.Turn.Operation = op
	wt.turn = &wt.s.Turn
	if w := p.claim(req.Messages); w != nil {
		p.resume(wt, w)
	} else if p.Guard != nil {
		if err := p.Guard.Begin(wt.id, session); err == nil {
			wt.guarded = true
		} else {
			wt.record(err)
		}
	}
	wt.s.OnChunk = func(c pipeline.Chunk) {
		if wt.resumed { // the stream's chunks go on with the turn it resumes
			c.At += wt.offset
			wt.turn.Chunks = append(wt.turn.Chunks, c)
		}
		if wt.guarded {
			wt.record(p.Guard.Chunk(wt.turn.ID, c))
		}
		if p.Trace != nil {
			wt.record(p.Trace.WriteChunk(wt.turn.ID, c))
		}
	}
	r2 = r2.WithContext(context.WithValue(r.Context(), watchKey{}, wt))
	// deferred: when the copy fails mid-body, ReverseProxy aborts the
	// response with a panic (http.ErrAbortHandler), which goes on after.
	// A copy that failed with no upstream error failed on the client's side.
	defer func() {
		v := recover()
		p.finish(wt, clientLeft(r.Context(), wt, v != nil))
		if v != nil {
			panic(v)
		}
	}()
	p.rp.ServeHTTP(w, r2)
}

// clientLeft reports whether the client of wt's request went away before
// it had the whole response; aborted is whether ReverseProxy aborted the
// copy. A response whose body was read to its end and copied without
// abort has reached the client whole, whatever ctx says: the server
// cancels a request's context when its client closes the connection,
// which a client that has read the whole response (its Content-Length)
// may do before the handler returns.
func clientLeft(ctx context.Context, wt *watch, aborted bool) bool {
	if wt.eof && !aborted {
		return false
	}
	return ctx.Err() != nil || (aborted && wt.readErr == nil && wt.upErr == nil)
}

// modifyResponse taps the body of a watched stream.
func (p *Proxy) modifyResponse(resp *http.Response) error {
	wt, ok := resp.Request.Context().Value(watchKey{}).(*watch)
	if !ok {
		return nil
	}
	at := time.Since(wt.start)
	wt.begin()
	ctype := resp.Header.Get("Content-Type")
	if enc := resp.Header.Get("Content-Encoding"); enc != "" && !strings.EqualFold(enc, "identity") {
		wt.unwatched = "response is compressed (Content-Encoding " + enc + "): forwarded, not parsed"
		resp.Body = &tapBody{rc: resp.Body, wt: wt} // to see its end
		return nil
	}
	wt.s.Response(resp.StatusCode, ctype, at)
	if wt.capture != nil {
		wt.record(wt.capture.Response(resp.StatusCode, ctype, at))
	}
	resp.Body = &tapBody{rc: resp.Body, wt: wt}
	return nil
}

// errorHandler answers a request the upstream failed, as an OpenAI error.
func (p *Proxy) errorHandler(w http.ResponseWriter, r *http.Request, err error) {
	if wt, ok := r.Context().Value(watchKey{}).(*watch); ok {
		wt.upErr = err
	}
	if r.Context().Err() != nil {
		return // the client left: there is no one to answer
	}
	p.Logger.Warn().Str("event", "proxy_error").Str("method", r.Method).Str("path", r.URL.Path).
		Str("error", err.Error()).Msg("proxy_error")
	writeError(w, http.StatusBadGateway, "upstream: "+err.Error())
}

// tapBody hands the proxy each read of a watched response body, and
// parses it only on the next read, once the bytes have been forwarded and
// flushed to the client: watching adds no delay to the bytes. Of a body
// the proxy cannot parse (wt.unwatched) it sees only the end.
type tapBody struct {
	rc      io.ReadCloser
	wt      *watch
	pending []byte
	at      time.Duration
}

func (b *tapBody) process() {
	if len(b.pending) == 0 {
		return
	}
	if b.wt.capture != nil {
		b.wt.record(b.wt.capture.Read(b.pending, b.at))
	}
	_ = b.wt.s.Read(b.pending, b.at) // a parse error is recorded in the turn
	b.pending = b.pending[:0]
}

// Read parses the previous read, then reads from the upstream and times
// what it got.
func (b *tapBody) Read(p []byte) (int, error) {
	b.process()
	n, err := b.rc.Read(p)
	at := time.Since(b.wt.start)
	if n > 0 && b.wt.unwatched == "" {
		b.pending = append(b.pending, p[:n]...)
		b.at = at
	}
	switch {
	case err == io.EOF:
		b.wt.eof = true
	case err != nil:
		b.wt.readErr = err
	}
	return n, err
}

// Close parses the last read and closes the upstream body.
func (b *tapBody) Close() error {
	b.process()
	return b.rc.Close()
}

// begin writes the stream's first records, once the request has gone on
// (writing them first would delay it).
func (wt *watch) begin() {
	if wt.begun {
		return
	}
	wt.begun = true
	if wt.p.Trace != nil && !wt.resumed {
		wt.record(wt.p.Trace.BeginTurn(wt.turn))
	}
	if wt.p.Capture != nil {
		var err error
		r := trace.CaptureRequest{Stream: wt.id, Session: wt.s.Turn.Session, Start: wt.start, Method: http.MethodPost, Path: wt.path, Model: wt.model,
			Secrets: wt.s.Secrets}
		if wt.resumed {
			r.Resumes, r.ResumeAt = wt.turn.ID, wt.offset
		}
		wt.capture, err = wt.p.Capture.Begin(r)
		wt.record(err)
	}
}

// claim returns the turn waiting for the tool results a request carries
// (its last message a "tool" message with the id of a waiting call), no
// longer waiting; nil if there is none.
func (p *Proxy) claim(msgs []Message) *toolTurn {
	n := len(msgs)
	if n == 0 || msgs[n-1].Role != "tool" || msgs[n-1].ToolCallID == "" {
		return nil
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	w := p.waiting[msgs[n-1].ToolCallID]
	if w == nil || !w.timer.Stop() {
		return nil // none, or its wait has just run out
	}
	for _, id := range w.ids {
		delete(p.waiting, id)
	}
	return w
}

// resume makes wt stream into the turn w, whose tool calls have returned
// now: the Guard is told, and the Trace gets the tool record.
func (p *Proxy) resume(wt *watch, w *toolTurn) {
	wt.turn, wt.resumed, wt.guarded = &w.turn, true, w.guarded
	wt.offset = wt.start.Sub(w.turn.Start)
	trace.ResumeAfterTools(&w.turn, wt.offset)
	tc := &w.turn.ToolCalls[len(w.turn.ToolCalls)-1]
	if wt.guarded {
		wt.record(p.Guard.ToolReturned(w.turn.ID, max(wt.offset, tc.At, 1)))
	}
	if tw, ok := p.Trace.(toolWriter); ok {
		wt.record(tw.WriteToolCall(w.turn.ID, *tc))
	}
}

// toolWriter is a TraceWriter that records tool calls.
type toolWriter interface {
	WriteToolCall(turn string, tc pipeline.ToolCall) error
}

// park keeps wt's turn waiting when its stream ended in tool calls (ok,
// the client still there): the Guard is told the stream stopped for the
// first of them, and the turn waits ToolWait for their results.
func (p *Proxy) park(wt *watch) bool {
	t := wt.turn
	if !trace.StopForTools(t, wt.s, wt.offset) {
		return false
	}
	if wt.guarded {
		wt.record(p.Guard.ToolCall(t.ID, t.ToolCalls[len(t.ToolCalls)-1]))
	}
	w := &toolTurn{turn: *t, guarded: wt.guarded}
	for _, c := range wt.s.ToolCalls {
		w.ids = append(w.ids, c.ID)
	}
	wait := p.ToolWait
	if wait <= 0 {
		wait = DefaultToolWait
	}
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.waiting == nil {
		p.waiting = map[string]*toolTurn{}
	}
	for _, id := range w.ids {
		p.waiting[id] = w
	}
	w.timer = time.AfterFunc(wait, func() { p.expire(w) })
	return true
}

// Close ends the turns still waiting for tool results, at once. Call it
// once the proxy has stopped serving.
func (p *Proxy) Close() {
	p.mu.Lock()
	var ended []*toolTurn
	for id, w := range p.waiting {
		delete(p.waiting, id)
		if w.timer.Stop() {
			ended = append(ended, w)
		}
	}
	p.mu.Unlock()
	for _, w := range ended {
		p.endWaiting(w)
	}
}

// expire ends a turn whose tool results never came.
func (p *Proxy) expire(w *toolTurn) {
	p.mu.Lock()
	for _, id := range w.ids {
		if p.waiting[id] == w {
			delete(p.waiting, id)
		}
	}
	p.mu.Unlock()
	p.endWaiting(w)
}

// endWaiting ends a turn whose tool results never came: the Trace keeps
// the call it stopped for, not returned.
func (p *Proxy) endWaiting(w *toolTurn) {
	var err error
	if tw, ok := p.Trace.(toolWriter); ok {
		err = tw.WriteToolCall(w.turn.ID, w.turn.ToolCalls[len(w.turn.ToolCalls)-1])
	}
	p.endTurn(&w.turn, w.guarded, err)
}

// endTurn ends a turn: the Guard's, the Trace's, OnTurn; errs are what
// went wrong recording it before.
func (p *Proxy) endTurn(t *pipeline.Turn, guarded bool, errs ...error) {
	if guarded {
		errs = append(errs, p.Guard.EndTurn(t))
	}
	if p.Trace != nil {
		errs = append(errs, p.Trace.EndTurn(t))
	}
	if err := errors.Join(errs...); err != nil {
		p.firstFailure(t.ID, err)
		p.Logger.Warn().Str("event", "proxy_error").Str("turn", t.ID).Str("error", err.Error()).Msg("proxy_error")
	}
	if p.OnTurn != nil {
		p.OnTurn(t)
	}
}

// finish ends a watched stream.
func (p *Proxy) finish(wt *watch, clientLeft bool) {
	at := time.Since(wt.start)
	wt.begin()
	s := wt.s
	readErr := wt.readErr
	if readErr == nil {
		readErr = wt.upErr
	}
	if wt.unwatched != "" {
		readErr = errors.New(wt.unwatched)
	}
	if wt.capture != nil {
		wt.record(wt.capture.Close(at, readErr, clientLeft))
	}
	s.Close(at, readErr, clientLeft)
	t := wt.turn
	if wt.resumed {
		trace.EndResumed(t, s)
	}
	if !p.park(wt) {
		p.endTurn(t, wt.guarded)
	}
	ev := p.Logger.Info()
	if s.Turn.Status != pipeline.StatusOK {
		ev = p.Logger.Warn().Str("error", s.Turn.Error)
	}
	if err := errors.Join(wt.errs...); err != nil {
		ev = ev.Str("record_error", err.Error())
	}
	if s.Turn.Session != "" {
		ev = ev.Str("session", s.Turn.Session)
	}
	if wt.resumed {
		ev = ev.Str("resumes", wt.turn.ID) // after its tool calls
	}
	ev.Str("event", "proxy_stream").Str("turn", wt.id).Str("path", wt.path).Str("model", wt.model).
		Int("http_status", s.Stats.HTTPStatus).Str("status", string(s.Turn.Status)).
		Int("chunks", len(s.Turn.Chunks)).Int64("bytes", s.Stats.Bytes).
		Float64("duration_ms", pipeline.Millis(at)).Msg("proxy_stream")
	if p.OnStream != nil {
		p.OnStream(s)
	}
}
