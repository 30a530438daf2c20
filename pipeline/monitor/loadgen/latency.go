package loadgen

import (
	"context"
	"math"
	"sort"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// Latency summarizes a sample of delays.
type Latency struct {
	P50, P99, Max time.Duration
}

func summarizeLatency(xs []float64) Latency {
	if len(xs) == 0 {
		return Latency{}
	}
	sort.Float64s(xs)
	d := func(p float64) time.Duration {
		return time.Duration(pipeline.Percentile(xs, p) * float64(time.Millisecond))
	}
	return Latency{P50: d(50), P99: d(99), Max: time.Duration(xs[len(xs)-1] * float64(time.Millisecond))}
}

// WakeLatency samples, for d, how late a 1 ms sleep wakes on this
// machine: the floor under every latency Run measures. A quiet machine
// wakes within a fraction of a millisecond; a virtual machine whose host
// is busy can wake milliseconds late with nothing running in it.
func WakeLatency(ctx context.Context, d time.Duration) Latency {
	var late []float64
	for end := time.Now().Add(d); time.Now().Before(end) && ctx.Err() == nil; {
		t := time.Now()
		time.Sleep(time.Millisecond)
		late = append(late, float64(time.Since(t)-time.Millisecond)/1e6)
	}
	return summarizeLatency(late)
}

// lagHistogram counts send lags: in 10 µs bins below 10 ms, 1 ms bins
// below 10 s, and one bin above (a million messages a run would otherwise
// be a million samples), and keeps the largest.
type lagHistogram struct {
	bins     [lagFine + lagCoarse + 1]int64
	count    int64
	maxNanos int64
}

const (
	lagFine   = 1000  // 10 µs bins: 0-10 ms
	lagCoarse = 10000 // 1 ms bins: 0-10 s, the first 10 of them within the fine ones
)

func (h *lagHistogram) add(ns int64) {
	h.maxNanos = max(h.maxNanos, ns)
	us := max(ns, 0) / 1000
	switch {
	case us < 10*lagFine:
		h.bins[us/10]++
	case us < 1000*lagCoarse:
		h.bins[lagFine+us/1000]++
	default:
		h.bins[len(h.bins)-1]++
	}
	h.count++
}

func (h *lagHistogram) merge(o *lagHistogram) {
	for i, c := range o.bins {
		h.bins[i] += c
	}
	h.count += o.count
	h.maxNanos = max(h.maxNanos, o.maxNanos)
}

// quantile returns the lag at quantile q: the upper edge of its bin (the
// largest lag for the last).
func (h *lagHistogram) quantile(q float64) time.Duration {
	if h.count == 0 {
		return 0
	}
	rank := max(1, int64(math.Ceil(q*float64(h.count))))
	var seen int64
	for i, c := range h.bins {
		if seen += c; seen >= rank {
			// A bin's upper edge, never above the largest lag seen.
			edge := time.Duration(h.maxNanos)
			switch {
			case i < lagFine:
				edge = min(edge, time.Duration(i+1)*10*time.Microsecond)
			case i < len(h.bins)-1:
				edge = min(edge, time.Duration(i-lagFine+1)*time.Millisecond)
			}
			return edge
		}
	}
	return time.Duration(h.maxNanos)
}
