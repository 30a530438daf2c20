package trace

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"
	"unicode/utf8"

	"github.com/speech-pipeline/underrun/pipeline"
)

// The raw SSE capture format's identity, as its header record states it.
const (
	CaptureFormat  = "underrun-sse"
	CaptureVersion = 1
)

// MaxCaptureLine is the longest record line a CaptureReader accepts.
const MaxCaptureLine = 8 << 20

// ErrCapture reports input that is not a valid SSE capture; it is an
// ErrFormat too. Errors wrapping it name the input, the line and what was
// expected.
var ErrCapture = fmt.Errorf("%w (SSE capture)", ErrFormat)

var _ Decoder = (*CaptureReader)(nil)

// A raw SSE capture is JSON Lines: a header, then for each stream (they
// may interleave) a request record, a response record, one read record
// per read of the body with the bytes exactly as they arrived, and a close
// record:
//
//	{"type":"sse_header","format":"underrun-sse","version":1,"source":"capture"}
//	{"type":"request","stream":"t1","start_unix_ns":1764669600000000000,"method":"POST","path":"/v1/chat/completions","model":"m"}
//	{"type":"response","stream":"t1","t_ns":180000000,"status":200,"content_type":"text/event-stream"}
//	{"type":"read","stream":"t1","t_ns":412000000,"data":"data: {...}\n\n"}
//	{"type":"close","stream":"t1","t_ns":990000000}
//
// t_ns counts from the request. A read that is not valid UTF-8 has
// "data_b64" (standard base64) instead of "data". A close record has
// "read_error" when the body ended with an error, and "cancelled": true
// when the client gave up. A request record has "resumes" (a turn id)
// when the request carries the results of the tool calls that turn's
// last stream ended in: its stream goes on with that turn (StopForTools),
// its times "resume_t_ns" later (when the request was sent, in
// nanoseconds since the turn's first request).
// Reading a capture parses the bytes again with the same Stream and joins
// the streams of a tool-calling exchange the same way, so it gives exactly
// the turns the live run recorded.
type captureRecord struct {
	Type        string  `json:"type"`
	Format      string  `json:"format,omitempty"`
	Version     int     `json:"version,omitempty"`
	Source      string  `json:"source,omitempty"`
	Stream      string  `json:"stream,omitempty"`
	Session     string  `json:"session,omitempty"`
	StartUnixNs int64   `json:"start_unix_ns,omitempty"`
	Method      string  `json:"method,omitempty"`
	Path        string  `json:"path,omitempty"`
	Model       string  `json:"model,omitempty"`
	TNs         *int64  `json:"t_ns,omitempty"`
	Status      int     `json:"status,omitempty"`
	ContentType string  `json:"content_type,omitempty"`
	Data        *string `json:"data,omitempty"`
	DataB64     *string `json:"data_b64,omitempty"`
	ReadError   string  `json:"read_error,omitempty"`
	Cancelled   bool    `json:"cancelled,omitempty"`
	Resumes     string  `json:"resumes,omitempty"`
	ResumeTNs   *int64  `json:"resume_t_ns,omitempty"`
}

// CaptureWriter writes a raw SSE capture, one record per line, each
// written with one Write call as it happens. It is safe for concurrent
// use: streams interleave.
type CaptureWriter struct {
	mu     sync.Mutex
	w      io.Writer
	buf    []byte
	source string
	header bool
	err    error
}

// NewCaptureWriter returns a CaptureWriter whose header names source.
func NewCaptureWriter(w io.Writer, source string) *CaptureWriter {
	return &CaptureWriter{w: w, source: source}
}

// write encodes rec and writes it (mu held).
func (w *CaptureWriter) write(rec *captureRecord) error {
	if w.err != nil {
		return w.err
	}
	w.buf = w.buf[:0]
	if !w.header {
		w.header = true
		h, _ := json.Marshal(captureRecord{Type: "sse_header", Format: CaptureFormat, Version: CaptureVersion, Source: w.source})
		w.buf = append(append(w.buf, h...), '\n')
	}
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	w.buf = append(append(w.buf, b...), '\n')
	if _, err := w.w.Write(w.buf); err != nil {
		w.err = fmt.Errorf("writing the SSE capture: %w", err)
	}
	return w.err
}

// CaptureRequest is the request of a captured stream.
type CaptureRequest struct {
	Stream, Session     string
	Start               time.Time // when it was sent
	Method, Path, Model string
	// Resumes, when set, names the turn whose tool results the request
	// carries: its stream goes on with that turn (StopForTools), timed
	// ResumeAt later, when the request was sent in the turn's time.
	Resumes  string
	ResumeAt time.Duration
	// Secrets are the credentials the request carried (an API key): never
	// recorded, they are replaced by "[redacted]" in the bytes of the
	// response (a server that echoes the key in a 401 body), a secret
	// split across reads included: a read that ends with what could begin
	// one has that end recorded with the next read (or at the close).
	Secrets []string
}

// Begin starts the capture of the stream of request r.
func (w *CaptureWriter) Begin(r CaptureRequest) (*CaptureStream, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	rec := captureRecord{Type: "request", Stream: r.Stream, Session: r.Session, StartUnixNs: r.Start.UnixNano(),
		Method: r.Method, Path: r.Path, Model: r.Model, Resumes: r.Resumes}
	if r.Resumes != "" {
		at := int64(r.ResumeAt)
		rec.ResumeTNs = &at
	}
	err := w.write(&rec)
	return &CaptureStream{w: w, id: r.Stream, redact: newRedactor(r.Secrets)}, err
}

// CaptureStream records one stream of a CaptureWriter.
type CaptureStream struct {
	w        *CaptureWriter
	id       string
	redact   *redactor     // nil: no secrets
	lastRead time.Duration // when the last read returned
}

func (s *CaptureStream) put(rec *captureRecord, at time.Duration) error {
	ns := int64(at)
	rec.Stream, rec.TNs = s.id, &ns
	s.w.mu.Lock()
	defer s.w.mu.Unlock()
	return s.w.write(rec)
}

// Response records the response's status and content type, whose headers
// arrived at at.
func (s *CaptureStream) Response(status int, contentType string, at time.Duration) error {
	return s.put(&captureRecord{Type: "response", Status: status, ContentType: contentType}, at)
}

// Read records the bytes of one read of the body, which returned at at.
func (s *CaptureStream) Read(b []byte, at time.Duration) error {
	s.lastRead = at
	if s.redact != nil && len(b) > 0 {
		if b = s.redact.next(b); len(b) == 0 {
			return nil // all of it could begin a secret: it goes with the next read
		}
	}
	return s.read(b, at)
}

// read records b as one read that returned at at.
func (s *CaptureStream) read(b []byte, at time.Duration) error {
	rec := captureRecord{Type: "read"}
	if utf8.Valid(b) {
		d := string(b)
		rec.Data = &d
	} else {
		d := base64.StdEncoding.EncodeToString(b)
		rec.DataB64 = &d
	}
	return s.put(&rec, at)
}

// Close records the end of the body at at: readErr is what ended it (nil
// for the end of the body), cancelled that the client gave up.
func (s *CaptureStream) Close(at time.Duration, readErr error, cancelled bool) error {
	if s.redact != nil {
		if rest := s.redact.rest(); len(rest) > 0 {
			if err := s.read(rest, s.lastRead); err != nil {
				return err
			}
		}
	}
	rec := captureRecord{Type: "close", Cancelled: cancelled}
	if readErr != nil && !errors.Is(readErr, ErrCancelled) {
		rec.ReadError = readErr.Error()
	}
	return s.put(&rec, at)
}

// SniffCapture reports whether the start of an input is a raw SSE capture.
func SniffCapture(head []byte) bool {
	line, _, _ := bytes.Cut(bytes.TrimLeft(head, " \t\r\n"), []byte("\n"))
	return len(line) > 0 && line[0] == '{' &&
		(bytes.Contains(line, []byte(`"type":"sse_header"`)) || bytes.Contains(line, []byte(`"type": "sse_header"`)))
}

// CaptureReader reads a raw SSE capture and yields its streams as turns,
// each parsed again from its recorded bytes and arrival times. A stream is
// returned when its close record arrives; streams still open at the end of
// the input are returned then, in the order they began, with status
// incomplete. A truncated last line is tolerated (Truncated); any other
// bad line is an error naming the input and the line.
type CaptureReader struct {
	name    string
	lines   jsonLines
	streams units[*Stream]
	// waiting holds the turns whose last stream ended in tool calls, by
	// id, until a stream resumes them or the input ends (waitOrder);
	// resumes maps a stream to the turn it resumes.
	waiting   map[string]*pipeline.Turn
	waitOrder []string
	resumes   map[string]resumed
	done      bool
	sawRecord bool
	// Truncated is true when a cut-off last line was dropped.
	Truncated bool
	keys      scanner // walks a record's keys, for unknownFields
	unknownFields
}

// NewCaptureReader returns a reader of r; name labels errors.
func NewCaptureReader(r io.Reader, name string) *CaptureReader {
	return &CaptureReader{name: name, lines: newJSONLines(r, MaxCaptureLine), streams: newUnits[*Stream](),
		waiting: map[string]*pipeline.Turn{}, resumes: map[string]resumed{}}
}

// resumed is the turn a stream resumes, and when its request was sent in
// the turn's time.
type resumed struct {
	turn *pipeline.Turn
	at   time.Duration
}

func (d *CaptureReader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrCapture, d.name, d.lines.line, fmt.Sprintf(format, args...))
}

// Next returns the next turn, or io.EOF after the last: a stream's, or
// the streams of a tool-calling exchange joined, returned when the last
// of them ends. A turn whose last stream ended in tool calls that no
// stream resumed is returned at the end of the input, its call not
// returned (Duration 0).
func (d *CaptureReader) Next() (*pipeline.Turn, error) {
	for {
		s, err := d.NextStream()
		if err == io.EOF && len(d.waitOrder) > 0 {
			id := d.waitOrder[0]
			d.waitOrder = d.waitOrder[1:]
			if t, ok := d.waiting[id]; ok {
				delete(d.waiting, id)
				return t, nil
			}
			continue
		}
		if err != nil {
			return nil, err
		}
		t, offset := &s.Turn, time.Duration(0)
		if r, ok := d.resumes[s.Turn.ID]; ok {
			delete(d.resumes, s.Turn.ID)
			t, offset = r.turn, r.at
			ResumeAfterTools(t, offset)
			for _, c := range s.Turn.Chunks {
				c.At += offset
				t.Chunks = append(t.Chunks, c)
			}
			EndResumed(t, s)
			if err := checkLimits(t); err != nil {
				return nil, d.errorf("turn %q: %v", t.ID, err)
			}
		}
		if !StopForTools(t, s, offset) {
			return t, nil
		}
		d.waiting[t.ID] = t
		d.waitOrder = append(d.waitOrder, t.ID)
	}
}

// NextStream returns the next stream, with its Stats, or io.EOF. The
// streams of a tool-calling exchange come one by one, each timed from its
// own request (Next joins them).
func (d *CaptureReader) NextStream() (*Stream, error) {
	for !d.done {
		line, last, err := d.lines.record(d.name, ErrCapture)
		if err == io.EOF {
			d.done = true
			continue
		}
		if err != nil {
			return nil, err
		}
		if last {
			d.done = true
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			continue
		}
		s, err := d.record(line)
		if err != nil {
			// a crash while a record was written leaves its line cut
			// off; a file whose only line is not a record is no capture
			if last && d.sawRecord && errors.Is(err, errCaptureSyntax) {
				d.Truncated = true
				break
			}
			return nil, err
		}
		if s != nil {
			return s, nil
		}
	}
	if !d.sawRecord {
		d.lines.line = max(d.lines.line, 1)
		return nil, d.errorf("empty input; want an SSE capture with at least one stream")
	}
	if id, s, ok := d.streams.drain(); ok {
		if err := checkLimits(&s.Turn); err != nil {
			return nil, d.errorf("stream %q: %v", id, err)
		}
		s.Turn.Status = pipeline.StatusIncomplete
		return s, nil
	}
	return nil, io.EOF
}

var errCaptureSyntax = errors.New("not JSON")

// noteUnknown notes the fields of a record (valid JSON, of type kind)
// that captureRecord does not define: encoding/json reads past them.
func (d *CaptureReader) noteUnknown(line []byte, kind string) {
	d.keys.reset(line)
	d.keys.eachKey(func(key []byte) {
		switch string(key) {
		case "type", "format", "version", "source", "stream", "session", "start_unix_ns", "method", "path", "model",
			"t_ns", "status", "content_type", "data", "data_b64", "read_error", "cancelled", "resumes", "resume_t_ns":
		default:
			d.note(d.name, d.lines.line, kind, key)
		}
	})
}

func (d *CaptureReader) record(line []byte) (*Stream, error) {
	var rec captureRecord
	if line[0] != '{' {
		return nil, fmt.Errorf("%w (%w)", d.errorf("not a JSON object; want one record per line"), errCaptureSyntax)
	}
	if err := json.Unmarshal(line, &rec); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w (%w)", d.errorf("not valid JSON: %v", err), errCaptureSyntax)
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return nil, d.errorf("field %q: got JSON %s, want %s", ute.Field, ute.Value, ute.Type)
		}
		return nil, d.errorf("%v", err)
	}
	d.sawRecord = true
	switch rec.Type {
	case "sse_header", "request", "response", "read", "close":
		d.noteUnknown(line, rec.Type) // records of other types are read past whole
	}
	switch rec.Type {
	case "sse_header":
		if err := checkHeader(rec.Format, CaptureFormat, false, int64(rec.Version), CaptureVersion, "capture"); err != nil {
			return nil, d.errorf("%v", err)
		}
		return nil, nil
	case "request":
		if rec.Stream == "" {
			return nil, d.errorf(`request record without "stream" id`)
		}
		if err := checkStart(rec.StartUnixNs); err != nil {
			return nil, d.errorf("stream %q: start_unix_ns: %v", rec.Stream, err)
		}
		var start time.Time
		if rec.StartUnixNs != 0 {
			start = time.Unix(0, rec.StartUnixNs)
		}
		st := NewStream(rec.Stream, rec.Session, start)
		st.Turn.Model, st.Turn.Operation = rec.Model, PathOperation(rec.Path)
		if !d.streams.begin(rec.Stream, st) {
			return nil, d.errorf("stream %q begins a second time", rec.Stream)
		}
		if rec.Resumes != "" {
			t, ok := d.waiting[rec.Resumes]
			if !ok {
				return nil, d.errorf("stream %q resumes turn %q, which is not waiting for tool results; want the id of a turn whose last stream ended in tool calls", rec.Stream, rec.Resumes)
			}
			if rec.ResumeTNs == nil || *rec.ResumeTNs < 0 || *rec.ResumeTNs > int64(MaxTime) {
				return nil, d.errorf(`stream %q resumes turn %q; want "resume_t_ns", when its request was sent in the turn's time: nanoseconds from 0 to %d (a year)`, rec.Stream, rec.Resumes, int64(MaxTime))
			}
			if tc := t.ToolCalls[len(t.ToolCalls)-1]; time.Duration(*rec.ResumeTNs) < tc.At {
				return nil, d.errorf("stream %q resumes turn %q at resume_t_ns %d, before the turn stopped for its tool call at %d", rec.Stream, rec.Resumes, *rec.ResumeTNs, int64(tc.At))
			}
			delete(d.waiting, rec.Resumes)
			d.resumes[rec.Stream] = resumed{t, time.Duration(*rec.ResumeTNs)}
		}
		return nil, nil
	case "response", "read", "close":
	case "":
		return nil, d.errorf(`record without "type"; want sse_header, request, response, read or close`)
	default:
		return nil, nil // unknown record types are ignored
	}
	if rec.Stream == "" {
		return nil, d.errorf(`%s record without "stream" id`, rec.Type)
	}
	s, ok, ended := d.streams.get(rec.Stream)
	if !ok {
		if ended {
			return nil, d.errorf("%s record for stream %q after its close", rec.Type, rec.Stream)
		}
		return nil, d.errorf("%s record for stream %q before its request record", rec.Type, rec.Stream)
	}
	if rec.TNs == nil {
		return nil, d.errorf(`%s record of stream %q has no "t_ns"; want nanoseconds since the request`, rec.Type, rec.Stream)
	}
	at := time.Duration(*rec.TNs)
	if at < 0 || at > MaxTime {
		return nil, d.errorf("%s record of stream %q has t_ns %d; want a time from 0 to %d (a year)", rec.Type, rec.Stream, *rec.TNs, int64(MaxTime))
	}
	if last := max(s.Stats.Headers, s.lastRead); at < last {
		return nil, d.errorf("%s record of stream %q has t_ns %d, before the previous record's %d; want arrival order", rec.Type, rec.Stream, *rec.TNs, int64(last))
	}
	switch rec.Type {
	case "response":
		if s.Stats.HTTPStatus != 0 {
			return nil, d.errorf("stream %q has a second response record", rec.Stream)
		}
		if rec.Status < 100 || rec.Status > 999 {
			return nil, d.errorf("response of stream %q has status %d; want an HTTP status code", rec.Stream, rec.Status)
		}
		s.Response(rec.Status, rec.ContentType, at)
	case "read":
		if s.Stats.HTTPStatus == 0 {
			return nil, d.errorf("read record of stream %q before its response record", rec.Stream)
		}
		var b []byte
		switch {
		case rec.Data != nil && rec.DataB64 != nil:
			return nil, d.errorf(`read record of stream %q has both "data" and "data_b64"; want one`, rec.Stream)
		case rec.Data != nil:
			b = []byte(*rec.Data)
		case rec.DataB64 != nil:
			var err error
			if b, err = base64.StdEncoding.DecodeString(*rec.DataB64); err != nil {
				return nil, d.errorf("read record of stream %q: data_b64: %v", rec.Stream, err)
			}
		default:
			return nil, d.errorf(`read record of stream %q has no "data"; want the bytes read`, rec.Stream)
		}
		_ = s.Read(b, at) // a parse error is recorded in the turn
	case "close":
		var readErr error
		switch {
		case rec.ReadError != "":
			readErr = errors.New(rec.ReadError)
		case rec.Cancelled:
			readErr = ErrCancelled
		}
		s.Close(at, readErr, rec.Cancelled)
		d.streams.end(rec.Stream)
		if err := checkLimits(&s.Turn); err != nil {
			return nil, d.errorf("stream %q: %v", rec.Stream, err)
		}
		return s, nil
	}
	return nil, nil
}
