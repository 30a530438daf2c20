package otlp

import "github.com/prometheus/client_golang/prometheus"

// Collector returns the exporter's delivery counters as Prometheus
// metrics, for a monitor's /metrics: underrun_otlp_spans_total by result
// (delivered, dropped: the queue was full, failed: in an export the
// backend did not take, refused: the backend takes no traces),
// underrun_otlp_spans_waiting (in the queue or an export under way) and
// underrun_otlp_exports_failed_total by signal.
func (e *Exporter) Collector() prometheus.Collector { return collector{e} }

var (
	descSpans = prometheus.NewDesc("underrun_otlp_spans_total",
		"Turn spans made for the OTLP export, by what became of them: delivered, dropped (the queue was full), failed (in an export the backend did not take), refused (the backend takes no traces).",
		[]string{"result"}, nil)
	descWaiting = prometheus.NewDesc("underrun_otlp_spans_waiting",
		"Turn spans waiting for export: in the queue or in an export under way.", nil, nil)
	descFailed = prometheus.NewDesc("underrun_otlp_exports_failed_total",
		"OTLP export requests that failed, by signal (traces, metrics).", []string{"signal"}, nil)
)

type collector struct{ e *Exporter }

func (c collector) Describe(ch chan<- *prometheus.Desc) {
	ch <- descSpans
	ch <- descWaiting
	ch <- descFailed
}

func (c collector) Collect(ch chan<- prometheus.Metric) {
	d := c.e.Delivery()
	for _, r := range []struct {
		result string
		n      int64
	}{{"delivered", d.Delivered}, {"dropped", d.Dropped}, {"failed", d.Failed}, {"refused", d.Refused}} {
		ch <- prometheus.MustNewConstMetric(descSpans, prometheus.CounterValue, float64(r.n), r.result)
	}
	ch <- prometheus.MustNewConstMetric(descWaiting, prometheus.GaugeValue, float64(max(d.Waiting(), 0)))
	ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(c.e.tracesFailed.Load()), "traces")
	ch <- prometheus.MustNewConstMetric(descFailed, prometheus.CounterValue, float64(c.e.metricsFailed.Load()), "metrics")
}
