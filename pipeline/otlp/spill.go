package otlp

import (
	"bufio"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// spec is a turn's span, all but when it starts: its times are offsets
// from its start, in the turn's own time.
type spec struct {
	name                    string
	call                    bool // a GenAI client span, else a speech turn
	length                  time.Duration
	attrs                   []attribute.KeyValue
	events                  []eventSpec
	failed                  bool
	errText                 string
	traceparent, tracestate string
	flat                    []attribute.KeyValue // the events' attributes, while they are built
}

// eventSpec is one span event, at an offset from the span's start.
type eventSpec struct {
	name  string
	at    time.Duration
	attrs []attribute.KeyValue
}

// spill keeps the spans of turns without a start time in a temporary
// file until the run ends, when they are laid one after another so that
// the last ends then: memory stays flat however many turns a run has.
type spill struct {
	f     *os.File
	w     *bufio.Writer
	n     int
	total time.Duration
	buf   []byte
	err   error // the first write that failed: the rest are not kept
}

// add keeps one span; an error means it is not kept (nor are later ones).
func (s *spill) add(sp *spec) error {
	if s.err != nil {
		return s.err
	}
	if s.f == nil {
		f, err := os.CreateTemp("", "underrun-otlp-*.spans")
		if err != nil {
			s.err = fmt.Errorf("otlp: a file to keep the turns without start times until the run ends: %w", err)
			return s.err
		}
		s.f, s.w = f, bufio.NewWriterSize(f, 64<<10)
	}
	s.buf = encodeSpec(s.buf[:0], sp)
	if _, err := s.w.Write(s.buf); err != nil {
		s.err = fmt.Errorf("otlp: keeping a turn in %s until the run ends: %w", s.f.Name(), err)
		return s.err
	}
	s.n++
	s.total += sp.length
	return nil
}

// each reads the kept spans back in order; the file is removed after.
func (s *spill) each(fn func(*spec)) error {
	if s.f == nil {
		return nil
	}
	defer s.close()
	if err := s.w.Flush(); err != nil {
		return fmt.Errorf("otlp: keeping the turns in %s: %w", s.f.Name(), err)
	}
	if _, err := s.f.Seek(0, io.SeekStart); err != nil {
		return fmt.Errorf("otlp: reading back %s: %w", s.f.Name(), err)
	}
	r := bufio.NewReaderSize(s.f, 64<<10)
	for range s.n {
		sp, err := decodeSpec(r)
		if err != nil {
			return fmt.Errorf("otlp: reading back %s: %w", s.f.Name(), err)
		}
		fn(sp)
	}
	return nil
}

// close removes the file.
func (s *spill) close() {
	if s.f != nil {
		name := s.f.Name()
		s.f.Close()
		os.Remove(name)
		s.f = nil
	}
}

func appendString(b []byte, s string) []byte {
	return append(binary.AppendUvarint(b, uint64(len(s))), s...)
}

func spillAttrs(b []byte, kvs []attribute.KeyValue) []byte {
	b = binary.AppendUvarint(b, uint64(len(kvs)))
	for _, kv := range kvs {
		b = appendString(b, string(kv.Key))
		t := kv.Value.Type()
		b = append(b, byte(t))
		switch t {
		case attribute.BOOL:
			v := byte(0)
			if kv.Value.AsBool() {
				v = 1
			}
			b = append(b, v)
		case attribute.INT64:
			b = binary.AppendVarint(b, kv.Value.AsInt64())
		case attribute.FLOAT64:
			b = binary.LittleEndian.AppendUint64(b, math.Float64bits(kv.Value.AsFloat64()))
		default:
			b = appendString(b, kv.Value.String())
		}
	}
	return b
}

func encodeSpec(b []byte, sp *spec) []byte {
	flags := byte(0)
	if sp.call {
		flags |= 1
	}
	if sp.failed {
		flags |= 2
	}
	b = append(b, flags)
	b = appendString(b, sp.name)
	b = binary.AppendVarint(b, int64(sp.length))
	b = appendString(b, sp.errText)
	b = appendString(b, sp.traceparent)
	b = appendString(b, sp.tracestate)
	b = spillAttrs(b, sp.attrs)
	b = binary.AppendUvarint(b, uint64(len(sp.events)))
	for _, ev := range sp.events {
		b = appendString(b, ev.name)
		b = binary.AppendVarint(b, int64(ev.at))
		b = spillAttrs(b, ev.attrs)
	}
	return b
}

// errSpill reports a kept span that does not read back.
var errSpill = errors.New("a kept span does not read back")

// maxSpilled bounds a string or count read back, against a damaged file.
const maxSpilled = 1 << 20

type specReader struct {
	r   *bufio.Reader
	err error
}

func (d *specReader) uvarint() uint64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadUvarint(d.r)
	if err == nil && v > maxSpilled {
		err = errSpill
	}
	d.err = err
	return v
}

func (d *specReader) varint() int64 {
	if d.err != nil {
		return 0
	}
	v, err := binary.ReadVarint(d.r)
	d.err = err
	return v
}

func (d *specReader) byte() byte {
	if d.err != nil {
		return 0
	}
	c, err := d.r.ReadByte()
	d.err = err
	return c
}

func (d *specReader) string() string {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return ""
	}
	b := make([]byte, n)
	_, d.err = io.ReadFull(d.r, b)
	return string(b)
}

func (d *specReader) attrs() []attribute.KeyValue {
	n := d.uvarint()
	if d.err != nil || n == 0 {
		return nil
	}
	kvs := make([]attribute.KeyValue, 0, min(n, 64))
	for range n {
		key := attribute.Key(d.string())
		switch attribute.Type(d.byte()) {
		case attribute.BOOL:
			kvs = append(kvs, key.Bool(d.byte() == 1))
		case attribute.INT64:
			kvs = append(kvs, key.Int64(d.varint()))
		case attribute.FLOAT64:
			var b [8]byte
			if d.err == nil {
				_, d.err = io.ReadFull(d.r, b[:])
			}
			kvs = append(kvs, key.Float64(math.Float64frombits(binary.LittleEndian.Uint64(b[:]))))
		default:
			kvs = append(kvs, key.String(d.string()))
		}
	}
	return kvs
}

func decodeSpec(r *bufio.Reader) (*spec, error) {
	d := &specReader{r: r}
	flags := d.byte()
	sp := &spec{call: flags&1 != 0, failed: flags&2 != 0}
	sp.name = d.string()
	sp.length = time.Duration(d.varint())
	sp.errText = d.string()
	sp.traceparent = d.string()
	sp.tracestate = d.string()
	sp.attrs = d.attrs()
	n := d.uvarint()
	for i := uint64(0); i < n && d.err == nil; i++ {
		ev := eventSpec{name: d.string(), at: time.Duration(d.varint())}
		ev.attrs = d.attrs()
		sp.events = append(sp.events, ev)
	}
	if d.err != nil {
		return nil, fmt.Errorf("%w: %w", errSpill, d.err)
	}
	return sp, nil
}
