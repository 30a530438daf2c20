package otlp

import (
	crand "crypto/rand"
	"encoding/binary"
	"math"
	"math/rand/v2"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/propagation"
	"go.opentelemetry.io/otel/trace"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/encoding/protowire"
)

// The spans are encoded here, straight to OTLP protobuf bytes
// (opentelemetry/proto/trace/v1/trace.proto as go.opentelemetry.io/proto/otlp
// v1.11.0 has it), and sent in a ScopeSpans message as its span field
// (ScopeSpansBytes) by the SDK's OTLP/HTTP client, which adds the standard
// settings (headers, certificates, compression, retries). The SDK's
// tracer copied each turn's attributes four times, its exporter converted
// them to messages, and protobuf's reflection encoded those: on a large
// benchmark file that was most of the export's cost. The bytes are those
// of the SDK's exporter (go.opentelemetry.io/otel/exporters/otlp/otlptrace
// v1.47.0, internal/tracetransform): the same fields, flags and units;
// the tests decode them with the Collector's pdata and send them through
// a real Collector.

// maxEvents bounds the events of one span (the SDK's default span limits
// keep 128): a turn of more gaps keeps the first thousand and counts the
// rest in dropped_events_count.
const maxEvents = 1000

// The field numbers of the OTLP messages written here.
const (
	fSpanTraceID        protowire.Number = 1
	fSpanSpanID         protowire.Number = 2
	fSpanTraceState     protowire.Number = 3
	fSpanParentSpanID   protowire.Number = 4
	fSpanName           protowire.Number = 5
	fSpanKind           protowire.Number = 6
	fSpanStart          protowire.Number = 7
	fSpanEnd            protowire.Number = 8
	fSpanAttributes     protowire.Number = 9
	fSpanEvents         protowire.Number = 11
	fSpanDropped        protowire.Number = 12
	fSpanStatus         protowire.Number = 15
	fSpanFlags          protowire.Number = 16
	fEventTime          protowire.Number = 1
	fEventName          protowire.Number = 2
	fEventAttributes    protowire.Number = 3
	fStatusMessage      protowire.Number = 2
	fStatusCode         protowire.Number = 3
	fKVKey              protowire.Number = 1
	fKVValue            protowire.Number = 2
	fAnyString          protowire.Number = 1
	fAnyBool            protowire.Number = 2
	fAnyInt             protowire.Number = 3
	fAnyDouble          protowire.Number = 4
	fScopeSpansSpans    protowire.Number = 2
	fResourceAttributes protowire.Number = 1
)

// ids makes trace and span IDs, random as the SDK's are.
type ids struct {
	mu sync.Mutex
	r  *rand.Rand
}

func newIDs() *ids {
	var seed [32]byte
	_, _ = crand.Read(seed[:])
	return &ids{r: rand.New(rand.NewChaCha8(seed))}
}

// next returns a new trace ID and span ID.
func (g *ids) next() (tid trace.TraceID, sid trace.SpanID) {
	g.mu.Lock()
	defer g.mu.Unlock()
	for tid == (trace.TraceID{}) {
		binary.LittleEndian.PutUint64(tid[:8], g.r.Uint64())
		binary.LittleEndian.PutUint64(tid[8:], g.r.Uint64())
	}
	for sid == (trace.SpanID{}) {
		binary.LittleEndian.PutUint64(sid[:], g.r.Uint64())
	}
	return tid, sid
}

// scratch holds the buffers spans are encoded in.
var scratch = sync.Pool{New: func() any { b := make([]byte, 0, 4096); return &b }}

// protoSpan encodes the OTLP span of sp, starting at start, its times
// within divided by speed (0 or 1: as they are). A valid traceparent
// makes it a child of that span, in that trace.
func (e *Exporter) protoSpan(sp *spec, start time.Time, speed float64) []byte {
	at := func(d time.Duration) uint64 {
		if speed > 0 && speed != 1 {
			d = time.Duration(float64(d) / speed)
		}
		return uint64(start.Add(d).UnixNano())
	}
	// every span is sampled (W3C flag 01), and says whether its parent is
	// remote
	flags := uint32(trace.FlagsSampled) | uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_HAS_IS_REMOTE_MASK)
	var parent trace.SpanContext
	if sp.traceparent != "" {
		carrier := propagation.MapCarrier{"traceparent": sp.traceparent}
		if sp.tracestate != "" {
			carrier["tracestate"] = sp.tracestate
		}
		parent = trace.SpanContextFromContext(propagation.TraceContext{}.Extract(e.ctx, carrier))
	}
	tid, sid := e.ids.next()
	if parent.IsValid() {
		tid = parent.TraceID()
		flags |= uint32(tracepb.SpanFlags_SPAN_FLAGS_CONTEXT_IS_REMOTE_MASK)
	}
	kind := tracepb.Span_SPAN_KIND_INTERNAL
	if sp.call {
		kind = tracepb.Span_SPAN_KIND_CLIENT
	}

	bp := scratch.Get().(*[]byte)
	b := (*bp)[:0]
	b = appendBytesField(b, fSpanTraceID, tid[:])
	b = appendBytesField(b, fSpanSpanID, sid[:])
	if parent.IsValid() {
		if ts := parent.TraceState().String(); ts != "" {
			b = appendStringField(b, fSpanTraceState, ts)
		}
		psid := parent.SpanID()
		b = appendBytesField(b, fSpanParentSpanID, psid[:])
	}
	b = appendStringField(b, fSpanName, sp.name)
	b = protowire.AppendTag(b, fSpanKind, protowire.VarintType)
	b = protowire.AppendVarint(b, uint64(kind))
	b = protowire.AppendTag(b, fSpanStart, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, uint64(start.UnixNano()))
	b = protowire.AppendTag(b, fSpanEnd, protowire.Fixed64Type)
	b = protowire.AppendFixed64(b, at(sp.length))
	b = appendAttrs(b, fSpanAttributes, sp.attrs)
	events := sp.events
	if len(events) > maxEvents {
		events = events[:maxEvents]
	}
	for i := range events {
		ev := &events[i]
		size := 1 + 8 + stringFieldSize(ev.name) + attrsSize(ev.attrs)
		b = protowire.AppendTag(b, fSpanEvents, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		b = protowire.AppendTag(b, fEventTime, protowire.Fixed64Type)
		b = protowire.AppendFixed64(b, at(ev.at))
		b = appendStringField(b, fEventName, ev.name)
		b = appendAttrs(b, fEventAttributes, ev.attrs)
	}
	if n := len(sp.events) - len(events); n > 0 {
		b = protowire.AppendTag(b, fSpanDropped, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(n))
	}
	if sp.failed {
		size := 2 // the code's tag and value
		if sp.errText != "" {
			size += stringFieldSize(sp.errText)
		}
		b = protowire.AppendTag(b, fSpanStatus, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(size))
		if sp.errText != "" {
			b = appendStringField(b, fStatusMessage, sp.errText)
		}
		b = protowire.AppendTag(b, fStatusCode, protowire.VarintType)
		b = protowire.AppendVarint(b, uint64(tracepb.Status_STATUS_CODE_ERROR))
	}
	b = protowire.AppendTag(b, fSpanFlags, protowire.Fixed32Type)
	b = protowire.AppendFixed32(b, flags)
	out := append([]byte(nil), b...)
	*bp = b
	scratch.Put(bp)
	return out
}

func appendBytesField(b []byte, n protowire.Number, v []byte) []byte {
	return protowire.AppendBytes(protowire.AppendTag(b, n, protowire.BytesType), v)
}

func appendStringField(b []byte, n protowire.Number, v string) []byte {
	return protowire.AppendString(protowire.AppendTag(b, n, protowire.BytesType), v)
}

// stringFieldSize is the encoded size of a string field (tag below 16).
func stringFieldSize(s string) int { return 1 + protowire.SizeBytes(len(s)) }

// anySize is the encoded size of an AnyValue holding v. Only the kinds
// underrun sets are encoded: bool, int64, float64 and string (any other
// as its string form).
func anySize(v attribute.Value) int {
	switch v.Type() {
	case attribute.BOOL:
		return 2
	case attribute.INT64:
		return 1 + protowire.SizeVarint(uint64(v.AsInt64()))
	case attribute.FLOAT64:
		return 1 + 8
	case attribute.STRING:
		return stringFieldSize(v.AsString())
	default:
		return stringFieldSize(v.String())
	}
}

// kvSize is the encoded size of a KeyValue message.
func kvSize(kv attribute.KeyValue) int {
	return stringFieldSize(string(kv.Key)) + 1 + protowire.SizeBytes(anySize(kv.Value))
}

// attrsSize is the encoded size of attributes as a repeated KeyValue field
// (tag below 16).
func attrsSize(kvs []attribute.KeyValue) int {
	n := 0
	for _, kv := range kvs {
		n += 1 + protowire.SizeBytes(kvSize(kv))
	}
	return n
}

// appendAttrs appends attributes as the repeated KeyValue field n.
func appendAttrs(b []byte, n protowire.Number, kvs []attribute.KeyValue) []byte {
	for _, kv := range kvs {
		b = protowire.AppendTag(b, n, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(kvSize(kv)))
		b = appendStringField(b, fKVKey, string(kv.Key))
		b = protowire.AppendTag(b, fKVValue, protowire.BytesType)
		b = protowire.AppendVarint(b, uint64(anySize(kv.Value)))
		switch kv.Value.Type() {
		case attribute.BOOL:
			v := uint64(0)
			if kv.Value.AsBool() {
				v = 1
			}
			b = protowire.AppendTag(b, fAnyBool, protowire.VarintType)
			b = protowire.AppendVarint(b, v)
		case attribute.INT64:
			b = protowire.AppendTag(b, fAnyInt, protowire.VarintType)
			b = protowire.AppendVarint(b, uint64(kv.Value.AsInt64()))
		case attribute.FLOAT64:
			b = protowire.AppendTag(b, fAnyDouble, protowire.Fixed64Type)
			b = protowire.AppendFixed64(b, math.Float64bits(kv.Value.AsFloat64()))
		case attribute.STRING:
			b = appendStringField(b, fAnyString, kv.Value.AsString())
		default:
			b = appendStringField(b, fAnyString, kv.Value.String())
		}
	}
	return b
}

// scopeSpansBytes appends spans, each an encoded Span, as the span field
// of a ScopeSpans message.
func scopeSpansBytes(b []byte, spans [][]byte) []byte {
	for _, s := range spans {
		b = appendBytesField(b, fScopeSpansSpans, s)
	}
	return b
}
