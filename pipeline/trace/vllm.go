package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"os"
	"strconv"
	"time"
	"unsafe"

	"github.com/speech-pipeline/underrun/pipeline"
)

// The per-request arrays of a vLLM or SGLang result: one entry per
// request, in the same order.
const (
	colTTFT   = "ttfts"
	colITL    = "itls"
	colOut    = "output_lens"
	colText   = "generated_texts"
	colErr    = "errors"
	colStart  = "start_times"
	colLat    = "latencies"
	colsCount = 7
)

var columnNames = [colsCount]string{colTTFT, colITL, colOut, colText, colErr, colStart, colLat}

type columnIndex struct {
	present bool
	off     int64
	line    int
	n       int
}

type runIndex struct {
	line    int
	cols    [colsCount]columnIndex
	summary ToolSummary
	n       int
	model   string             // model_id: the model the benchmark asked for
	op      pipeline.Operation // what its backend (endpoint_type) asked of the server
}

// ColumnarReader reads the result files of vLLM's `bench serve
// --save-result --save-detailed` and SGLang's `bench_serving
// --output-details`: objects whose per-request data are parallel arrays
// (ttfts, itls, output_lens, generated_texts, errors, start_times; each
// optional) beside the saved summary (mean_ttft_ms, p99_itl_ms, ...).
//
// Memory stays bounded by the largest request, not the file: a first pass
// finds where each array starts (skipping, not keeping, their contents),
// and the second pass reads all arrays side by side, one request at a
// time. A file is read in place; a stream that cannot be read at offsets
// (a pipe) is first copied to a temporary file, removed at the end.
//
// Turns are rebuilt exactly as the tool measured them: the first chunk at
// ttft, each next one an ITL later. Failed requests (a non-empty error)
// are turns with StatusError, keeping whatever chunks they had. output_lens
// become Turn.OutputTokens (the count the tool divides TPOT by), a run's
// model_id every turn's Model, and the endpoint its backend (vLLM's
// endpoint_type, SGLang's backend) sends requests to every turn's
// Operation. The files
// keep the generated text only whole, not per chunk: it is cut into
// words and spread evenly over the chunks in order, so the speech model hears the real words
// at about the times they came; without text the chunks are text-less
// tokens. SGLang stores the gap before a chunk of k tokens as k equal
// ITLs: consecutive bit-identical ITLs are joined back into one chunk of k
// tokens.
type ColumnarReader struct {
	tool   Tool
	name   string
	src    io.ReaderAt
	tmp    *os.File
	runs   []runIndex
	multi  bool
	run    int
	i      int
	cur    [colsCount]*scanner
	itl    []int64   // the ITLs of the request being read, in nanoseconds
	keys   []decimal // and their exact decimals
	ttft   decimal   // the request's TTFT and latency, exactly
	lat    decimal
	hasLat bool
	exact  exactTimes // the request's times as floats, once asked for
	ends   []int      // where the words of the request's text end
	err    error
	opened bool
	input  io.Reader
}

// NewVLLMReader returns a reader of a vLLM bench serve result file.
func NewVLLMReader(r io.Reader, name string) (*ColumnarReader, error) {
	return &ColumnarReader{tool: ToolVLLM, name: name, input: r}, nil
}

var (
	_ ToolDecoder = (*ColumnarReader)(nil)
	_ io.Closer   = (*ColumnarReader)(nil)
)

// Tool names the tool that wrote the file.
func (d *ColumnarReader) Tool() Tool { return d.tool }

// Run returns the run (line, for SGLang) of the turn Next returned last.
func (d *ColumnarReader) Run() int { return d.run }

// ToolSummaries returns the saved summary of every run that has one.
func (d *ColumnarReader) ToolSummaries() []ToolSummary {
	var out []ToolSummary
	for _, r := range d.runs {
		if len(r.summary.Values) > 0 || r.summary.Completed >= 0 {
			out = append(out, r.summary)
		}
	}
	return out
}

// Close removes the temporary copy of a piped input, if one was made.
func (d *ColumnarReader) Close() error {
	if d.tmp == nil {
		return nil
	}
	name := d.tmp.Name()
	err := errors.Join(d.tmp.Close(), os.Remove(name))
	d.tmp = nil
	return err
}

// open makes the input readable at offsets and indexes it.
func (d *ColumnarReader) open() error {
	d.opened = true
	if ra, ok := d.input.(io.ReaderAt); ok {
		var probe [1]byte
		if _, err := ra.ReadAt(probe[:], 0); err == nil || err == io.EOF {
			d.src = ra
		}
	}
	if d.src == nil {
		f, err := os.CreateTemp("", "underrun-"+string(d.tool)+"-*.json")
		if err != nil {
			return fmt.Errorf("%s: a piped %s file is copied to a temporary file first: %w", d.name, d.tool, err)
		}
		d.tmp = f
		if _, err := io.Copy(f, d.input); err != nil {
			return fmt.Errorf("%s: %w", d.name, err)
		}
		d.src = f
	}
	return d.index()
}

// hint says how to save a run with the per-request arrays.
func (d *ColumnarReader) hint() string {
	if d.tool == ToolSGLang {
		return "run python -m sglang.bench_serving with --output-details"
	}
	return "run vllm bench serve with --save-result --save-detailed"
}

func section(ra io.ReaderAt, off int64) io.Reader {
	return io.NewSectionReader(ra, off, math.MaxInt64-off)
}

// index is the first pass: where each run's arrays are, how long they
// are, and the saved summary.
func (d *ColumnarReader) index() error {
	s := newScanner(section(d.src, 0), d.name, 0, 256<<10)
	for {
		c, err := s.peek()
		if err == io.EOF {
			break
		}
		if err != nil {
			return s.ioError(err)
		}
		if c != '{' {
			return s.errorf("want a JSON object (a %s result), got %s", d.tool, describe(c))
		}
		ri := runIndex{line: s.line, summary: ToolSummary{Run: len(d.runs), Completed: -1, Values: map[string]float64{}, Hint: d.hint()}}
		if d.tool == ToolSGLang || len(d.runs) > 0 {
			// SGLang appends a run per line, and so does vLLM's
			// --append-result
			ri.summary.Label = "line " + strconv.Itoa(s.line)
			if len(d.runs) == 1 {
				d.runs[0].summary.Label = "line " + strconv.Itoa(d.runs[0].line)
			}
		}
		key, legacy := "", false
		s.where = func() string { return strconv.Quote(key) }
		err = s.object(func(k string) error {
			key = k
			for ci, name := range columnNames {
				if k == name {
					c, err := s.peek()
					if err != nil {
						return s.ioError(err)
					}
					if c != '[' && c != 'n' {
						return s.errorf("want an array with one entry per request, got %s", describe(c))
					}
					ri.cols[ci] = columnIndex{present: c == '[', off: s.offset(), line: s.line}
					n, err := s.skip()
					ri.cols[ci].n = n
					return err
				}
			}
			c, err := s.peek()
			if err != nil {
				return s.ioError(err)
			}
			if k == "best_of" || k == "use_beam_search" {
				legacy = true
			}
			if k == "model_id" && c == '"' {
				var err error
				ri.model, err = s.str()
				return err
			}
			if (k == "endpoint_type" || k == "backend") && c == '"' {
				backend, err := s.str()
				if op := backendOperation(d.tool, backend); op != "" {
					ri.op = op
				}
				return err
			}
			if k == "completed" && c != 'n' {
				v, _, err := s.integer()
				ri.summary.Completed = int(v)
				return err
			}
			if (k == "duration" || k == "request_goodput") && c != 'n' {
				v, _, err := s.finite()
				if k == "duration" {
					ri.summary.DurationS = v
				} else {
					ri.summary.RequestGoodput = &v
				}
				return err
			}
			if summaryKey.MatchString(k) && c != 'n' {
				v, err := s.number() // a saved statistic: a number, or null
				ri.summary.Values[k] = v
				return err
			}
			_, err = s.skip()
			return err
		})
		s.where = nil
		if err != nil {
			return err
		}
		if legacy && d.tool == ToolVLLM && !ri.cols[colIndex(colLat)].present {
			ri.summary.Notes = append(ri.summary.Notes, legacyNote)
		}
		if err := d.checkLengths(&ri); err != nil {
			return err
		}
		d.runs = append(d.runs, ri)
	}
	if len(d.runs) == 0 {
		return fmt.Errorf("%w: %s: empty input; want a %s result", ErrFormat, d.name, d.tool)
	}
	d.multi = len(d.runs) > 1
	return nil
}

func (d *ColumnarReader) checkLengths(ri *runIndex) error {
	ref := -1
	for ci, c := range ri.cols {
		if !c.present {
			continue
		}
		if ref < 0 {
			ref = ci
			ri.n = c.n
			continue
		}
		if c.n != ri.n {
			return fmt.Errorf("%w: %s:%d: %q has %d entries but %q has %d; want one entry per request in every array",
				ErrFormat, d.name, c.line, columnNames[ci], c.n, columnNames[ref], ri.n)
		}
	}
	if ri.n > 0 && !ri.cols[0].present {
		return fmt.Errorf("%w: %s:%d: the result has per-request arrays but no %q; want the time to first token of every request",
			ErrFormat, d.name, ri.line, colTTFT)
	}
	if ref < 0 && len(ri.summary.Values) == 0 {
		return fmt.Errorf("%w: %s:%d: no per-request arrays (%s, %s) and no saved summary; want a %s result saved with its details",
			ErrFormat, d.name, ri.line, colTTFT, colITL, d.tool)
	}
	return nil
}

// legacyNote says why a file of vLLM's benchmark_serving.py of 2024 has a
// saved TPOT and E2E above what its ITLs give.
const legacyNote = "this file is from vLLM's benchmark_serving.py of 2024 (best_of, use_beam_search): " +
	"it timed a request's end at [DONE], after the last token, and kept that latency only in its summary, " +
	"so its saved TPOT and E2E run a little above what the file's TTFTs and ITLs give; TTFT and ITL compare exactly"

// colIndex returns the index of a per-request array by its name.
func colIndex(name string) int {
	for i, n := range columnNames {
		if n == name {
			return i
		}
	}
	panic("trace: no array " + name)
}

// Next returns the next request as a turn, or io.EOF after the last.
func (d *ColumnarReader) Next() (*pipeline.Turn, error) {
	if d.err != nil {
		return nil, d.err
	}
	t, err := d.next()
	if err == nil {
		err = limitsError(d.name, t)
	}
	if err != nil {
		d.err = err
		d.Close()
		return nil, err
	}
	return t, nil
}

func (d *ColumnarReader) next() (*pipeline.Turn, error) {
	if !d.opened {
		if err := d.open(); err != nil {
			return nil, err
		}
		total := 0
		for _, r := range d.runs {
			total += r.n
		}
		if total == 0 {
			return nil, io.EOF // a summary only: ToolSummaries has it
		}
		if err := d.openRun(); err != nil {
			return nil, err
		}
	}
	for d.i >= d.runs[d.run].n {
		if d.run+1 >= len(d.runs) {
			return nil, io.EOF
		}
		d.run++
		if err := d.openRun(); err != nil {
			return nil, err
		}
	}
	t, err := d.request()
	d.i++
	return t, err
}

func (d *ColumnarReader) openRun() error {
	d.i = 0
	ri := &d.runs[d.run]
	for ci, c := range ri.cols {
		d.cur[ci] = nil
		if !c.present || ri.n == 0 {
			continue
		}
		s := newScanner(section(d.src, c.off), d.name, c.off, 64<<10)
		s.line = c.line
		if err := s.expect('[', "an array"); err != nil {
			return err
		}
		col := columnNames[ci]
		s.where = func() string { return fmt.Sprintf("%q[%d]", col, d.i) }
		d.cur[ci] = s
	}
	return nil
}

// request reads entry d.i of every array.
func (d *ColumnarReader) request() (*pipeline.Turn, error) {
	i := d.i
	var (
		start           float64
		ttft, outLen    int64
		text, errText   string
		hasText, hasOut bool
	)
	d.itl, d.keys, d.ttft, d.hasLat = d.itl[:0], d.keys[:0], decimal{}, false
	for ci, s := range d.cur {
		if s == nil {
			continue
		}
		col := columnNames[ci]
		more, err := s.more(i)
		if err == nil && !more {
			err = s.errorf("the array ends early")
		}
		if err != nil {
			return nil, err
		}
		switch col {
		case colTTFT:
			var isNull bool
			if isNull, err = s.null(); !isNull && err == nil {
				ttft, d.ttft, err = s.scaledNumber(9)
			}
			if err == nil && (ttft < 0 || ttft > maxSeconds*1e9) {
				err = s.errorf("time to first token %v is out of range; want 0 to %d s", time.Duration(ttft), maxSeconds)
			}
		case colITL:
			d.itl, d.keys, err = s.scaledNumbers(d.itl, d.keys, 9)
			for j, v := range d.itl {
				if (v < 0 || v > maxSeconds*1e9) && err == nil {
					err = s.errorf("ITL %d is %v; want a gap >= 0 and under %d s", j, time.Duration(v), maxSeconds)
				}
			}
		case colOut:
			outLen, hasOut, err = s.integer()
			if err == nil && (outLen < 0 || outLen > MaxTurnTokens) {
				err = s.errorf("output length %d; want a count from 0 to %d", outLen, MaxTurnTokens)
			}
		case colText:
			text, err = s.str()
			hasText = text != ""
		case colErr:
			errText, err = s.str()
		case colStart:
			start, _, err = s.finite()
		case colLat:
			var isNull bool
			if isNull, err = s.null(); !isNull && err == nil {
				var ns int64
				ns, d.lat, err = s.scaledNumber(9)
				d.hasLat = err == nil
				if err == nil && (ns < 0 || ns > maxSeconds*1e9) {
					err = s.errorf("latency %v is out of range; want 0 to %d s", time.Duration(ns), maxSeconds)
				}
			}
		}
		if err != nil {
			return nil, err
		}
	}
	id := strconv.Itoa(i)
	if d.multi {
		id = "run" + strconv.Itoa(d.run+1) + "-" + id
	}
	t := &pipeline.Turn{ID: id, Status: pipeline.StatusOK, Model: d.runs[d.run].model, Operation: d.runs[d.run].op}
	if errText != "" {
		t.Status, t.Error = pipeline.StatusError, errText
	}
	if start > 1e9 && start < 1e11 { // a wall-clock time; perf_counter values are not
		sec := math.Floor(start)
		t.Start = time.Unix(int64(sec), int64(math.Round((start-sec)*1e6))*1000)
	}
	if hasOut && outLen > 0 {
		t.OutputTokens = int(outLen)
	}
	if t.Status == pipeline.StatusOK || ttft > 0 || len(d.itl) > 0 {
		if err := d.chunks(t, ttft); err != nil {
			return nil, fmt.Errorf("%w: %s: request %d: %v", ErrFormat, d.name, i, err)
		}
	}
	if d.tool == ToolVLLM && t.OutputTokens >= len(t.Chunks) && len(t.Chunks) > 0 {
		spreadTokens(t.Chunks, t.OutputTokens)
	}
	if hasText && len(t.Chunks) > 0 {
		d.ends = spreadTextInto(t.Chunks, text, d.ends)
	}
	return t, nil
}

// chunks rebuilds the chunk arrival times: ttft, then each ITL later,
// summed exactly in nanoseconds. For SGLang, runs of equal ITLs are one
// chunk of that many tokens.
func (d *ColumnarReader) chunks(t *pipeline.Turn, ttft int64) error {
	at := ttft
	// the chunks are set field by field in the zeroed slice: the text
	// pointers stay untouched
	chunks := make([]pipeline.Chunk, 1, len(d.itl)+1)
	chunks[0].At, chunks[0].Tokens, chunks[0].Textless = time.Duration(at), 1, true
	t.Chunks = chunks
	for j := 0; j < len(d.itl); {
		k := 1
		if d.tool == ToolSGLang {
			for j+k < len(d.itl) && d.keys[j+k] == d.keys[j] {
				k++
			}
		}
		for range k {
			at += d.itl[j]
			j++
		}
		if at > maxSeconds*1e9 {
			return fmt.Errorf("the request lasts over %d s", maxSeconds)
		}
		chunks = chunks[:len(chunks)+1]
		c := &chunks[len(chunks)-1]
		c.At, c.Tokens, c.Textless = time.Duration(at), k, true
	}
	t.Chunks = chunks
	return nil
}

// spreadTokens shares n tokens over the chunks as evenly as possible, in
// order, each chunk keeping at least one (n >= len(chunks)).
func spreadTokens(chunks []pipeline.Chunk, n int) {
	m := len(chunks)
	if m == 0 {
		return
	}
	if n < 0 || n > math.MaxInt/(m+1) { // k*n may wrap: the formula as it is
		for k := range chunks {
			chunks[k].Tokens = (k+1)*n/m - k*n/m
		}
		return
	}
	// q = k*n/m and r = k*n%m, stepped without dividing
	nq, nr := n/m, n%m
	q, r := 0, 0
	for k := range chunks {
		next := q + nq
		if r += nr; r >= m {
			r -= m
			next++
		}
		chunks[k].Tokens = next - q
		q = next
	}
}

// wordEnds returns where each word of text ends, a word being a run of
// white space and the characters up to the next white space; the last
// end is len(text).
func wordEnds(dst []int, text string) []int {
	dst = dst[:0]
	inWord := false
	i := 0
	// eight bytes at a time: only the bytes up to ' ' can be white space
	for ; i+8 <= len(text); i += 8 {
		m := lowBytes8(binary.LittleEndian.Uint64(unsafe.Slice(unsafe.StringData(text[i:]), 8)))
		for ; m != 0; m &= m - 1 {
			j := i + bits.TrailingZeros64(m)>>3
			space := wordSpace[text[j]]
			if space && (j > 0 && !wordSpace[text[j-1]]) {
				dst = append(dst, j)
			}
		}
		inWord = !wordSpace[text[i+7]]
	}
	for ; i < len(text); i++ {
		space := wordSpace[text[i]]
		if space && inWord {
			dst = append(dst, i)
		}
		inWord = !space
	}
	if len(text) > 0 {
		if !inWord && len(dst) > 0 {
			dst[len(dst)-1] = len(text)
		} else {
			dst = append(dst, len(text))
		}
	}
	return dst
}

// lowBytes8 returns the high bit of each of the eight bytes of w that is
// ' ' or below.
func lowBytes8(w uint64) uint64 {
	const lows, highs = 0x7F7F7F7F7F7F7F7F, 0x8080808080808080
	// a byte is above ' ' when its high bit is set or its low seven bits
	// plus 0x5F reach 0x80 (no carry leaves a byte)
	return ^(w | (w&lows + 0x5F5F5F5F5F5F5F5F)) & highs
}

// wordSpace says which bytes separate words.
var wordSpace = [256]bool{' ': true, '\n': true, '\t': true, '\r': true}

// spreadText cuts text into words and shares them over the chunks in
// order, in proportion to the tokens each chunk carries; the first chunks
// get theirs first, so a chunk that gets none is a late one, with empty
// text. Each chunk's text is a slice of text: nothing is copied.
func spreadText(chunks []pipeline.Chunk, text string) {
	var buf [64]int
	spreadTextInto(chunks, text, buf[:0])
}

// spreadTextInto is spreadText with ends as scratch space for the word
// ends, returned for the next call.
func spreadTextInto(chunks []pipeline.Chunk, text string, ends []int) []int {
	ends = wordEnds(ends, text)
	total := 0
	for k := range chunks {
		total += chunks[k].TokenCount()
	}
	p := len(ends)
	from := 0
	if total <= 0 || total > math.MaxInt/(p+1) { // cum*p may wrap: the formula as it is
		cum := 0
		for k := range chunks {
			cum += chunks[k].TokenCount()
			to := from
			if w := (cum*p + total - 1) / total; w > 0 {
				to = ends[w-1]
			}
			chunks[k].Text, chunks[k].Textless = text[from:to], false
			from = to
		}
		return ends
	}
	// w = (cum*p + total - 1) / total, stepped: w*total + r is the
	// dividend, which grows by tokens*p per chunk
	w, r := 0, total-1
	for k := range chunks {
		r += chunks[k].TokenCount() * p
		for r >= total {
			r -= total
			w++
		}
		to := from
		if w > 0 {
			to = ends[w-1]
		}
		chunks[k].Text, chunks[k].Textless = text[from:to], false
		from = to
	}
	return ends
}

// sniffVLLM recognizes a vLLM result: one JSON object with vLLM's keys.
func sniffVLLM(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' || sniffSGLang(head) {
		return false
	}
	for _, k := range vllmKeys {
		if bytes.Contains(head, []byte(k)) {
			return true
		}
	}
	return false
}

// vllmKeys are the keys that tell a vLLM result, quoted as in the file.
var vllmKeys = []string{`"ttfts"`, `"itls"`, `"tokenizer_id"`, `"mean_ttft_ms"`, `"input_lens"`}

// exactTimes gives the times of the request Next returned last as the
// file has them: the floats of seconds the tool wrote, converted from the
// decimals only now, so that reading alone does not pay for them.
func (d *ColumnarReader) exactTimes() *exactTimes {
	ex := &d.exact
	ex.ttft, ex.latency, ex.hasLatency = d.ttft.toFloat(), d.lat.toFloat(), d.hasLat
	ex.itls = ex.itls[:0]
	for _, k := range d.keys {
		ex.itls = append(ex.itls, k.toFloat())
	}
	return ex
}
