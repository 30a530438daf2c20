package trace

import (
	"bytes"
	"errors"
	"fmt"
	"time"
)

// MaxSSELine is the longest SSE line a SSEParser accepts; a longer one is an
// error (ErrSSELineTooLong) rather than unbounded memory.
const MaxSSELine = 4 << 20

// Errors of the SSE parser.
var (
	// ErrSSELineTooLong reports a line longer than MaxSSELine.
	ErrSSELineTooLong = errors.New("SSE line too long")
	// ErrSSETruncated reports a stream that ended inside a line: the bytes
	// after the last line end were never a whole line.
	ErrSSETruncated = errors.New("stream ended inside an SSE line")
)

// SSEEvent is one server-sent event, or one comment line, as SSEParser found it.
// The SSEEvent and its byte slices are valid only until the emit callback
// returns.
type SSEEvent struct {
	// Comment is true for a comment line (": keep-alive"); Data then holds
	// the text after the colon, and the other fields are unset.
	Comment bool
	// Type is the event's "event:" field ("" for the default, message).
	Type string
	// ID is the event's "id:" field, if it had one.
	ID string
	// Data is the event's data lines joined by "\n".
	Data []byte
	// At is the arrival of the read that completed the event (its blank
	// line), since the stream began; First is that of the read that
	// brought its first byte.
	At, First time.Duration
	// Lines counts the lines the event was made of, its blank line
	// included.
	Lines int
	// Unterminated is true for an event the stream ended before its blank
	// line: its lines were whole, but the stream closed after them.
	Unterminated bool
}

// SSEParser splits a server-sent event stream into events as its bytes
// arrive, following the WHATWG EventSource rules: lines end in LF, CRLF
// or CR (also when a CRLF is split across reads); lines starting with ':'
// are comments; "data:" lines accumulate, joined by LF; a blank line
// dispatches the event, unless it has no data. The zero SSEParser is ready;
// it is not safe for concurrent use.
type SSEParser struct {
	line    []byte        // a line whose end has not arrived
	lineAt  time.Duration // arrival of the pending line's first byte
	lastCR  bool          // the last line ended in CR: a leading LF is its end
	data    []byte
	hasData bool
	typ     string
	id      string
	lines   int
	first   time.Duration
	started bool
	ev      SSEEvent // handed to emit, reused
	// Dropped counts events that ended without data and so, by the rules,
	// were not dispatched.
	Dropped int
	// Bytes counts the bytes fed so far.
	Bytes int64
}

// Reset makes p ready for a new stream, keeping its memory.
func (p *SSEParser) Reset() {
	*p = SSEParser{line: p.line[:0], data: p.data[:0]}
	p.ev = SSEEvent{}
}

// Feed parses the bytes of one read that arrived at time at, calling emit
// for every event or comment they complete. An error from emit stops the
// parse and is returned.
func (p *SSEParser) Feed(b []byte, at time.Duration, emit func(*SSEEvent) error) error {
	p.Bytes += int64(len(b))
	for len(b) > 0 {
		if p.lastCR {
			p.lastCR = false
			if b[0] == '\n' {
				b = b[1:]
				continue
			}
		}
		i := bytes.IndexAny(b, "\r\n")
		if i < 0 {
			if len(p.line) == 0 {
				p.lineAt = at
			}
			if len(p.line)+len(b) > MaxSSELine {
				return fmt.Errorf("%w: over %d bytes without a line end", ErrSSELineTooLong, MaxSSELine)
			}
			p.line = append(p.line, b...)
			return nil
		}
		line, lineAt := b[:i], at
		if len(p.line) > 0 {
			if len(p.line)+i > MaxSSELine {
				return fmt.Errorf("%w: over %d bytes without a line end", ErrSSELineTooLong, MaxSSELine)
			}
			p.line = append(p.line, b[:i]...)
			line, lineAt = p.line, p.lineAt
		}
		p.lastCR = b[i] == '\r'
		b = b[i+1:]
		err := p.processLine(line, lineAt, at, emit)
		p.line = p.line[:0]
		if err != nil {
			return err
		}
	}
	return nil
}

// Close ends the stream at time at. An event whose lines were all whole
// but whose blank line never came is dispatched, marked Unterminated; a
// partial last line is dropped and reported as ErrSSETruncated.
func (p *SSEParser) Close(at time.Duration, emit func(*SSEEvent) error) error {
	var err error
	if p.hasData {
		err = p.dispatch(at, true, emit)
	}
	p.resetEvent()
	if len(p.line) > 0 {
		n := len(p.line)
		p.line = p.line[:0]
		return errors.Join(err, fmt.Errorf("%w (%d bytes)", ErrSSETruncated, n))
	}
	return err
}

func (p *SSEParser) resetEvent() {
	p.data = p.data[:0]
	p.hasData, p.typ, p.id, p.lines, p.started = false, "", "", 0, false
}

func (p *SSEParser) processLine(line []byte, lineAt, at time.Duration, emit func(*SSEEvent) error) error {
	if len(line) == 0 {
		if !p.hasData {
			if p.lines > 0 {
				p.Dropped++
			}
			p.resetEvent()
			return nil
		}
		p.lines++
		err := p.dispatch(at, false, emit)
		p.resetEvent()
		return err
	}
	if line[0] == ':' {
		p.ev = SSEEvent{Comment: true, Data: line[1:], At: at, First: lineAt, Lines: 1}
		return emit(&p.ev)
	}
	if !p.started {
		p.started, p.first = true, lineAt
	}
	p.lines++
	name, value := line, []byte(nil)
	if i := bytes.IndexByte(line, ':'); i >= 0 {
		name, value = line[:i], line[i+1:]
		if len(value) > 0 && value[0] == ' ' {
			value = value[1:]
		}
	}
	switch string(name) {
	case "data":
		if p.hasData {
			p.data = append(p.data, '\n')
		}
		p.data = append(p.data, value...)
		p.hasData = true
	case "event":
		p.typ = string(value)
	case "id":
		if bytes.IndexByte(value, 0) < 0 {
			p.id = string(value)
		}
	}
	// "retry" and unknown fields are ignored, as the rules say
	return nil
}

func (p *SSEParser) dispatch(at time.Duration, unterminated bool, emit func(*SSEEvent) error) error {
	p.ev = SSEEvent{Type: p.typ, ID: p.id, Data: p.data, At: at, First: p.first,
		Lines: p.lines, Unterminated: unterminated}
	return emit(&p.ev)
}
