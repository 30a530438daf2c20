package otlp

import (
	"context"
	"math"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/speech-pipeline/underrun/pipeline"
)

// randomTurns are turns of random ITLs, some exactly on a bucket bound,
// one with a tool call whose time is no ITL.
func randomTurns(r *rand.Rand, n int) []*pipeline.Turn {
	var turns []*pipeline.Turn
	for range n {
		t := &pipeline.Turn{ID: "t"}
		at := time.Duration(r.IntN(400)) * time.Millisecond
		for k := range 2 + r.IntN(300) {
			switch {
			case k == 0:
			case r.IntN(20) == 0: // exactly a bound: the bucket below it
				at += time.Duration(latencyBuckets[r.IntN(len(latencyBuckets))] * float64(time.Second))
			default:
				at += time.Duration(r.ExpFloat64() * float64(30*time.Millisecond))
			}
			t.Chunks = append(t.Chunks, pipeline.Chunk{At: at, Tokens: 1})
		}
		if r.IntN(4) == 0 {
			mid := t.Chunks[len(t.Chunks)/2].At
			t.ToolCalls = []pipeline.ToolCall{{At: mid, Duration: time.Second}}
			for k := len(t.Chunks)/2 + 1; k < len(t.Chunks); k++ {
				t.Chunks[k].At += time.Second
			}
		}
		turns = append(turns, t)
	}
	return turns
}

// TestITLHistogramIsTheSDKs: the ITL histogram kept here gives what the
// SDK's own explicit-bucket histogram gives for the same ITLs recorded one
// by one: count, buckets, min and max exactly, the sum to float noise,
// cumulative and delta.
func TestITLHistogramIsTheSDKs(t *testing.T) {
	t.Parallel()
	for _, delta := range []bool{false, true} {
		sel := func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.CumulativeTemporality }
		if delta {
			sel = func(sdkmetric.InstrumentKind) metricdata.Temporality { return metricdata.DeltaTemporality }
		}
		reader := sdkmetric.NewManualReader(sdkmetric.WithTemporalitySelector(sel))
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(reader))
		inst, err := mp.Meter("test").Float64Histogram("itl", metric.WithExplicitBucketBoundaries(latencyBuckets[:]...))
		if err != nil {
			t.Fatal(err)
		}
		h := newITLHistogram(delta)
		attrs := attribute.NewSet(attribute.String("gen_ai.operation.name", "chat"))
		r := rand.New(rand.NewPCG(7, 9))
		for round := range 2 {
			for _, turn := range randomTurns(r, 50) {
				for itl := range turn.ITLs() {
					inst.Record(context.Background(), float64(itl)/float64(time.Second), metric.WithAttributeSet(attrs))
				}
				h.add(turn, attrs)
			}
			var rm metricdata.ResourceMetrics
			if err := reader.Collect(context.Background(), &rm); err != nil {
				t.Fatal(err)
			}
			want := rm.ScopeMetrics[0].Metrics[0].Data.(metricdata.Histogram[float64])
			sms, err := h.Produce(context.Background())
			if err != nil {
				t.Fatal(err)
			}
			got := sms[0].Metrics[0].Data.(metricdata.Histogram[float64])
			if got.Temporality != want.Temporality {
				t.Errorf("delta %v: temporality %v, want %v", delta, got.Temporality, want.Temporality)
			}
			g, w := got.DataPoints[0], want.DataPoints[0]
			what := map[bool]string{false: "cumulative", true: "delta"}[delta]
			if g.Count != w.Count || !slices.Equal(g.BucketCounts, w.BucketCounts) || !slices.Equal(g.Bounds, w.Bounds) {
				t.Errorf("%s round %d: count %d buckets %v, the SDK's %d %v", what, round, g.Count, g.BucketCounts, w.Count, w.BucketCounts)
			}
			gmin, _ := g.Min.Value()
			wmin, _ := w.Min.Value()
			gmax, _ := g.Max.Value()
			wmax, _ := w.Max.Value()
			if gmin != wmin || gmax != wmax || math.Abs(g.Sum-w.Sum) > 1e-9*w.Sum || !g.Attributes.Equals(&w.Attributes) {
				t.Errorf("%s round %d: min %v max %v sum %v, the SDK's %v %v %v", what, round, gmin, gmax, g.Sum, wmin, wmax, w.Sum)
			}
		}
	}
}

// BenchmarkITL: one 250-chunk turn's ITLs into the histogram, against
// the SDK instrument it replaces, one measurement per ITL.
func BenchmarkITL(b *testing.B) {
	turn := randomTurns(rand.New(rand.NewPCG(1, 2)), 1)[0]
	for len(turn.Chunks) < 250 {
		turn = randomTurns(rand.New(rand.NewPCG(uint64(len(turn.Chunks)), 2)), 1)[0]
	}
	attrs := attribute.NewSet(attribute.String("gen_ai.operation.name", "chat"), attribute.String("gen_ai.provider.name", "unknown"))
	b.Run("here", func(b *testing.B) {
		h := newITLHistogram(false)
		for b.Loop() {
			h.add(turn, attrs)
		}
	})
	b.Run("sdk", func(b *testing.B) {
		mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(sdkmetric.NewManualReader()))
		inst, _ := mp.Meter("test").Float64Histogram("itl", metric.WithExplicitBucketBoundaries(latencyBuckets[:]...))
		for b.Loop() {
			for itl := range turn.ITLs() {
				inst.Record(context.Background(), itl.Seconds(), metric.WithAttributeSet(attrs))
			}
		}
	})
}
