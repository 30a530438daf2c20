package trace

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// AIPerfReader reads AIPerf's per-request export, profile_export.jsonl:
// one record per line with "metadata" (request_start_ns, or timestamp_ns
// in early versions; x_request_id; was_cancelled), "metrics" (each a
// {"value", "unit"} pair: time_to_first_token or the early tag ttft,
// inter_chunk_latency, request_latency, output_token_count,
// reasoning_token_count, ...) and "error".
//
// Chunks are rebuilt exactly: the first at the TTFT, each next one an
// inter-chunk latency later (AIPerf's chunks are its non-empty responses).
// The file keeps token counts per request only, so the tokens are shared
// evenly over the chunks and the chunks are text-less. Reasoning tokens
// are never spoken: the chunks before time_to_first_output_token (when
// the file has it), else all but the last chunks that hold the
// output_token_count content tokens, are marked Reasoning. Records of the
// warm-up phase are skipped; failed requests are turns with StatusError,
// cancelled ones (was_cancelled, or an aiperfCancelled error)
// StatusCancelled.
type AIPerfReader struct {
	s      *scanner
	n      int
	err    error
	record aiperfRecord
}

// NewAIPerfReader returns a reader of r; name labels errors.
func NewAIPerfReader(r io.Reader, name string) *AIPerfReader {
	return &AIPerfReader{s: newScanner(r, name, 0, 256<<10)}
}

var _ ToolDecoder = (*AIPerfReader)(nil)

// Tool names the tool that wrote the file.
func (d *AIPerfReader) Tool() Tool { return ToolAIPerf }

// Run is always 0: the file holds one benchmark run.
func (d *AIPerfReader) Run() int { return 0 }

// ToolSummaries returns nil: AIPerf saves its summary in another file
// (profile_export_aiperf.json).
func (d *AIPerfReader) ToolSummaries() []ToolSummary { return nil }

// metricValue is one AIPerf metric: a number or a list, and its unit.
type metricValue struct {
	set    bool
	value  float64
	values []float64
	unit   string
}

type aiperfRecord struct {
	id, requestNum, session string
	start                   int64
	warmup, cancelled       bool
	errText                 string
	ttft, ttfo, latency     metricValue
	icl                     metricValue
	out, reasoning, osl     metricValue
}

func (m *metricValue) reset() {
	vals := m.values[:0]
	*m = metricValue{values: vals}
}

// Next returns the next request as a turn, or io.EOF after the last.
func (d *AIPerfReader) Next() (*pipeline.Turn, error) {
	for d.err == nil {
		c, err := d.s.peek()
		if err == io.EOF {
			if d.n == 0 {
				d.err = fmt.Errorf("%w: %s: empty input; want AIPerf records, one per line", ErrFormat, d.s.name)
			} else {
				d.err = io.EOF
			}
			break
		}
		if err != nil {
			d.err = d.s.ioError(err)
			break
		}
		if c != '{' {
			d.err = d.s.errorf("want an AIPerf record (a JSON object per line), got %s", describe(c))
			break
		}
		line := d.s.line
		if err := d.parse(); err != nil {
			d.err = err
			break
		}
		d.n++
		if d.record.warmup {
			continue
		}
		t, err := d.turn(line)
		if err == nil {
			err = limitsError(d.s.name, t)
		}
		if err != nil {
			d.err = err
			break
		}
		return t, nil
	}
	return nil, d.err
}

func (d *AIPerfReader) parse() error {
	s := d.s
	r := &d.record
	r.id, r.requestNum, r.session, r.start = "", "", "", 0
	r.warmup, r.cancelled, r.errText = false, false, ""
	for _, m := range []*metricValue{&r.ttft, &r.ttfo, &r.latency, &r.icl, &r.out, &r.reasoning, &r.osl} {
		m.reset()
	}
	// the field being read is prefix+field, joined only for an error
	prefix, field := "", ""
	s.where = func() string { return prefix + field }
	defer func() { s.where = nil }()
	return s.object(func(key string) error {
		switch key {
		case "metadata":
			return s.object(func(k string) error {
				prefix, field = "metadata.", k
				return d.metadata(k)
			})
		case "metrics":
			return s.object(func(k string) error {
				prefix, field = "metrics.", k
				var m *metricValue
				switch k {
				case "time_to_first_token", "ttft":
					m = &r.ttft
				case "time_to_first_output_token", "ttfo":
					m = &r.ttfo
				case "request_latency":
					m = &r.latency
				case "inter_chunk_latency", "icl":
					m = &r.icl
				case "output_token_count":
					m = &r.out
				case "reasoning_token_count":
					m = &r.reasoning
				case "output_sequence_length", "osl":
					m = &r.osl
				default:
					_, err := s.skip()
					return err
				}
				return d.metric(m)
			})
		case "error":
			prefix, field = "", "error"
			return d.errorValue()
		}
		_, err := s.skip()
		return err
	})
}

func (d *AIPerfReader) metadata(k string) error {
	s, r := d.s, &d.record
	var err error
	switch k {
	case "x_request_id":
		r.id, err = s.str()
	case "session_num":
		var n int64
		var ok bool
		if n, ok, err = s.integer(); ok {
			r.requestNum = strconv.FormatInt(n, 10)
		}
	case "x_correlation_id":
		var v string
		if v, err = s.str(); v != "" {
			r.session = v
		}
	case "conversation_id":
		var v string
		if v, err = s.str(); v != "" && r.session == "" {
			r.session = v
		}
	case "request_start_ns", "timestamp_ns":
		if r.start, _, err = s.integer(); err == nil && r.start != 0 {
			if cerr := checkStart(r.start); cerr != nil {
				err = s.errorf("%s: %v", k, cerr)
			}
		}
	case "benchmark_phase", "credit_phase":
		var v string
		v, err = s.str()
		r.warmup = v == "warmup"
	case "was_cancelled":
		r.cancelled, err = s.boolean()
	case "error":
		err = d.errorValue()
	default:
		_, err = s.skip()
	}
	return err
}

// aiperfCancelled is the type of AIPerf's error for a request its
// --request-cancellation-rate cancelled on purpose (the client closing the
// connection, as a user closing a tab: docs/tutorials/request-cancellation.md),
// code 499; records of versions before was_cancelled carry only this.
const aiperfCancelled = "RequestCancellationError"

// errorValue reads an error: null, a string, or {code, type, message}.
func (d *AIPerfReader) errorValue() error {
	s, r := d.s, &d.record
	c, err := s.peek()
	if err != nil {
		return s.ioError(err)
	}
	switch c {
	case 'n':
		return s.literal("null")
	case '"':
		r.errText, err = s.str()
		return err
	case '{':
		r.errText, err = aiperfErrorDetails(s)
		return err
	}
	_, err = s.skip()
	if err == nil {
		r.errText = "error"
	}
	return err
}

// aiperfErrorDetails reads AIPerf's ErrorDetails, {code, type, message},
// as the text a failed turn carries: "type (code): message"; null reads
// as "". The summary's error_summary names its kinds of failure the same
// way, so the two can be counted against each other.
func aiperfErrorDetails(s *scanner) (string, error) {
	if isNull, err := s.null(); isNull || err != nil {
		return "", err
	}
	var code, typ, msg string
	err := s.object(func(k string) error {
		switch k {
		case "code":
			c, err := s.peek()
			if err != nil {
				return s.ioError(err)
			}
			if c == '"' || c == 'n' {
				code, err = s.str()
				return err
			}
			v, err := s.number()
			code = strconv.FormatFloat(v, 'f', -1, 64)
			return err
		case "type":
			var err error
			typ, err = s.str()
			return err
		case "message":
			var err error
			msg, err = s.str()
			return err
		}
		_, err := s.skip()
		return err
	})
	if err != nil {
		return "", err
	}
	text := msg
	if typ != "" || code != "" {
		head := typ
		if code != "" {
			head = fmt.Sprintf("%s (%s)", typ, code)
		}
		text = head + ": " + msg
	}
	if text == "" {
		text = "error"
	}
	return text, nil
}

func (d *AIPerfReader) metric(m *metricValue) error {
	s := d.s
	return s.object(func(k string) error { // null reads as no metric
		switch k {
		case "value":
			c, err := s.peek()
			if err != nil {
				return s.ioError(err)
			}
			switch c {
			case '[':
				m.values, err = s.numbers(m.values)
				m.set = err == nil
			case 'n':
				err = s.literal("null")
			default:
				var ok bool
				m.value, ok, err = s.finite()
				m.set = ok
			}
			return err
		case "unit":
			var err error
			m.unit, err = s.str()
			return err
		}
		_, err := s.skip()
		return err
	})
}

// toNs converts a time metric to nanoseconds by its unit.
func (d *AIPerfReader) toNs(m *metricValue, v float64) (time.Duration, error) {
	scale, err := unitScale(m.unit)
	if err != nil {
		return 0, err
	}
	return scaleNs(m, v, scale)
}

// unitScale returns the nanoseconds in one unit.
func unitScale(unit string) (float64, error) {
	switch unit {
	case "ns":
		return 1, nil
	case "us", "µs":
		return 1e3, nil
	case "ms", "":
		return 1e6, nil
	case "s", "sec":
		return 1e9, nil
	}
	return 0, fmt.Errorf("unit %q; want ns, us, ms or s", unit)
}

// scaleNs converts v of metric m, scale nanoseconds a unit, to
// nanoseconds.
func scaleNs(m *metricValue, v, scale float64) (time.Duration, error) {
	ns := v * scale
	if ns < 0 || ns > maxSeconds*1e9 {
		return 0, fmt.Errorf("%v %s is out of range; want a time >= 0", v, m.unit)
	}
	return time.Duration(math.Round(ns)), nil
}

func (d *AIPerfReader) turn(line int) (*pipeline.Turn, error) {
	r := &d.record
	bad := func(field string, err error) error {
		return fmt.Errorf("%w: %s:%d: metrics.%s: %v", ErrFormat, d.s.name, line, field, err)
	}
	id := r.id
	if id == "" {
		id = r.requestNum
	}
	if id == "" {
		id = strconv.Itoa(d.n - 1)
	}
	t := &pipeline.Turn{ID: id, Session: r.session, Status: pipeline.StatusOK}
	if r.start > 0 {
		t.Start = time.Unix(0, r.start)
	}
	switch {
	case r.cancelled, strings.HasPrefix(r.errText, aiperfCancelled+" "):
		t.Status, t.Error = pipeline.StatusCancelled, r.errText
	case r.errText != "":
		t.Status, t.Error = pipeline.StatusError, r.errText
	}
	if r.ttft.set {
		at, err := d.toNs(&r.ttft, r.ttft.value)
		if err != nil {
			return nil, bad("time_to_first_token", err)
		}
		// set field by field in the zeroed slice: the text pointers stay
		// untouched
		chunks := make([]pipeline.Chunk, 1, len(r.icl.values)+1)
		chunks[0].At, chunks[0].Tokens, chunks[0].Textless = at, 1, true
		if r.icl.set {
			scale, unitErr := unitScale(r.icl.unit)
			for j, v := range r.icl.values {
				if unitErr != nil {
					return nil, bad(fmt.Sprintf("inter_chunk_latency[%d]", j), unitErr)
				}
				gap, err := scaleNs(&r.icl, v, scale)
				if err != nil {
					return nil, bad(fmt.Sprintf("inter_chunk_latency[%d]", j), err)
				}
				if at += gap; at > maxSeconds*time.Second {
					return nil, bad(fmt.Sprintf("inter_chunk_latency[%d]", j), fmt.Errorf("the request lasts over %d s", maxSeconds))
				}
				chunks = chunks[:len(chunks)+1]
				c := &chunks[len(chunks)-1]
				c.At, c.Tokens, c.Textless = at, 1, true
			}
		}
		t.Chunks = chunks
	}
	count := func(m *metricValue) (int, error) {
		if !m.set {
			return 0, nil
		}
		if m.value < 0 || m.value != math.Trunc(m.value) || m.value > MaxTurnTokens {
			return 0, fmt.Errorf("%v; want a whole count from 0 to %d", m.value, MaxTurnTokens)
		}
		return int(m.value), nil
	}
	out, err := count(&r.out)
	if err != nil {
		return nil, bad("output_token_count", err)
	}
	reasoning, err := count(&r.reasoning)
	if err != nil {
		return nil, bad("reasoning_token_count", err)
	}
	n := out + reasoning
	if n > MaxTurnTokens {
		return nil, bad("output_token_count", fmt.Errorf("%d output and reasoning tokens; want at most %d in one request", n, MaxTurnTokens))
	}
	if r.osl.set {
		if n, err = count(&r.osl); err != nil {
			return nil, bad("output_sequence_length", err)
		}
	}
	t.OutputTokens = n
	if m := len(t.Chunks); m > 0 {
		if n >= m {
			spreadTokens(t.Chunks, n)
		}
		switch {
		case r.ttfo.set:
			first, err := d.toNs(&r.ttfo, r.ttfo.value)
			if err != nil {
				return nil, bad("time_to_first_output_token", err)
			}
			for k := range t.Chunks {
				t.Chunks[k].Reasoning = t.Chunks[k].At < first
			}
		case reasoning > 0:
			// the content tokens come last: the chunks from the end that
			// hold them are spoken, the rest are thought (a record whose
			// tokens are all reasoning, with a chunk more than tokens,
			// speaks none)
			content := max(n-reasoning, 0)
			if r.out.set {
				content = out
			}
			cum := 0
			for k := len(t.Chunks) - 1; k >= 0; k-- {
				t.Chunks[k].Reasoning = cum >= content
				cum += t.Chunks[k].TokenCount()
			}
		}
	}
	return t, nil
}

// sniffAIPerf recognizes AIPerf's export: a first line holding an object
// with "metadata" and "metrics".
func sniffAIPerf(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	line, _, _ := bytes.Cut(head, []byte("\n"))
	return bytes.Contains(line, []byte(`"metadata"`)) &&
		(bytes.Contains(line, []byte(`"metrics"`)) || bytes.Contains(line, []byte(`"x_request_id"`)) || bytes.Contains(line, []byte(`"request_start_ns"`)))
}
