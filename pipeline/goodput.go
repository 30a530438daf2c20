package pipeline

import (
	"errors"
	"fmt"
	"math"
	"slices"
	"strconv"
	"strings"
	"time"
)

// SLO is one request-level service level objective, as vLLM bench serve's
// --goodput takes it ("ttft:200"): a request meets it when its metric is at
// most Ms milliseconds.
type SLO struct {
	// Metric is ttft, tpot or e2el.
	Metric string `json:"metric"`
	// Ms is the most the metric may be, in milliseconds.
	Ms float64 `json:"ms"`
}

// SLOMetrics are the metrics an SLO may name, as vLLM names them.
var SLOMetrics = []string{"ttft", "tpot", "e2el"}

// ErrSLO reports an SLO that cannot be read.
var ErrSLO = errors.New("invalid SLO")

// ParseSLOs reads vLLM's KEY:VALUE pairs ("ttft:200", "tpot:50",
// "e2el:4000"), each argument one pair or several separated by commas or
// spaces. A metric named twice keeps the last value, as vLLM's dict does.
func ParseSLOs(args []string) ([]SLO, error) {
	var out []SLO
	for _, arg := range args {
		for _, pair := range strings.FieldsFunc(arg, func(r rune) bool { return r == ',' || r == ' ' }) {
			name, value, ok := strings.Cut(pair, ":")
			if !ok {
				return nil, fmt.Errorf("%w %q: want KEY:VALUE, the key one of %s and the value in milliseconds", ErrSLO, pair, strings.Join(SLOMetrics, ", "))
			}
			if !slices.Contains(SLOMetrics, name) {
				return nil, fmt.Errorf("%w %q: unknown metric %q; want one of %s", ErrSLO, pair, name, strings.Join(SLOMetrics, ", "))
			}
			ms, err := strconv.ParseFloat(value, 64)
			if err != nil || ms < 0 || math.IsNaN(ms) || math.IsInf(ms, 0) {
				return nil, fmt.Errorf("%w %q: want a number of milliseconds >= 0, got %q", ErrSLO, pair, value)
			}
			if i := slices.IndexFunc(out, func(s SLO) bool { return s.Metric == name }); i >= 0 {
				out[i].Ms = ms
				continue
			}
			out = append(out, SLO{Metric: name, Ms: ms})
		}
	}
	// vLLM checks them in this order
	slices.SortStableFunc(out, func(a, b SLO) int {
		return slices.Index(SLOMetrics, a.Metric) - slices.Index(SLOMetrics, b.Metric)
	})
	return out, nil
}

// FormatSLOs writes SLOs back as vLLM's pairs: "ttft:200 tpot:50".
func FormatSLOs(slos []SLO) string {
	parts := make([]string, len(slos))
	for i, s := range slos {
		parts[i] = s.Metric + ":" + strconv.FormatFloat(s.Ms, 'f', -1, 64)
	}
	return strings.Join(parts, " ")
}

// Goodput counts the requests that meet every SLO, exactly as vLLM bench
// serve's calculate_metrics counts request_goodput: only successful
// requests can be good; a request is good when, for every SLO, the SLO in
// seconds is at least the request's TTFT, TPOT ((E2E - TTFT) / (tokens -
// 1), taken as 0 for a request of one token) and E2E latency. Accumulate
// with Add or AddTurn, then Close.
type Goodput struct {
	SLOs []SLO `json:"slos"`
	// Requests counts every request accounted, failed ones included;
	// Completed the successful ones; Good those meeting every SLO.
	Requests  int `json:"requests"`
	Completed int `json:"completed"`
	Good      int `json:"good"`
	// Fraction is Good / Requests.
	Fraction float64 `json:"fraction"`
	// DurationS is the run's length in seconds and PerSecond is Good per
	// second of it (vLLM's request_goodput), when the length is known.
	DurationS *float64 `json:"duration_s,omitempty"`
	PerSecond *float64 `json:"requests_per_s,omitempty"`

	first, last time.Time
	wallClock   bool
	merged      float64 // the lengths of the runs merged in, in seconds
}

// NewGoodput returns an empty Goodput for slos.
func NewGoodput(slos []SLO) *Goodput {
	return &Goodput{SLOs: slos, wallClock: true}
}

// Add accounts one request: ok says it succeeded; ttft, tpot and e2el are
// its metrics in seconds, tpot 0 for a request of one token.
func (g *Goodput) Add(ok bool, ttft, tpot, e2el float64) {
	g.Requests++
	if !ok {
		return
	}
	g.Completed++
	for _, s := range g.SLOs {
		v := ttft
		switch s.Metric {
		case "tpot":
			v = tpot
		case "e2el":
			v = e2el
		}
		if !(s.Ms/1000 >= v) {
			return
		}
	}
	g.Good++
}

// AddTurn accounts a turn with vLLM's arithmetic on its chunk times: a
// turn without chunks, or one that did not end ok, is a failed request. It
// also notes the turn's wall-clock start and end, for the run's length.
func (g *Goodput) AddTurn(t *Turn) {
	tm, has := t.Timing()
	ok := has && (t.Status == StatusOK || t.Status == "")
	var ttft, tpot, e2el float64
	if has {
		ttft, e2el = tm.TTFT.Seconds(), tm.E2E.Seconds()
		if tm.Tokens > 1 {
			tpot = (e2el - ttft) / float64(tm.Tokens-1)
		}
	}
	g.Add(ok, ttft, tpot, e2el)
	if t.Start.IsZero() {
		g.wallClock = false
		return
	}
	end := t.Start.Add(tm.E2E)
	if g.first.IsZero() || t.Start.Before(g.first) {
		g.first = t.Start
	}
	if end.After(g.last) {
		g.last = end
	}
}

// Merge adds the counts of another run's closed Goodput, for the same
// SLOs (and its length, when it had one).
func (g *Goodput) Merge(o *Goodput) {
	g.Requests += o.Requests
	g.Completed += o.Completed
	g.Good += o.Good
	if o.DurationS != nil {
		g.merged += *o.DurationS
	}
}

// Close computes Fraction, and PerSecond over durationS seconds; with
// durationS 0, over the span of the turns' wall-clock times when every
// turn had one, else over the lengths of the runs merged in.
func (g *Goodput) Close(durationS float64) {
	if g.Requests > 0 {
		g.Fraction = float64(g.Good) / float64(g.Requests)
	}
	if durationS <= 0 && g.wallClock && !g.first.IsZero() {
		durationS = g.last.Sub(g.first).Seconds()
	}
	if durationS <= 0 {
		durationS = g.merged
	}
	if durationS > 0 {
		g.DurationS = &durationS
		rate := float64(g.Good) / durationS
		g.PerSecond = &rate
	}
}

// String says the result in a line: "97 of 100 requests (97.0%) met every
// SLO (ttft:200 tpot:50), 3.10 requests/s".
func (g *Goodput) String() string {
	s := fmt.Sprintf("%d of %s (%.1f%%) met every SLO (%s)", g.Good, plural(g.Requests, "request"), 100*g.Fraction, FormatSLOs(g.SLOs))
	if g.PerSecond != nil {
		s += fmt.Sprintf(", %.2f requests/s over %.1f s", *g.PerSecond, *g.DurationS)
	}
	return s
}
