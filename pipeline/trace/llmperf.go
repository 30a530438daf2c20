package trace

import (
	"bytes"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// ToolLLMPerf names ray-project's llmperf (token_benchmark_ray.py).
const ToolLLMPerf Tool = "llmperf"

// LLMPerfReader reads llmperf's per-request file,
// *_individual_responses.json: a JSON array with one object per request,
// holding ttft_s, end_to_end_latency_s (to the stream's end),
// inter_token_latency_s (llmperf's: the time from the request to its last
// content chunk, divided by number_output_tokens), number_output_tokens
// (counted with a Llama tokenizer), error_code and error_msg.
//
// llmperf keeps no per-chunk times, so no ITL can be known, let alone its
// tail: a turn's tokens are spread evenly from its first token, at ttft_s,
// to its last, at inter_token_latency_s x number_output_tokens, as
// text-less one-token chunks (GuideLLM spaces the tokens it did not time
// the same way). Requests with an error_code are turns with StatusError.
type LLMPerfReader struct {
	s     *scanner
	state int
	n     int
	sticky
	exact exactTimes
	rec   llmperfRecord
}

type llmperfRecord struct {
	ttft, e2e, itl    float64
	hasTTFT, hasE2E   bool
	tokens            int64
	errCode, errMsg   string
	hasErr, hasTokens bool
}

// NewLLMPerfReader returns a reader of r; name labels errors.
func NewLLMPerfReader(r io.Reader, name string) *LLMPerfReader {
	return &LLMPerfReader{s: newScanner(r, name, 0, 64<<10)}
}

var (
	_ ToolDecoder = (*LLMPerfReader)(nil)
	_ exactTimer  = (*LLMPerfReader)(nil)
)

// Tool names the tool that wrote the file.
func (d *LLMPerfReader) Tool() Tool { return ToolLLMPerf }

// Run is always 0: the file holds one run.
func (d *LLMPerfReader) Run() int { return 0 }

// ToolSummaries returns nil: llmperf saves its summary in another file
// (*_summary.json).
func (d *LLMPerfReader) ToolSummaries() []ToolSummary { return nil }

// exactTimes gives the request Next returned last as the file has it.
func (d *LLMPerfReader) exactTimes() *exactTimes { return &d.exact }

// Next returns the next request as a turn, or io.EOF after the last.
func (d *LLMPerfReader) Next() (*pipeline.Turn, error) { return d.read(d.s.name, d.next) }

func (d *LLMPerfReader) next() (*pipeline.Turn, error) {
	s := d.s
	if d.state == 0 {
		s.where = func() string { return "top level" }
		if err := s.expect('[', "llmperf's individual responses (a JSON array)"); err != nil {
			return nil, err
		}
		d.state = 1
	}
	more, err := s.more(d.n)
	if err != nil {
		return nil, err
	}
	if !more {
		if err := s.end("the array of responses"); err != nil {
			return nil, err
		}
		if d.n == 0 {
			return nil, fmt.Errorf("%w: %s: no responses; want llmperf's individual responses", ErrFormat, s.name)
		}
		return nil, io.EOF
	}
	i, line := d.n, s.line
	d.n++
	if err := d.parse(i); err != nil {
		return nil, err
	}
	return d.turn(i, line)
}

func (d *LLMPerfReader) parse(i int) error {
	s, r := d.s, &d.rec
	*r = llmperfRecord{}
	key := ""
	s.where = func() string { return fmt.Sprintf("[%d].%s", i, key) }
	defer func() { s.where = nil }()
	seconds := func(v *float64, has *bool) error {
		f, ok, err := s.finite()
		if err == nil && ok && (f < 0 || f > maxSeconds) {
			err = s.errorf("%v s is out of range; want 0 to %d s", f, maxSeconds)
		}
		*v, *has = f, ok
		return err
	}
	return s.object(func(k string) error {
		key = k
		var err error
		switch k {
		case "ttft_s":
			err = seconds(&r.ttft, &r.hasTTFT)
		case "end_to_end_latency_s":
			err = seconds(&r.e2e, &r.hasE2E)
		case "inter_token_latency_s":
			var has bool
			err = seconds(&r.itl, &has)
		case "number_output_tokens":
			r.tokens, r.hasTokens, err = s.integer()
			if err == nil && (r.tokens < 0 || r.tokens > MaxTurnTokens) {
				err = s.errorf("%d tokens; want a count from 0 to %d", r.tokens, MaxTurnTokens)
			}
		case "error_code":
			c, perr := s.peek()
			if perr != nil {
				return s.ioError(perr)
			}
			switch c {
			case 'n':
				err = s.literal("null")
			case '"':
				r.errCode, err = s.str()
				r.hasErr = true
			default:
				var v float64
				v, err = s.number()
				r.errCode, r.hasErr = strconv.FormatFloat(v, 'f', -1, 64), true
			}
		case "error_msg":
			r.errMsg, err = s.str()
		default:
			_, err = s.skip()
		}
		return err
	})
}

func (d *LLMPerfReader) turn(i, line int) (*pipeline.Turn, error) {
	r := &d.rec
	t := &pipeline.Turn{ID: strconv.Itoa(i), Status: pipeline.StatusOK, OutputTokens: int(r.tokens)}
	d.exact = exactTimes{ttft: r.ttft, latency: r.e2e, hasLatency: r.hasE2E, perToken: r.itl, itls: d.exact.itls[:0]}
	if r.hasErr {
		t.Status, t.Error = pipeline.StatusError, strings.TrimSpace(r.errCode+" "+r.errMsg)
		return t, nil
	}
	if !r.hasTTFT || r.tokens == 0 {
		return t, nil // no content arrived: nothing to speak
	}
	first := time.Duration(r.ttft * 1e9)
	lastS := r.itl * float64(r.tokens) // the last content chunk
	if lastS > maxSeconds {
		return nil, fmt.Errorf("%w: %s:%d: [%d]: the last token at %.0f s (inter_token_latency_s x number_output_tokens); want at most %d s",
			ErrFormat, d.s.name, line, i, lastS, maxSeconds)
	}
	last := time.Duration(lastS * 1e9)
	if last < first {
		if r.itl != 0 {
			return nil, fmt.Errorf("%w: %s:%d: [%d]: the last token at %v (inter_token_latency_s x number_output_tokens) is before the first at %v",
				ErrFormat, d.s.name, line, i, last, first)
		}
		last = first // llmperf's 0 for a count it could not take
	}
	n := int(r.tokens)
	t.Chunks = make([]pipeline.Chunk, n)
	for k := range t.Chunks {
		at := first
		if n > 1 {
			at += time.Duration(float64(last-first) * float64(k) / float64(n-1))
		}
		t.Chunks[k] = pipeline.Chunk{At: at, Tokens: 1, Textless: true}
	}
	return t, nil
}

// sniffLLMPerf recognizes llmperf's individual responses: an array whose
// first object has llmperf's keys.
func sniffLLMPerf(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '[' {
		return false
	}
	return bytes.Contains(head, []byte(`"ttft_s"`)) && bytes.Contains(head, []byte(`"end_to_end_latency_s"`))
}
