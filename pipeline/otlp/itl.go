package otlp

import (
	"context"
	"math"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/sdk/instrumentation"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"

	"github.com/speech-pipeline/underrun/pipeline"
)

// itlHistogram is gen_ai.client.operation.time_per_output_chunk, kept
// here rather than in an SDK instrument: a turn's ITLs are bucketed in a
// local array and added under one lock, where the instrument would take
// one measurement (attribute set, lookup, lock) per ITL. That was three
// quarters of analyze --otlp's time on a large vLLM file. The metric
// reader collects it as a Producer; its buckets and cumulative or delta
// sums are the SDK's explicit-bucket histogram's.
type itlHistogram struct {
	delta bool // the exporter wants delta temporality: reset at each collection

	mu     sync.Mutex
	start  time.Time
	series map[attribute.Distinct]*itlSeries
	order  []*itlSeries
}

// itlSeries is one attribute set's histogram, in nanoseconds: integer
// comparisons with the bounds put each ITL in the bucket the SDK's float
// comparison of its seconds would (a bound's double is the nearest to its
// nanoseconds over 1e9, and the division keeps the order), and the sum
// is exact.
type itlSeries struct {
	attrs    attribute.Set
	counts   [len(latencyBuckets) + 1]uint64
	count    uint64
	sum      time.Duration
	min, max time.Duration
}

// boundsNs are latencyBuckets in nanoseconds.
var boundsNs = func() (b [len(latencyBuckets)]time.Duration) {
	for i, s := range latencyBuckets {
		b[i] = time.Duration(math.Round(s * 1e9))
	}
	return b
}()

func newITLHistogram(delta bool) *itlHistogram {
	return &itlHistogram{delta: delta, start: time.Now(), series: map[attribute.Distinct]*itlSeries{}}
}

// add records every ITL of t (tool-call time left out) under attrs.
func (h *itlHistogram) add(t *pipeline.Turn, attrs attribute.Set) {
	if len(t.Chunks) < 2 {
		return
	}
	var local itlSeries
	local.min = math.MaxInt64
	for itl := range t.ITLs() {
		i := 0
		// the SDK's rule: the first bucket whose bound is at least the ITL
		for i < len(boundsNs) && itl > boundsNs[i] {
			i++
		}
		local.counts[i]++
		local.sum += itl
		local.min = min(local.min, itl)
		local.max = max(local.max, itl)
	}
	local.count = uint64(len(t.Chunks) - 1)
	h.mu.Lock()
	defer h.mu.Unlock()
	s := h.series[attrs.Equivalent()]
	if s == nil {
		s = &itlSeries{attrs: attrs}
		h.series[attrs.Equivalent()] = s
		h.order = append(h.order, s)
	}
	if s.count == 0 {
		s.min, s.max = local.min, local.max
	}
	s.min, s.max = min(s.min, local.min), max(s.max, local.max)
	for i, c := range local.counts {
		s.counts[i] += c
	}
	s.count += local.count
	s.sum += local.sum
}

// Produce hands the metric reader the histogram, one point per attribute
// set that has values.
func (h *itlHistogram) Produce(context.Context) ([]metricdata.ScopeMetrics, error) {
	h.mu.Lock()
	defer h.mu.Unlock()
	now := time.Now()
	var points []metricdata.HistogramDataPoint[float64]
	for _, s := range h.order {
		if s.count == 0 {
			continue
		}
		points = append(points, metricdata.HistogramDataPoint[float64]{
			Attributes: s.attrs, StartTime: h.start, Time: now, Count: s.count,
			Bounds: latencyBuckets[:], BucketCounts: append([]uint64(nil), s.counts[:]...),
			Min: metricdata.NewExtrema(secs(s.min)), Max: metricdata.NewExtrema(secs(s.max)), Sum: secs(s.sum),
		})
		if h.delta {
			*s = itlSeries{attrs: s.attrs}
		}
	}
	temporality := metricdata.CumulativeTemporality
	if h.delta {
		temporality, h.start = metricdata.DeltaTemporality, now
	}
	if len(points) == 0 {
		return nil, nil
	}
	var m genaiconv.ClientOperationTimePerOutputChunk
	return []metricdata.ScopeMetrics{{
		Scope: instrumentation.Scope{Name: ScopeName, SchemaURL: semconv.SchemaURL},
		Metrics: []metricdata.Metrics{{Name: m.Name(), Description: m.Description(), Unit: m.Unit(),
			Data: metricdata.Histogram[float64]{Temporality: temporality, DataPoints: points}}},
	}}, nil
}

// secs is a duration in seconds, the correctly rounded quotient the
// bucket rule above relies on.
func secs(d time.Duration) float64 { return float64(d) / float64(time.Second) }
