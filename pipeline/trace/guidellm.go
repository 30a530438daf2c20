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

// ToolGuideLLM names GuideLLM (vllm-project/guidellm), whose benchmark
// report, benchmarks.json, keeps every request.
const ToolGuideLLM Tool = "guidellm"

// GuideLLMReader reads GuideLLM's benchmark report, benchmarks.json: an
// object whose "benchmarks" each hold "requests" grouped by status
// ("successful", "incomplete", "errored") and "metrics" (each a
// distribution by status: mean, median, std_dev, min, max, percentiles
// p001 to p999). A request keeps its timings in seconds since the epoch
// (info.timings: request_start, first_token_iteration,
// first_output_token_iteration, last_token_iteration, token_iterations,
// request_end; GuideLLM 0.2 and 0.3 kept start_time, first_token_time,
// last_token_time, end_time), its output_tokens and its output text.
//
// GuideLLM times the first and the last token iteration and counts the
// iterations, but not when each came: as GuideLLM itself does
// (output_tokens_timings), the first iteration is a chunk of one token at
// its time and the others are spaced evenly up to the last, sharing the
// other tokens; so no ITL tail is measured. The text is spread over the
// chunks as for vLLM. Chunks before first_output_token_iteration are
// reasoning. Incomplete requests are turns with StatusCancelled, errored
// ones StatusError. It streams: one request is held at a time.
type GuideLLMReader struct {
	s       *scanner
	state   int
	benches topList // the benchmarks; benches.i the one being read
	n       int
	sticky
	// where the reader is: the status array being read and its index
	status      string
	firstStatus bool
	req         int
	summary     []ToolSummary
	rec         guidellmRecord
	exact       exactTimes
	ends        []int
}

type guidellmRecord struct {
	id, text, errText                   string
	start, first, firstOutput, last     float64
	hasStart, hasFirst, hasFirstOut     bool
	hasLast                             bool
	iterations, tokens                  int64
	ttftMs, itlMs, tpotMs, latency      float64
	hasTTFT, hasITL, hasTPOT, hasLatNum bool
}

// NewGuideLLMReader returns a reader of r; name labels errors.
func NewGuideLLMReader(r io.Reader, name string) *GuideLLMReader {
	return &GuideLLMReader{s: newScanner(r, name, 0, 256<<10),
		benches: newTopList("a GuideLLM benchmark report (a JSON object)", "benchmarks", "GuideLLM's benchmarks.json", "benchmarks", "the report object")}
}

var (
	_ ToolDecoder = (*GuideLLMReader)(nil)
	_ exactTimer  = (*GuideLLMReader)(nil)
)

// Tool names the tool that wrote the file.
func (d *GuideLLMReader) Tool() Tool { return ToolGuideLLM }

// Run returns the benchmark of the turn Next returned last.
func (d *GuideLLMReader) Run() int { return max(d.benches.i, 0) }

// ToolSummaries returns the metrics GuideLLM saved for each benchmark,
// complete once Next has returned io.EOF.
func (d *GuideLLMReader) ToolSummaries() []ToolSummary { return d.summary }

// exactTimes gives GuideLLM's own per-request figures of the turn Next
// returned last: ttft and latency in seconds, perToken its
// time_per_output_token, itls its inter_token_latency (one value).
func (d *GuideLLMReader) exactTimes() *exactTimes { return &d.exact }

// The reader's place in the file.
const (
	glBenchmarks = iota // before a benchmark (the first: before the top object)
	glBenchmark         // inside a benchmark's keys
	glStatuses          // inside its requests object
	glRequests          // inside one status's array
	glDone
)

// Next returns the next request as a turn, or io.EOF after the last.
func (d *GuideLLMReader) Next() (*pipeline.Turn, error) { return d.read(d.s.name, d.next) }

func (d *GuideLLMReader) next() (*pipeline.Turn, error) {
	s := d.s
	for {
		switch d.state {
		case glBenchmarks:
			if more, err := d.benches.next(s); !more {
				d.state = glDone
				if err != nil {
					return nil, err
				}
				continue
			}
			d.summary = append(d.summary, ToolSummary{Run: d.benches.i, Completed: -1, Values: map[string]float64{}})
			if err := s.expect('{', "a benchmark object"); err != nil {
				return nil, err
			}
			d.state = glBenchmark
			if err := d.benchmarkKeys(true); err != nil {
				return nil, err
			}
		case glBenchmark:
			if err := d.benchmarkKeys(false); err != nil {
				return nil, err
			}
		case glStatuses:
			bench := d.benches.i
			s.where = func() string { return fmt.Sprintf("benchmarks[%d].requests", bench) }
			c, err := s.peek()
			if err != nil {
				return nil, s.ioError(err)
			}
			switch {
			case c == '}':
				s.readByte()
				d.state = glBenchmark
				continue
			case c == ',' && !d.firstStatus:
				s.readByte()
			case c == '"' && d.firstStatus:
			default:
				return nil, s.errorf("want a status of requests, got %s", describe(c))
			}
			d.firstStatus = false
			if d.status, err = s.str(); err != nil {
				return nil, err
			}
			if err := s.expect(':', "':' after an object key"); err != nil {
				return nil, err
			}
			if isNull, err := s.null(); isNull || err != nil {
				if err != nil {
					return nil, err
				}
				continue
			}
			if err := s.expect('[', "an array of requests"); err != nil {
				return nil, err
			}
			d.req = -1
			d.state = glRequests
		case glRequests:
			more, err := s.more(d.req + 1)
			if err != nil {
				return nil, err
			}
			if !more {
				d.state = glStatuses
				continue
			}
			d.req++
			return d.request()
		default:
			if d.n == 0 && len(d.summary) == 0 {
				return nil, fmt.Errorf("%w: %s: the report has no benchmarks", ErrFormat, s.name)
			}
			return nil, io.EOF
		}
	}
}

// benchmarkKeys reads a benchmark's keys up to its requests (the state
// becomes glStatuses) or its end (glBenchmarks), keeping its metrics.
func (d *GuideLLMReader) benchmarkKeys(first bool) error {
	s := d.s
	bench := d.benches.i
	for {
		c, err := s.peek()
		if err != nil {
			return s.ioError(err)
		}
		switch {
		case c == '}':
			s.readByte()
			d.state = glBenchmarks
			return nil
		case c == ',' && !first:
			s.readByte()
		case c == '"' && first:
		default:
			return s.errorf("want a key of benchmarks[%d], got %s", bench, describe(c))
		}
		first = false
		k, err := s.str()
		if err != nil {
			return err
		}
		if err := s.expect(':', "':' after an object key"); err != nil {
			return err
		}
		switch k {
		case "requests":
			if err := s.expect('{', "requests by status (an object)"); err != nil {
				return err
			}
			d.state, d.firstStatus = glStatuses, true
			return nil
		case "metrics":
			s.where = func() string { return fmt.Sprintf("benchmarks[%d].metrics", bench) }
			if err := d.metrics(&d.summary[len(d.summary)-1]); err != nil {
				return err
			}
		default:
			if _, err := s.skip(); err != nil {
				return err
			}
		}
	}
}

// guidellmPercentile turns GuideLLM's percentile keys (p001 is the 0.1th,
// p05 the 5th, p999 the 99.9th) into ours.
func guidellmPercentile(k string) string {
	switch k {
	case "p001":
		return "p0.1"
	case "p999":
		return "p99.9"
	}
	if len(k) < 2 || k[0] != 'p' {
		return ""
	}
	if n, err := strconv.Atoi(k[1:]); err == nil && n >= 0 && n <= 100 {
		return "p" + strconv.Itoa(n)
	}
	return ""
}

// metrics keeps the successful requests' distributions of the time
// metrics GuideLLM saved, in ms, as "time_to_first_token_ms.p50" and so on.
func (d *GuideLLMReader) metrics(sum *ToolSummary) error {
	s := d.s
	return s.object(func(metric string) error {
		scale := 1.0
		switch metric {
		case "time_to_first_token_ms", "inter_token_latency_ms", "time_per_output_token_ms":
		case "request_latency":
			scale = 1000 // seconds
		default:
			_, err := s.skip()
			return err
		}
		return s.object(func(status string) error {
			if status != "successful" {
				_, err := s.skip()
				return err
			}
			return s.object(func(stat string) error {
				put := func(key string) error {
					v, ok, err := s.finite()
					if ok && key != "" {
						sum.Values[metric+"."+key] = v * scale
					}
					return err
				}
				switch stat {
				case "mean", "median", "min", "max":
					return put(stat)
				case "std_dev":
					return put("std")
				case "count":
					if metric == "request_latency" {
						v, ok, err := s.integer()
						if ok {
							sum.Completed = int(v)
						}
						return err
					}
				case "percentiles":
					return s.object(func(p string) error { return put(guidellmPercentile(p)) })
				}
				_, err := s.skip()
				return err
			})
		})
	})
}

func (d *GuideLLMReader) request() (*pipeline.Turn, error) {
	s, r := d.s, &d.rec
	bench, status, req := d.benches.i, d.status, d.req
	*r = guidellmRecord{}
	key := ""
	s.where = func() string { return fmt.Sprintf("benchmarks[%d].requests.%s[%d]%s", bench, status, req, key) }
	line := s.line
	secs := func(v *float64, has *bool) error {
		f, ok, err := s.finite()
		*v, *has = f, ok
		return err
	}
	timings := func(k string) error {
		switch k {
		case "request_start":
			return secs(&r.start, &r.hasStart)
		case "first_token_iteration":
			return secs(&r.first, &r.hasFirst)
		case "first_output_token_iteration":
			return secs(&r.firstOutput, &r.hasFirstOut)
		case "last_token_iteration":
			return secs(&r.last, &r.hasLast)
		case "token_iterations":
			v, _, err := s.integer()
			r.iterations = v
			return err
		}
		_, err := s.skip()
		return err
	}
	err := s.object(func(k string) error {
		key = "." + k
		var err error
		switch k {
		case "request_id":
			r.id, err = s.str()
		case "output":
			r.text, err = s.str()
		case "info":
			err = s.object(func(k string) error {
				switch k {
				case "timings":
					return s.object(timings)
				case "error":
					var e string
					c, err := s.peek()
					if err != nil {
						return s.ioError(err)
					}
					if c != '"' && c != 'n' {
						_, err := s.skip()
						return err
					}
					e, err = s.str()
					r.errText = e
					return err
				}
				_, err := s.skip()
				return err
			})
		case "output_metrics":
			err = s.object(func(k string) error {
				if k == "total_tokens" {
					v, _, err := s.integer()
					if r.tokens == 0 {
						r.tokens = v
					}
					return err
				}
				_, err := s.skip()
				return err
			})
		case "output_tokens":
			var ok bool
			var v int64
			if v, ok, err = s.integer(); ok {
				r.tokens = v
			}
		// GuideLLM 0.2 and 0.3
		case "start_time":
			err = secs(&r.start, &r.hasStart)
		case "first_token_time":
			err = secs(&r.first, &r.hasFirst)
		case "last_token_time":
			err = secs(&r.last, &r.hasLast)
		// its own per-request figures
		case "time_to_first_token_ms":
			err = secs(&r.ttftMs, &r.hasTTFT)
		case "inter_token_latency_ms":
			err = secs(&r.itlMs, &r.hasITL)
		case "time_per_output_token_ms":
			err = secs(&r.tpotMs, &r.hasTPOT)
		case "request_latency":
			err = secs(&r.latency, &r.hasLatNum)
		default:
			_, err = s.skip()
		}
		return err
	})
	key = ""
	if err != nil {
		return nil, err
	}
	s.where = nil
	return d.turn(bench, status, req, line)
}

func (d *GuideLLMReader) turn(bench int, status string, req, line int) (*pipeline.Turn, error) {
	r := &d.rec
	bad := func(format string, args ...any) error {
		return fmt.Errorf("%w: %s:%d: benchmarks[%d].requests.%s[%d]: %s", ErrFormat, d.s.name, line, bench, status, req, fmt.Sprintf(format, args...))
	}
	d.n++
	id := r.id
	if id == "" {
		id = strconv.Itoa(d.n - 1)
	}
	if bench > 0 {
		id = "bench" + strconv.Itoa(bench+1) + "-" + id
	}
	t := &pipeline.Turn{ID: id, Status: pipeline.StatusOK}
	switch status {
	case "successful":
	case "incomplete":
		t.Status, t.Error = pipeline.StatusCancelled, "incomplete"
	default:
		t.Status, t.Error = pipeline.StatusError, r.errText
		if t.Error == "" {
			t.Error = status
		}
	}
	if r.tokens < 0 || r.tokens > MaxTurnTokens {
		return nil, bad("output_tokens %d; want a count from 0 to %d", r.tokens, MaxTurnTokens)
	}
	t.OutputTokens = int(r.tokens)
	if r.hasStart && r.start > 1e9 && r.start < 1e11 {
		sec := math.Floor(r.start)
		t.Start = time.Unix(int64(sec), int64(math.Round((r.start-sec)*1e6))*1000)
	}
	// GuideLLM's own figures, as its metrics take them
	d.exact = exactTimes{ttft: r.ttftMs / 1000, latency: r.latency, hasLatency: r.hasLatNum, perToken: r.tpotMs / 1000, itls: append(d.exact.itls[:0], r.itlMs/1000)}
	if !r.hasStart || !r.hasFirst || r.tokens == 0 {
		return t, nil // no token timed: nothing to speak
	}
	since := func(ts float64, what string) (time.Duration, error) {
		v := ts - r.start
		if v < 0 || v > maxSeconds {
			return 0, bad("%s %.6f is %.6f s from request_start; want 0 to %d s", what, ts, v, maxSeconds)
		}
		return time.Duration(math.Round(v * 1e9)), nil
	}
	first, err := since(r.first, "first_token_iteration")
	if err != nil {
		return nil, err
	}
	last := first
	if r.hasLast {
		if last, err = since(r.last, "last_token_iteration"); err != nil {
			return nil, err
		}
		if last < first {
			return nil, bad("last_token_iteration is before first_token_iteration")
		}
	}
	iters := int(r.iterations)
	if iters <= 0 || iters > int(r.tokens) {
		iters = int(r.tokens) // GuideLLM 0.2: one token an iteration
	}
	if iters > MaxTurnTokens {
		return nil, bad("%d token iterations; want at most %d", iters, MaxTurnTokens)
	}
	chunks := make([]pipeline.Chunk, iters)
	chunks[0] = pipeline.Chunk{At: first, Tokens: 1, Textless: true}
	for k := 1; k < iters; k++ {
		chunks[k] = pipeline.Chunk{At: first + time.Duration(float64(last-first)*float64(k)/float64(iters-1)), Tokens: 1, Textless: true}
	}
	if iters == 1 {
		chunks[0].At, chunks[0].Tokens = last, int(r.tokens)
	} else {
		spreadTokens(chunks[1:], int(r.tokens)-1)
	}
	t.Chunks = chunks
	if r.text != "" {
		d.ends = spreadTextInto(t.Chunks, r.text, d.ends)
	}
	if r.hasFirstOut && r.firstOutput > r.first {
		firstOut, err := since(r.firstOutput, "first_output_token_iteration")
		if err != nil {
			return nil, err
		}
		for k := range t.Chunks {
			t.Chunks[k].Reasoning = t.Chunks[k].At < firstOut
		}
	}
	return t, nil
}

// sniffGuideLLM recognizes GuideLLM's report: an object with "benchmarks"
// and GuideLLM's own keys.
func sniffGuideLLM(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' || !bytes.Contains(head, []byte(`"benchmarks"`)) {
		return false
	}
	for _, k := range []string{`"guidellm_version"`, `"generative_benchmark"`, `"time_to_first_token_ms"`, `"first_token_iteration"`} {
		if bytes.Contains(head, []byte(k)) {
			return true
		}
	}
	return strings.Contains(string(head[:min(len(head), 4096)]), "guidellm")
}
