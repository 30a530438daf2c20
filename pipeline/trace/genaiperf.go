package trace

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// GenAIPerfReader reads GenAI-Perf's profile_export.json: one object whose
// "experiments" each hold "requests", each with the request's "timestamp",
// its "response_timestamps" (nanoseconds since the epoch) and its
// "response_outputs" (the raw server-sent events of each response). It
// streams: one request is held at a time.
//
// Each response is one chunk, arriving at its timestamp minus the
// request's. Its text is the content of the events it holds (an OpenAI
// chat delta's content, a completion's text); a response whose events
// carry only reasoning_content is a Reasoning chunk; one with no text at
// all (the role-only first delta, the usage chunk, [DONE]) is dropped, as
// GenAI-Perf drops it, and counted in EmptyChunks. A usage chunk's
// completion_tokens becomes Turn.OutputTokens; GenAI-Perf itself counts
// tokens with the model's tokenizer, which underrun does not have, so
// without usage the count is one token per chunk.
type GenAIPerfReader struct {
	s     *scanner
	state int
	exps  topList // the experiments; exps.i the one being read
	req   int
	n     int
	sticky
	// EmptyChunks counts the responses dropped for carrying no text.
	EmptyChunks int

	stamps    []int64
	responses []response
	ev        scanner
	cb, rb    []byte
}

// response is what one recorded response carries.
type response struct {
	content, reasoning string
	usage              int
	err                error
}

// NewGenAIPerfReader returns a reader of r; name labels errors.
func NewGenAIPerfReader(r io.Reader, name string) *GenAIPerfReader {
	return &GenAIPerfReader{s: newScanner(r, name, 0, 256<<10),
		exps: newTopList("a GenAI-Perf profile export (a JSON object)", "experiments", "a GenAI-Perf profile_export.json", "experiments", "the profile export object")}
}

var _ ToolDecoder = (*GenAIPerfReader)(nil)

// Tool names the tool that wrote the file.
func (d *GenAIPerfReader) Tool() Tool { return ToolGenAIPerf }

// Run returns the experiment of the turn Next returned last.
func (d *GenAIPerfReader) Run() int { return max(d.exps.i, 0) }

// ToolSummaries returns nil: GenAI-Perf saves its summary in another file
// (profile_export_genai_perf.json).
func (d *GenAIPerfReader) ToolSummaries() []ToolSummary { return nil }

// The reader's place in the file.
const (
	gpExperiments = iota // before an experiment (the first: before the top object)
	gpRequests           // inside an experiment's requests array
	gpDone
)

// Next returns the next request as a turn, or io.EOF after the last.
func (d *GenAIPerfReader) Next() (*pipeline.Turn, error) { return d.read(d.s.name, d.next) }

func (d *GenAIPerfReader) next() (*pipeline.Turn, error) {
	s := d.s
	for {
		switch d.state {
		case gpExperiments:
			if more, err := d.exps.next(s); !more {
				d.state = gpDone
				if err != nil {
					return nil, err
				}
				continue
			}
			d.req = -1
			exp := d.exps.i
			s.where = func() string { return fmt.Sprintf("experiments[%d]", exp) }
			if err := s.expect('{', "an experiment object"); err != nil {
				return nil, err
			}
			found, err := d.s.keysUntil("requests", true)
			if err != nil {
				return nil, err
			}
			if !found {
				continue // an experiment without requests
			}
			if err := s.expect('[', "an array of requests"); err != nil {
				return nil, err
			}
			d.state = gpRequests
		case gpRequests:
			more, err := s.more(d.req + 1)
			if err != nil {
				return nil, err
			}
			if !more {
				if _, err := d.s.keysUntil("", false); err != nil { // the rest of the experiment
					return nil, err
				}
				d.state = gpExperiments
				continue
			}
			d.req++
			return d.request()
		default:
			if d.n == 0 {
				return nil, fmt.Errorf("%w: %s: the profile export has no requests", ErrFormat, s.name)
			}
			return nil, io.EOF
		}
	}
}

func (d *GenAIPerfReader) request() (*pipeline.Turn, error) {
	s := d.s
	exp, req := d.exps.i, d.req
	// the field being read: key (once one is read), and index within
	// it (when >= 0); the name is put together only for an error
	key, hasKey, index := "", false, -1
	s.where = func() string {
		field := ""
		if hasKey {
			field = "." + key
		}
		if index >= 0 {
			field += "[" + strconv.Itoa(index) + "]"
		}
		return fmt.Sprintf("experiments[%d].requests[%d]%s", exp, req, field)
	}
	var start int64
	hasStart := false
	d.stamps, d.responses = d.stamps[:0], d.responses[:0]
	line := s.line
	err := s.object(func(k string) error {
		key, hasKey, index = k, true, -1
		var err error
		switch k {
		case "timestamp":
			start, hasStart, err = s.integer()
		case "response_timestamps":
			err = s.array(func(i int) error {
				key, index = "response_timestamps", i
				v, ok, err := s.integer()
				if err == nil && !ok {
					err = s.errorf("want a timestamp in nanoseconds, got null")
				}
				if err == nil && len(d.stamps) >= MaxTurnTokens {
					err = s.errorf("more than %d responses in one request; want at most one per token", MaxTurnTokens)
				}
				d.stamps = append(d.stamps, v)
				return err
			})
		case "response_outputs":
			err = s.array(func(i int) error {
				key, index = "response_outputs", i
				c, err := s.peek()
				if err != nil {
					return s.ioError(err)
				}
				if len(d.responses) >= MaxTurnTokens {
					return s.errorf("more than %d responses in one request; want at most one per token", MaxTurnTokens)
				}
				d.cb, d.rb = d.cb[:0], d.rb[:0]
				var r response
				if c == '"' {
					var b []byte
					if b, err = s.strBytes(); err == nil {
						r.usage, r.err = d.parseResponse(b)
					}
				} else {
					err = s.object(func(k string) error {
						if k == "response" || k == "text_output" {
							b, err := s.strBytes()
							if err == nil {
								u, perr := d.parseResponse(b)
								r.usage = max(r.usage, u)
								if r.err == nil {
									r.err = perr
								}
							}
							return err
						}
						_, err := s.skip()
						return err
					})
				}
				r.content, r.reasoning = string(d.cb), string(d.rb)
				d.responses = append(d.responses, r)
				return err
			})
		default:
			_, err = s.skip()
		}
		return err
	})
	s.where = nil
	if err != nil {
		return nil, err
	}
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: experiments[%d].requests[%d]: %s", ErrFormat, s.name, line, exp, req, fmt.Sprintf(format, args...))
	}
	if !hasStart || start < 0 {
		return nil, bad(`no "timestamp" (or a negative one); want the request's send time in nanoseconds`)
	}
	if err := checkStart(start); err != nil {
		return nil, bad("timestamp: %v", err)
	}
	if len(d.responses) > 0 && len(d.responses) != len(d.stamps) {
		return nil, bad(`"response_timestamps" has %d entries but "response_outputs" has %d; want one per response`, len(d.stamps), len(d.responses))
	}
	d.n++
	id := strconv.Itoa(req)
	if exp > 0 {
		id = "exp" + strconv.Itoa(exp+1) + "-" + id
	}
	t := &pipeline.Turn{ID: id, Status: pipeline.StatusOK, Start: time.Unix(0, start)}
	var prev time.Duration
	for i, ts := range d.stamps {
		if ts < start || ts-start > maxSeconds*1e9 {
			return nil, bad("response %d at %d ns is before the request's timestamp %d, or a year after", i, ts, start)
		}
		at := time.Duration(ts - start)
		if at < prev {
			return nil, bad("response %d at %d ns is before the response before it; want arrival order", i, ts)
		}
		prev = at
		c := pipeline.Chunk{At: at, Tokens: 1}
		if len(d.responses) == 0 {
			c.Textless = true
			t.Chunks = append(t.Chunks, c)
			continue
		}
		r := &d.responses[i]
		if r.err != nil {
			return nil, bad("response_outputs[%d]: %v", i, r.err)
		}
		if r.usage > 0 {
			t.OutputTokens = r.usage
		}
		switch {
		case r.content != "":
			c.Text = r.content
		case r.reasoning != "":
			c.Text, c.Reasoning = r.reasoning, true
		default:
			d.EmptyChunks++
			continue
		}
		t.Chunks = append(t.Chunks, c)
	}
	return t, nil
}

// parseResponse reads the text a response carries into d.cb (content) and
// d.rb (reasoning): the events in it ("data: {...}" lines; GenAI-Perf may
// record several events as one response), each an OpenAI-compatible
// streaming chunk (a chat delta's content or reasoning_content, a
// completion's text) or a Triton text_output; it returns the completion
// token count of a usage chunk.
func (d *GenAIPerfReader) parseResponse(resp []byte) (usage int, err error) {
	trimmed := bytes.TrimSpace(resp)
	if len(trimmed) > 0 && trimmed[0] == '{' {
		return d.parseEvent(trimmed)
	}
	for len(resp) > 0 {
		line := resp
		if i := bytes.IndexByte(resp, '\n'); i >= 0 {
			line, resp = resp[:i], resp[i+1:]
		} else {
			resp = nil
		}
		payload, ok := bytes.CutPrefix(bytes.TrimSpace(line), []byte("data:"))
		if !ok {
			continue // event:, id:, comments and blank lines
		}
		payload = bytes.TrimSpace(payload)
		if len(payload) == 0 || string(payload) == "[DONE]" {
			continue
		}
		u, err := d.parseEvent(payload)
		if err != nil {
			return 0, err
		}
		usage = max(usage, u)
	}
	return usage, nil
}

// parseEvent reads one streaming chunk.
func (d *GenAIPerfReader) parseEvent(payload []byte) (usage int, err error) {
	s := &d.ev
	s.reset(payload)
	s.name = "event"
	text := func(dst *[]byte) error {
		c, err := s.peek()
		if err != nil {
			return s.ioError(err)
		}
		if c != '"' && c != 'n' { // content given as parts, not text
			_, err := s.skip()
			return err
		}
		b, err := s.strBytes()
		*dst = append(*dst, b...)
		return err
	}
	err = s.object(func(k string) error {
		switch k {
		case "choices":
			return s.array(func(i int) error {
				if i > 0 {
					_, err := s.skip()
					return err
				}
				return s.object(func(k string) error {
					switch k {
					case "delta":
						return s.object(func(k string) error {
							switch k {
							case "content":
								return text(&d.cb)
							case "reasoning_content", "reasoning":
								return text(&d.rb)
							}
							_, err := s.skip()
							return err
						})
					case "text":
						return text(&d.cb)
					}
					_, err := s.skip()
					return err
				})
			})
		case "text_output":
			return text(&d.cb)
		case "usage":
			return s.object(func(k string) error {
				if k == "completion_tokens" {
					n, _, err := s.integer()
					if err == nil && (n < 0 || n > MaxTurnTokens) {
						err = s.errorf("completion_tokens %d; want a count from 0 to %d", n, MaxTurnTokens)
					}
					usage = int(n)
					return err
				}
				_, err := s.skip()
				return err
			})
		}
		_, err := s.skip()
		return err
	})
	if err != nil {
		return 0, fmt.Errorf("not an OpenAI-compatible JSON event: %v", err)
	}
	if c, err := s.peek(); err != io.EOF {
		return 0, fmt.Errorf("not an OpenAI-compatible JSON event: %s after the event", describe(c))
	}
	return usage, nil
}

// sniffGenAIPerf recognizes GenAI-Perf's export: an object with
// "experiments" and its requests' "response_timestamps".
func sniffGenAIPerf(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' {
		return false
	}
	return bytes.Contains(head, []byte(`"experiments"`)) &&
		(bytes.Contains(head, []byte(`"response_timestamps"`)) || bytes.Contains(head, []byte(`"requests"`)))
}
