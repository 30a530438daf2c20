package trace

import (
	"bytes"
	"fmt"
	"io"
	"math"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/speech-pipeline/underrun/pipeline"
)

// SummaryReader reads a file that holds a benchmark run's summary and no
// per-request timings: AIPerf's profile_export_aiperf.json and GenAI-Perf's
// profile_export_genai_perf.json (an object of metrics, each {"unit",
// "avg", "p50", ..., "p99", "min", "max", "std"}). It yields no turns;
// ToolSummaries gives the saved figures in milliseconds, by keys such as
// "time_to_first_token.avg", with a Hint naming the per-request file the
// speech analysis needs. The whole object is read at the first Next; it is
// a summary, small, and its strings are bounded as in every reader.
type SummaryReader struct {
	tool    Tool
	name    string
	s       *scanner
	read    bool
	err     error
	summary ToolSummary
	where   string // the metric being read, for errors
}

// NewSummaryReader returns a reader of the summary r, written by tool;
// name labels errors.
func NewSummaryReader(r io.Reader, name string, tool Tool) *SummaryReader {
	return &SummaryReader{tool: tool, name: name, s: newScanner(r, name, 0, 64<<10)}
}

var _ ToolDecoder = (*SummaryReader)(nil)

// Tool names the tool that wrote the file.
func (d *SummaryReader) Tool() Tool { return d.tool }

// Run is always 0: the file holds one run.
func (d *SummaryReader) Run() int { return 0 }

// ToolSummaries returns the file's summary, once Next has read it.
func (d *SummaryReader) ToolSummaries() []ToolSummary {
	if !d.read || d.err != nil {
		return nil
	}
	return []ToolSummary{d.summary}
}

// Next reads the summary and returns io.EOF: the file has no turns.
func (d *SummaryReader) Next() (*pipeline.Turn, error) {
	if !d.read {
		d.read = true
		d.err = d.parse()
	}
	if d.err != nil {
		return nil, d.err
	}
	return nil, io.EOF
}

// perRequestFile names the file beside a summary that holds its requests.
func (d *SummaryReader) perRequestFile() string {
	switch d.tool {
	case ToolGenAIPerf:
		return "profile_export.json"
	case ToolLLMPerf:
		return strings.TrimSuffix(filepath.Base(d.name), "_summary.json") + "_individual_responses.json"
	}
	return "profile_export.jsonl"
}

func (d *SummaryReader) parse() error {
	s := d.s
	d.summary = ToolSummary{Completed: -1, Values: map[string]float64{},
		Hint: fmt.Sprintf("this is %s's summary; pass %s, written beside it in %s", d.tool.Title(), d.perRequestFile(), filepath.Dir(d.name))}
	s.where = func() string { return d.where }
	defer func() { s.where = nil }()
	err := s.object(func(key string) error {
		c, err := s.peek()
		if err != nil {
			return s.ioError(err)
		}
		switch {
		case d.tool == ToolLLMPerf:
			d.where = key
			return d.flatStat(key, c)
		case key == "records" && c == '{' && d.tool == ToolAIPerf:
			// AIPerf 0.1: the metrics under "records", by their tags
			return s.object(func(tag string) error {
				c, err := s.peek()
				if err != nil {
					return s.ioError(err)
				}
				return d.statObject("records."+tag, tag, c)
			})
		case key == "error_summary" && d.tool == ToolAIPerf:
			d.where = key
			err := d.errorSummary()
			d.where = ""
			return err
		}
		return d.statObject(key, key, c)
	})
	if err != nil {
		return err
	}
	if err := s.end("the summary object"); err != nil {
		return err
	}
	if len(d.summary.Values) == 0 && d.summary.Completed < 0 && d.summary.Failed == nil {
		want := `{"unit": ..., "avg": ...}`
		if d.tool == ToolAIPerf {
			want += `, at the top level or under "records"`
		}
		return fmt.Errorf("%w: %s: no metrics (%s); want %s's summary", ErrFormat, d.name, want, d.tool.Title())
	}
	return nil
}

// statObject reads the value of a metric, its first byte c: an object of
// a unit and statistics ({"unit": "ms", "avg": ..., "p50": ...}); a value
// of another kind is skipped. where names it for errors.
func (d *SummaryReader) statObject(where, name string, c byte) error {
	s := d.s
	if c != '{' {
		_, err := s.skip()
		return err
	}
	d.where = where
	stats, unit := map[string]float64{}, ""
	err := s.object(func(k string) error {
		c, err := s.peek()
		if err != nil {
			return s.ioError(err)
		}
		switch {
		case k == "unit" && c == '"':
			unit, err = s.str()
			return err
		case statKey.MatchString(k) && c == 'n':
			return s.literal("null")
		case statKey.MatchString(k):
			v, err := s.number()
			if err == nil && !math.IsNaN(v) && !math.IsInf(v, 0) {
				stats[k] = v
			}
			return err
		}
		_, err = s.skip()
		return err
	})
	d.where = ""
	if err != nil {
		return err
	}
	d.metric(name, unit, stats)
	return nil
}

// maxFailureKinds bounds the kinds of failure a summary's error_summary
// keeps; the rest are counted under "other".
const maxFailureKinds = 256

// errorSummary reads AIPerf's error_summary: [{"error_details": {code,
// type, message}, "count": N}, ...], the failed requests by kind.
func (d *SummaryReader) errorSummary() error {
	s := d.s
	by := map[string]int{}
	err := s.array(func(int) error {
		text, count := "", int64(0)
		err := s.object(func(k string) error {
			var err error
			switch k {
			case "error_details":
				text, err = aiperfErrorDetails(s)
			case "count":
				var ok bool
				if count, ok, err = s.integer(); err == nil && ok && (count < 0 || count > MaxTurnTokens) {
					return s.errorf("count %d; want a whole count of requests from 0 to %d", count, MaxTurnTokens)
				}
			default:
				_, err = s.skip()
			}
			return err
		})
		if err != nil || text == "" {
			return err
		}
		if _, ok := by[text]; !ok && len(by) >= maxFailureKinds {
			text = "other"
		}
		by[text] += int(count)
		return nil
	})
	if err != nil {
		return err
	}
	d.summary.FailedBy = by
	return nil
}

// llmperfStat reads llmperf's flattened keys: results_<metric>_mean,
// _min, _max, _stddev and _quantiles_pNN, of the metrics in seconds.
var llmperfStat = regexp.MustCompile(`^results_((?:ttft|inter_token_latency|end_to_end_latency)_s)_(mean|min|max|stddev|quantiles_p[0-9]+)$`)

// flatStat reads one key of llmperf's flat summary, its first byte c.
func (d *SummaryReader) flatStat(key string, c byte) error {
	s := d.s
	m := llmperfStat.FindStringSubmatch(key)
	if key == "results_num_completed_requests" && c != 'n' {
		v, _, err := s.integer()
		if err == nil && v >= 0 {
			d.summary.Completed = int(v)
		}
		return err
	}
	if m == nil || c == 'n' {
		_, err := s.skip()
		return err
	}
	v, err := s.number()
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return err
	}
	stat := strings.TrimPrefix(m[2], "quantiles_")
	if stat == "stddev" {
		stat = "std"
	}
	d.summary.Values[m[1]+"."+stat] = v * 1000
	return nil
}

// sniffLLMPerfSummary recognizes llmperf's summary: a flat object with
// its results_ keys.
func sniffLLMPerfSummary(head []byte) bool {
	head = bytes.TrimLeft(head, " \t\r\n")
	return len(head) > 0 && head[0] == '{' &&
		(bytes.Contains(head, []byte(`"results_ttft_s_mean"`)) || bytes.Contains(head, []byte(`"results_end_to_end_latency_s_mean"`)) ||
			bytes.Contains(head, []byte(`"results_num_completed_requests"`)))
}

// metric keeps one saved metric: times in milliseconds, the request count,
// the run's length and its goodput.
func (d *SummaryReader) metric(name, unit string, stats map[string]float64) {
	switch name {
	case "request_count":
		if v, ok := stats["avg"]; ok && v >= 0 && v == math.Trunc(v) {
			d.summary.Completed = int(v)
		}
		return
	case "error_request_count":
		if v, ok := stats["avg"]; ok && v >= 0 && v == math.Trunc(v) && v <= MaxTurnTokens {
			n := int(v)
			d.summary.Failed = &n
		}
		return
	case "benchmark_duration":
		if scale, err := unitScale(unit); err == nil {
			d.summary.DurationS = stats["avg"] * scale / 1e9
		}
		return
	case "goodput":
		if v, ok := stats["avg"]; ok && strings.HasPrefix(unit, "requests") {
			d.summary.RequestGoodput = &v
		}
		return
	}
	if unit == "" {
		return // not a time
	}
	scale, err := unitScale(unit)
	if err != nil {
		return // tokens, requests/sec, ...
	}
	for stat, v := range stats {
		d.summary.Values[name+"."+stat] = v * scale / 1e6
	}
}

// sniffStatsSummary tells an AIPerf or GenAI-Perf summary (an object of
// {"unit", "avg", ...} metrics, the same layout by design) from its head:
// GenAI-Perf's options have a perf_analyzer section; "" for anything else.
func sniffStatsSummary(head []byte) Tool {
	head = bytes.TrimLeft(head, " \t\r\n")
	if len(head) == 0 || head[0] != '{' || !bytes.Contains(head, []byte(`"unit"`)) || !bytes.Contains(head, []byte(`"avg"`)) {
		return ""
	}
	metric := false
	for _, k := range []string{`"time_to_first_token"`, `"request_latency"`, `"inter_token_latency"`, `"request_throughput"`} {
		metric = metric || bytes.Contains(head, []byte(k))
	}
	if !metric {
		return ""
	}
	if bytes.Contains(head, []byte(`"perf_analyzer"`)) {
		return ToolGenAIPerf // GenAI-Perf's options drive perf_analyzer
	}
	return ToolAIPerf
}
