package pipeline

import (
	"math"
	"slices"
	"time"
)

// Summary describes a set of values in milliseconds the way vLLM's bench
// serve, GenAI-Perf and AIPerf do: mean, median, population standard
// deviation, extremes, and percentiles by linear interpolation (numpy's
// default method).
type Summary struct {
	Count  int     `json:"count"`
	Mean   float64 `json:"mean"`
	Median float64 `json:"median"`
	Std    float64 `json:"std"`
	Min    float64 `json:"min"`
	Max    float64 `json:"max"`
	P50    float64 `json:"p50"`
	P90    float64 `json:"p90"`
	P95    float64 `json:"p95"`
	P99    float64 `json:"p99"`
	P999   float64 `json:"p99.9"`
}

// Sample collects values for a Summary. The zero Sample is empty and ready.
type Sample struct {
	values []float64
	sorted bool
}

// Add appends one value.
func (s *Sample) Add(v float64) {
	s.values = append(s.values, v)
	s.sorted = false
}

// AddDuration appends a duration as milliseconds.
func (s *Sample) AddDuration(d time.Duration) { s.Add(Millis(d)) }

// Len returns the number of values.
func (s *Sample) Len() int { return len(s.values) }

// Values returns the values collected, sorted ascending. The slice is the
// sample's own; do not modify it.
func (s *Sample) Values() []float64 {
	if !s.sorted {
		slices.Sort(s.values)
		s.sorted = true
	}
	return s.values
}

// Percentile returns the p-th percentile (0..100) by linear interpolation
// between closest ranks, numpy's default: h = (N-1)p/100. It returns NaN
// for an empty sample.
func (s *Sample) Percentile(p float64) float64 {
	return Percentile(s.Values(), p)
}

// Percentile returns the p-th percentile of ascending values by numpy's
// linear method; NaN when values is empty.
func Percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return math.NaN()
	}
	return percentileOf(len(sorted), p, func(k int) float64 { return sorted[k] })
}

// percentileOf is Percentile of n ascending values, value k at(k) (n > 0):
// it reads at most two of them.
func percentileOf(n int, p float64, at func(k int) float64) float64 {
	h := float64(n-1) * p / 100
	lo := int(math.Floor(h))
	if lo >= n-1 {
		return at(n - 1)
	}
	if lo < 0 {
		return at(0)
	}
	frac := h - float64(lo)
	return at(lo) + frac*(at(lo+1)-at(lo))
}

// Summary computes the summary. An empty sample gives a zero Summary.
func (s *Sample) Summary() Summary {
	v := s.Values()
	if len(v) == 0 {
		return Summary{}
	}
	var sum float64
	for _, x := range v {
		sum += x
	}
	mean := sum / float64(len(v))
	var ss float64
	for _, x := range v {
		ss += (x - mean) * (x - mean)
	}
	return Summary{
		Count:  len(v),
		Mean:   mean,
		Median: Percentile(v, 50),
		Std:    math.Sqrt(ss / float64(len(v))),
		Min:    v[0],
		Max:    v[len(v)-1],
		P50:    Percentile(v, 50),
		P90:    Percentile(v, 90),
		P95:    Percentile(v, 95),
		P99:    Percentile(v, 99),
		P999:   Percentile(v, 99.9),
	}
}

// Millis converts a duration to float milliseconds.
func Millis(d time.Duration) float64 { return float64(d) / float64(time.Millisecond) }
