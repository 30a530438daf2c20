package trace

import (
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math"
	"strconv"
	"time"

	"github.com/valyala/fastjson"

	"github.com/speech-pipeline/underrun/pipeline"
)

// The native format's identity, as its header record states it.
const (
	FormatName    = "underrun-trace"
	FormatVersion = 1
)

// MaxLine is the longest record line a reader accepts.
const MaxLine = 1 << 20

// ErrFormat reports input that is not a valid trace. Errors wrapping it
// name the input, the line and what was expected.
var ErrFormat = errors.New("invalid trace")

// Record is one line of a native trace. Type is "header", "turn", "chunk",
// "tool" or "end"; the other fields belong to some of the types. A tool
// record says the turn's stream stopped at t_ns for a tool call named
// name that ran duration_ns (pipeline.ToolCall).
type Record struct {
	Type    string `json:"type"`
	Format  string `json:"format,omitempty"`
	Version int    `json:"version,omitempty"`
	Source  string `json:"source,omitempty"`

	Turn        string `json:"turn,omitempty"`
	Session     string `json:"session,omitempty"`
	StartUnixNs int64  `json:"start_unix_ns,omitempty"`
	Model       string `json:"model,omitempty"`
	Operation   string `json:"operation,omitempty"`

	TNs       *int64  `json:"t_ns,omitempty"`
	Text      *string `json:"text,omitempty"`
	Tokens    *int    `json:"tokens,omitempty"`
	Reasoning bool    `json:"reasoning,omitempty"`

	DurationNs *int64 `json:"duration_ns,omitempty"`
	Name       string `json:"name,omitempty"`

	Status       string `json:"status,omitempty"`
	Error        string `json:"error,omitempty"`
	OutputTokens int    `json:"output_tokens,omitempty"`
}

// Writer writes a native trace record by record, flushing each one, so a
// crash loses at most the record being written. After a write fails it
// writes nothing more and every call returns that error: a trace with a
// hole in it would read as if nothing were missing. It is not safe for
// concurrent use.
type Writer struct {
	w      io.Writer
	buf    []byte
	header bool
	source string
	err    error
}

// NewWriter returns a Writer whose header names source ("capture",
// "convert", "sim", ...). The header is written before the first record.
func NewWriter(w io.Writer, source string) *Writer {
	return &Writer{w: w, source: source}
}

func (w *Writer) flush() error {
	if w.err == nil {
		if _, err := w.w.Write(w.buf); err != nil {
			w.err = fmt.Errorf("writing the trace: %w", err)
		}
	}
	w.buf = w.buf[:0]
	return w.err
}

// Err returns the error of the first write that failed, or nil.
func (w *Writer) Err() error { return w.err }

func (w *Writer) ensureHeader() {
	if w.header {
		return
	}
	w.header = true
	w.buf = append(w.buf, `{"type":"header","format":"`+FormatName+`","version":1`...)
	if w.source != "" {
		w.buf = append(w.buf, `,"source":`...)
		w.buf = strconv.AppendQuote(w.buf, w.source)
	}
	w.buf = append(w.buf, "}\n"...)
}

// WriteHeader writes the header now (it is otherwise written with the
// first record).
func (w *Writer) WriteHeader() error {
	w.ensureHeader()
	return w.flush()
}

func appendString(b []byte, s string) []byte {
	out, _ := json.Marshal(s) // never fails for a string
	return append(b, out...)
}

// record starts a record of type kind for turn id.
func (w *Writer) record(kind, id string) {
	w.ensureHeader()
	w.buf = append(w.buf, `{"type":"`...)
	w.buf = append(w.buf, kind...)
	w.buf = append(w.buf, `","turn":`...)
	w.buf = appendString(w.buf, id)
}

// str adds the field name with the string v, when v is not empty.
func (w *Writer) str(name, v string) {
	if v == "" {
		return
	}
	w.buf = append(w.buf, `,"`...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, `":`...)
	w.buf = appendString(w.buf, v)
}

// int adds the field name with the number v.
func (w *Writer) int(name string, v int64) {
	w.buf = append(w.buf, `,"`...)
	w.buf = append(w.buf, name...)
	w.buf = append(w.buf, `":`...)
	w.buf = strconv.AppendInt(w.buf, v, 10)
}

// end ends the record and writes it.
func (w *Writer) end() error {
	w.buf = append(w.buf, "}\n"...)
	return w.flush()
}

// BeginTurn writes a turn record.
func (w *Writer) BeginTurn(t *pipeline.Turn) error {
	w.record("turn", t.ID)
	w.str("session", t.Session)
	if !t.Start.IsZero() {
		w.int("start_unix_ns", t.Start.UnixNano())
	}
	w.str("model", t.Model)
	w.str("operation", string(t.Operation))
	return w.end()
}

// WriteChunk writes one chunk record of turn id.
func (w *Writer) WriteChunk(id string, c pipeline.Chunk) error {
	w.record("chunk", id)
	w.int("t_ns", int64(c.At))
	if !c.Textless {
		w.buf = append(w.buf, `,"text":`...)
		w.buf = appendString(w.buf, c.Text) // "" too: a token with empty text
	}
	if c.Tokens > 1 || (c.Tokens == 1 && !c.Textless) {
		w.int("tokens", int64(c.Tokens))
	}
	if c.Reasoning {
		w.buf = append(w.buf, `,"reasoning":true`...)
	}
	return w.end()
}

// EndTurn writes the end record of a turn.
func (w *Writer) EndTurn(t *pipeline.Turn) error {
	status := t.Status
	if status == "" {
		status = pipeline.StatusOK
	}
	w.record("end", t.ID)
	w.str("status", string(status))
	w.str("error", t.Error)
	if t.OutputTokens > 0 {
		w.int("output_tokens", int64(t.OutputTokens))
	}
	return w.end()
}

// WriteToolCall writes a tool record of turn id.
func (w *Writer) WriteToolCall(id string, tc pipeline.ToolCall) error {
	w.record("tool", id)
	w.int("t_ns", int64(tc.At))
	w.int("duration_ns", int64(tc.Duration))
	w.str("name", tc.Name)
	return w.end()
}

// WriteTurn writes a whole turn: its turn record, chunks and end.
func (w *Writer) WriteTurn(t *pipeline.Turn) error {
	if err := w.BeginTurn(t); err != nil {
		return err
	}
	tools := t.ToolCalls
	for _, c := range t.Chunks {
		for len(tools) > 0 && tools[0].At <= c.At {
			if err := w.WriteToolCall(t.ID, tools[0]); err != nil {
				return err
			}
			tools = tools[1:]
		}
		if err := w.WriteChunk(t.ID, c); err != nil {
			return err
		}
	}
	for _, tc := range tools {
		if err := w.WriteToolCall(t.ID, tc); err != nil {
			return err
		}
	}
	return w.EndTurn(t)
}

// fields is a record as the reader decodes it: Record without pointers.
type fields struct {
	typ, turn, session, text, status, errText, format, source, name, model, operation string
	hasText, hasT, hasTokens, reasoning, hasDuration                                  bool
	tNs, tokens, startUnixNs, outputTokens, version, durationNs                       int64
}

func (f *fields) fromRecord(r *Record) {
	*f = fields{
		typ: r.Type, turn: r.Turn, session: r.Session, status: r.Status, errText: r.Error,
		format: r.Format, source: r.Source, reasoning: r.Reasoning,
		startUnixNs: r.StartUnixNs, outputTokens: int64(r.OutputTokens), version: int64(r.Version),
		name: r.Name, model: r.Model, operation: r.Operation,
	}
	if r.DurationNs != nil {
		f.durationNs, f.hasDuration = *r.DurationNs, true
	}
	if r.Text != nil {
		f.text, f.hasText = *r.Text, true
	}
	if r.TNs != nil {
		f.tNs, f.hasT = *r.TNs, true
	}
	if r.Tokens != nil {
		f.tokens, f.hasTokens = int64(*r.Tokens), true
	}
}

// NativeReader reads a native trace as a stream of turns. Turns may
// interleave; a turn is returned when its end record arrives, and turns
// still open at the end of the input are returned then, in the order they
// began, with status incomplete. A truncated last line (no newline, not
// valid JSON) is tolerated and counted in Truncated; any other bad line is
// an error naming the input and the line.
type NativeReader struct {
	name          string
	lines         jsonLines
	turns         units[*pipeline.Turn]
	done          bool
	rec           fields
	texts         map[string]string
	sizeHint      int
	parser        fastjson.Parser
	lastTurn      string
	records       int
	emptyReported bool
	unknownFields // the field names no record type defines, noted once
	// Truncated is true when a cut-off last line was dropped.
	Truncated bool
}

// NewNativeReader returns a reader of r; name labels errors (a file name,
// or "stdin").
func NewNativeReader(r io.Reader, name string) *NativeReader {
	return &NativeReader{
		name: name, lines: newJSONLines(r, MaxLine),
		turns: newUnits[*pipeline.Turn](),
	}
}

func (d *NativeReader) errorf(format string, args ...any) error {
	return fmt.Errorf("%w: %s:%d: %s", ErrFormat, d.name, d.lines.line, fmt.Sprintf(format, args...))
}

// Next returns the next complete turn, or io.EOF after the last.
func (d *NativeReader) Next() (*pipeline.Turn, error) {
	for !d.done {
		line, last, err := d.lines.record(d.name, ErrFormat)
		if err == io.EOF {
			d.done = true
			continue
		}
		if err != nil {
			return nil, err
		}
		line = bytes.TrimSpace(line)
		if len(line) == 0 {
			if last {
				d.done = true
			}
			continue
		}
		t, err := d.record(line)
		if err == nil {
			d.records++
		}
		if err != nil {
			// a crash while a record was written leaves its line cut
			// off; an input whose only line is not a record is no trace
			if last && d.records > 0 && errors.Is(err, errSyntax) {
				d.Truncated = true
				d.done = true
				break
			}
			return nil, err
		}
		if last {
			d.done = true
		}
		if t != nil {
			return t, nil
		}
	}
	if d.records == 0 && !d.emptyReported {
		d.emptyReported = true
		d.lines.line = max(d.lines.line, 1)
		return nil, d.errorf("empty input; want a trace with at least one turn")
	}
	if id, t, ok := d.turns.drain(); ok {
		if err := checkLimits(t); err != nil {
			return nil, d.errorf("turn %q: %v", id, err)
		}
		t.Status = pipeline.StatusIncomplete
		if len(t.Chunks) == 0 {
			t.Chunks = nil
		}
		return t, nil
	}
	return nil, io.EOF
}

var errSyntax = errors.New("not a JSON object")

func (d *NativeReader) record(line []byte) (*pipeline.Turn, error) {
	rec := &d.rec
	if err := d.decodeRecord(line, rec); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return nil, fmt.Errorf("%w (%w)", d.errorf("%v", err), errSyntax)
		}
		return nil, d.errorf("%v", err)
	}
	switch rec.typ {
	case "header":
		if err := checkHeader(rec.format, FormatName, true, rec.version, FormatVersion, "trace"); err != nil {
			return nil, d.errorf("%v", err)
		}
		return nil, nil
	case "turn":
		if rec.turn == "" {
			return nil, d.errorf(`turn record without "turn" id`)
		}
		if d.turns.known(rec.turn) {
			return nil, d.errorf("turn %q begins a second time", rec.turn)
		}
		if err := checkStart(rec.startUnixNs); err != nil {
			return nil, d.errorf("turn %q: start_unix_ns: %v", rec.turn, err)
		}
		op := pipeline.Operation(rec.operation)
		if op != "" && !op.Valid() {
			return nil, d.errorf("turn %q has operation %q; want %s or %s", rec.turn, rec.operation, pipeline.OperationChat, pipeline.OperationTextCompletion)
		}
		t := &pipeline.Turn{ID: rec.turn, Session: rec.session, Status: pipeline.StatusOK, Chunks: d.chunkSlice(), Model: rec.model, Operation: op}
		if rec.startUnixNs != 0 {
			t.Start = time.Unix(0, rec.startUnixNs)
		}
		d.turns.begin(rec.turn, t)
		return nil, nil
	case "chunk":
		t, at, err := d.turnAt(rec, "chunk", "its arrival")
		if err != nil {
			return nil, err
		}
		if len(t.Chunks) >= MaxTurnTokens {
			return nil, d.errorf("turn %q has more than %d chunks; want at most one per token, %d tokens a turn", rec.turn, MaxTurnTokens, MaxTurnTokens)
		}
		if n := len(t.Chunks); n > 0 && at < t.Chunks[n-1].At {
			return nil, d.errorf("chunk of turn %q has t_ns %d, before the previous chunk's %d; want arrival order", rec.turn, rec.tNs, int64(t.Chunks[n-1].At))
		}
		c := pipeline.Chunk{At: at, Reasoning: rec.reasoning, Tokens: 1}
		if rec.hasText {
			c.Text = rec.text
		} else {
			c.Textless = true
		}
		if rec.hasTokens {
			if rec.tokens < 0 || rec.tokens > MaxTurnTokens {
				return nil, d.errorf("chunk of turn %q has tokens %d; want a count from 0 to %d", rec.turn, rec.tokens, MaxTurnTokens)
			}
			c.Tokens = int(rec.tokens)
		}
		t.Chunks = append(t.Chunks, c)
		return nil, nil
	case "tool":
		t, at, err := d.turnAt(rec, "tool record", "when the stream stopped for it")
		if err != nil {
			return nil, err
		}
		if !rec.hasDuration {
			return nil, d.errorf(`tool record of turn %q has no "duration_ns"; want how long the tool ran, in nanoseconds`, rec.turn)
		}
		if rec.durationNs < 0 || rec.durationNs > int64(MaxTime) {
			return nil, d.errorf("tool record of turn %q has duration_ns %d; want a duration from 0 to %d (a year)", rec.turn, rec.durationNs, int64(MaxTime))
		}
		if n := len(t.ToolCalls); n > 0 && at < t.ToolCalls[n-1].At {
			return nil, d.errorf("tool record of turn %q has t_ns %d, before the previous tool call's %d; want time order", rec.turn, rec.tNs, int64(t.ToolCalls[n-1].At))
		}
		if len(t.ToolCalls) >= MaxTurnTokens {
			return nil, d.errorf("turn %q has more than %d tool calls", rec.turn, MaxTurnTokens)
		}
		t.ToolCalls = append(t.ToolCalls, pipeline.ToolCall{At: at, Duration: time.Duration(rec.durationNs), Name: rec.name})
		return nil, nil
	case "end":
		t, err := d.turn(rec.turn)
		if err != nil {
			return nil, err
		}
		st := pipeline.Status(rec.status)
		if st == "" {
			st = pipeline.StatusOK
		}
		if !st.Valid() {
			return nil, d.errorf("end of turn %q has status %q; want ok, error or cancelled", rec.turn, rec.status)
		}
		if rec.outputTokens < 0 || rec.outputTokens > MaxTurnTokens {
			return nil, d.errorf("end of turn %q has output_tokens %d; want a count from 0 to %d", rec.turn, rec.outputTokens, MaxTurnTokens)
		}
		t.Status, t.Error, t.OutputTokens = st, rec.errText, int(rec.outputTokens)
		if err := checkLimits(t); err != nil {
			return nil, d.errorf("turn %q: %v", rec.turn, err)
		}
		d.turns.end(rec.turn)
		d.sizeHint = min(max(d.sizeHint, len(t.Chunks)), 4096)
		if len(t.Chunks) == 0 {
			t.Chunks = nil
		}
		return t, nil
	case "":
		return nil, d.errorf(`record without "type"; want header, turn, chunk, tool or end`)
	}
	return nil, nil // unknown record types are ignored, as the format allows
}

// turnAt returns the open turn a record names (turn), and the
// record's t_ns (what names the record, when what its time is), checking
// that it is there and from 0 to MaxTime.
func (d *NativeReader) turnAt(rec *fields, what, when string) (*pipeline.Turn, time.Duration, error) {
	t, err := d.turn(rec.turn)
	if err != nil {
		return nil, 0, err
	}
	if !rec.hasT {
		return nil, 0, d.errorf(`%s of turn %q has no "t_ns"; want %s, in nanoseconds since the request`, what, rec.turn, when)
	}
	if rec.tNs < 0 || rec.tNs > int64(MaxTime) {
		return nil, 0, d.errorf("%s of turn %q has t_ns %d; want a time from 0 to %d (a year)", what, rec.turn, rec.tNs, int64(MaxTime))
	}
	return t, time.Duration(rec.tNs), nil
}

// chunkSlice returns room for a turn's chunks, sized by the turns so far.
func (d *NativeReader) chunkSlice() []pipeline.Chunk {
	if d.sizeHint == 0 {
		return nil
	}
	return make([]pipeline.Chunk, 0, d.sizeHint)
}

// turn finds an open turn; a chunk or end for a turn never begun opens it,
// so traces written without turn records still read.
func (d *NativeReader) turn(id string) (*pipeline.Turn, error) {
	if id == "" {
		return nil, d.errorf(`%s record without "turn" id`, d.rec.typ)
	}
	t, ok, ended := d.turns.get(id)
	switch {
	case ok:
		return t, nil
	case ended:
		return nil, d.errorf("record for turn %q after its end", id)
	}
	t = &pipeline.Turn{ID: id, Status: pipeline.StatusOK, Chunks: d.chunkSlice()}
	d.turns.begin(id, t)
	return t, nil
}

// decodeRecord parses one line into rec. The fast path reads the record
// with fastjson's reusable parser; anything it does not take as a plain
// record (a parse error, a field of an unexpected type) is decoded again
// with encoding/json, whose errors name the field and what was expected.
func (d *NativeReader) decodeRecord(line []byte, rec *fields) error {
	if len(line) == 0 || line[0] != '{' {
		return fmt.Errorf("not a JSON object; want one record per line")
	}
	*rec = fields{}
	if d.writerChunk(line, rec) {
		return nil
	}
	*rec = fields{}
	if d.fastRecord(line, rec) {
		return nil
	}
	var full Record
	defer func() { rec.fromRecord(&full) }()
	if err := json.Unmarshal(line, &full); err != nil {
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return fmt.Errorf("field %q: got JSON %s, want %s", ute.Field, ute.Value, ute.Type)
		}
		var se *json.SyntaxError
		if errors.As(err, &se) {
			return fmt.Errorf("not valid JSON: %w", err)
		}
		return err
	}
	return nil
}

// writerChunk matches the exact bytes Writer.WriteChunk emits for a
// chunk whose turn ID and text need no escapes,
//
//	{"type":"chunk","turn":"ID","t_ns":N[,"text":"T"][,"tokens":N][,"reasoning":true]}
//
// and fills rec from it. It is not a JSON parser: any other line, however
// valid, is left to fastRecord. Most lines of a large trace take this path.
func (d *NativeReader) writerChunk(line []byte, rec *fields) bool {
	const head = `{"type":"chunk","turn":"`
	if len(line) < len(head) || string(line[:len(head)]) != head {
		return false
	}
	rest := line[len(head):]
	id, rest, ok := plainString(rest)
	if !ok {
		return false
	}
	if rest, ok = cutPrefix(rest, `,"t_ns":`); !ok {
		return false
	}
	if rec.tNs, rest, ok = plainInt(rest); !ok {
		return false
	}
	rec.typ, rec.hasT = "chunk", true
	if string(id) == d.lastTurn {
		rec.turn = d.lastTurn
	} else {
		rec.turn = string(id)
		d.lastTurn = rec.turn
	}
	if r, ok := cutPrefix(rest, `,"text":"`); ok {
		var text []byte
		if text, rest, ok = plainString(r); !ok {
			return false
		}
		rec.text, rec.hasText = d.internBytes(text), true
	}
	if r, ok := cutPrefix(rest, `,"tokens":`); ok {
		if rec.tokens, rest, ok = plainInt(r); !ok {
			return false
		}
		rec.hasTokens = true
	}
	if r, ok := cutPrefix(rest, `,"reasoning":true`); ok {
		rec.reasoning, rest = true, r
	}
	return len(rest) == 1 && rest[0] == '}'
}

func cutPrefix(b []byte, prefix string) ([]byte, bool) {
	if len(b) < len(prefix) || string(b[:len(prefix)]) != prefix {
		return b, false
	}
	return b[len(prefix):], true
}

// plainString reads the rest of a JSON string up to its closing quote,
// when it holds no escape, control character or non-ASCII byte (those are
// left to the JSON parsers, which check UTF-8 and decode escapes).
func plainString(b []byte) (s, rest []byte, ok bool) {
	for i, c := range b {
		switch {
		case c == '"':
			return b[:i], b[i+1:], true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, b, false
		}
	}
	return nil, b, false
}

// plainInt reads a non-negative integer of at most 18 digits without
// leading zeros; anything else is left to the JSON parsers.
func plainInt(b []byte) (n int64, rest []byte, ok bool) {
	i := 0
	for i < len(b) && i < 19 && b[i] >= '0' && b[i] <= '9' {
		n = n*10 + int64(b[i]-'0')
		i++
	}
	if i == 0 || i > 18 || (b[0] == '0' && i > 1) {
		return 0, b, false
	}
	return n, b[i:], true
}

// fastRecord fills rec from line and reports whether it could.
func (d *NativeReader) fastRecord(line []byte, rec *fields) bool {
	v, err := d.parser.ParseBytes(line)
	if err != nil {
		return false
	}
	o, err := v.Object()
	if err != nil {
		return false
	}
	ok := true
	var unknown [][]byte // valid until the next parse
	o.Visit(func(key []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		switch string(key) {
		case "type":
			rec.typ, ok = d.str(v, rec.typ)
		case "turn":
			rec.turn, ok = d.str(v, d.lastTurn)
			d.lastTurn = rec.turn
		case "text":
			rec.text, ok = d.intern(v)
			rec.hasText = v.Type() != fastjson.TypeNull
		case "t_ns":
			rec.tNs, ok = int64Value(v)
			rec.hasT = v.Type() != fastjson.TypeNull
		case "tokens":
			rec.tokens, ok = int64Value(v)
			rec.hasTokens = v.Type() != fastjson.TypeNull
		case "reasoning":
			switch v.Type() {
			case fastjson.TypeTrue:
				rec.reasoning = true
			case fastjson.TypeFalse, fastjson.TypeNull:
			default:
				ok = false
			}
		case "session":
			rec.session, ok = d.str(v, "")
		case "model":
			rec.model, ok = d.str(v, "")
		case "operation":
			rec.operation, ok = d.str(v, "")
		case "start_unix_ns":
			rec.startUnixNs, ok = int64Value(v)
		case "status":
			rec.status, ok = d.str(v, "")
		case "error":
			rec.errText, ok = d.str(v, "")
		case "output_tokens":
			rec.outputTokens, ok = int64Value(v)
		case "format":
			rec.format, ok = d.str(v, "")
		case "version":
			rec.version, ok = int64Value(v)
		case "source":
			rec.source, ok = d.str(v, "")
		case "duration_ns":
			rec.durationNs, ok = int64Value(v)
			rec.hasDuration = v.Type() != fastjson.TypeNull
		case "name":
			rec.name, ok = d.str(v, "")
		default:
			unknown = append(unknown, key) // read past, as the format allows
		}
	})
	// noted once each, on the record types this reader knows: records of
	// other types (speak's "synth" and "heard") are the other readers'
	switch rec.typ {
	case "header", "turn", "chunk", "tool", "end":
		for _, key := range unknown {
			d.note(d.name, d.lines.line, rec.typ, key)
		}
	}
	return ok
}

// str returns a JSON string's value, reusing same when the bytes equal it
// (turn IDs repeat on every line).
func (d *NativeReader) str(v *fastjson.Value, same string) (string, bool) {
	if v.Type() == fastjson.TypeNull {
		return "", true
	}
	b, err := v.StringBytes()
	if err != nil {
		return "", false
	}
	if string(b) == same {
		return same, true
	}
	return string(b), true
}

// maxInterned bounds the table of chunk texts shared between chunks.
const maxInterned = 1 << 16

// intern returns a JSON string's value, sharing one copy of texts that
// repeat (a trace's token texts come from a vocabulary).
func (d *NativeReader) intern(v *fastjson.Value) (string, bool) {
	if v.Type() == fastjson.TypeNull {
		return "", true
	}
	b, err := v.StringBytes()
	if err != nil {
		return "", false
	}
	return d.internBytes(b), true
}

// internBytes returns b as a string, sharing one copy of short texts.
func (d *NativeReader) internBytes(b []byte) string {
	if s, ok := d.texts[string(b)]; ok {
		return s
	}
	s := string(b)
	if len(d.texts) < maxInterned && len(s) <= 32 {
		if d.texts == nil {
			d.texts = make(map[string]string)
		}
		d.texts[s] = s
	}
	return s
}

// int64Value reads an integer; a fraction, exponent or overflow is refused.
func int64Value(v *fastjson.Value) (int64, bool) {
	if v.Type() == fastjson.TypeNull {
		return 0, true
	}
	if v.Type() != fastjson.TypeNumber {
		return 0, false
	}
	n, err := v.Int64()
	if err != nil || n > math.MaxInt64/2 || n < math.MinInt64/2 {
		return 0, false
	}
	return n, true
}
