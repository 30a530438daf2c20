// Package otlptest is a real OTLP/HTTP receiver for tests: an httptest
// server that decodes every export request with the OpenTelemetry
// Collector's own pdata module (ptraceotlp and pmetricotlp
// ExportRequest.UnmarshalProto) and keeps the spans and metrics, so a
// test checks what a backend would store. It can answer slowly, as a
// hosted backend does, and take traces only, answering /v1/metrics with
// 404 as Jaeger, Tempo, Langfuse and Phoenix do.
package otlptest

import (
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"sync"
	"testing"
	"time"

	"go.opentelemetry.io/collector/pdata/pcommon"
	"go.opentelemetry.io/collector/pdata/pmetric"
	"go.opentelemetry.io/collector/pdata/pmetric/pmetricotlp"
	"go.opentelemetry.io/collector/pdata/ptrace"
	"go.opentelemetry.io/collector/pdata/ptrace/ptraceotlp"
)

// Span is one received span with the resource it came with.
type Span struct {
	ptrace.Span
	Resource pcommon.Resource
}

// Receiver is an OTLP/HTTP receiver on loopback. Its URL is the base
// endpoint (/v1/traces and /v1/metrics under it).
type Receiver struct {
	URL string
	srv *httptest.Server
	o   Options

	mu       sync.Mutex
	spans    []Span
	metrics  map[string][]pmetric.Metric
	requests int
	refused  map[string]int // requests answered 404, by path
	headers  http.Header    // of the last request
}

// Options shape a receiver as the backends users send to.
type Options struct {
	// Latency is how long each export request takes to answer (a hosted
	// backend's round trip).
	Latency time.Duration
	// TracesOnly answers /v1/metrics with 404, as the tracing backends
	// that take no metrics do (Jaeger, Tempo, Langfuse, Phoenix).
	TracesOnly bool
	// Discard reads each request and answers it without decoding or
	// keeping anything (benchmarks: the receiver's work stays small).
	Discard bool
}

// NewReceiver starts a receiver that stops when the test ends.
func NewReceiver(t testing.TB) *Receiver { return NewReceiverWith(t, Options{}) }

// NewReceiverWith starts a receiver shaped by o that stops when the test
// ends.
func NewReceiverWith(t testing.TB, o Options) *Receiver {
	r := &Receiver{o: o, metrics: map[string][]pmetric.Metric{}, refused: map[string]int{}}
	mux := http.NewServeMux()
	mux.HandleFunc("/", func(w http.ResponseWriter, req *http.Request) {
		r.mu.Lock()
		r.refused[req.URL.Path]++
		r.mu.Unlock()
		http.NotFound(w, req)
	})
	mux.HandleFunc("POST /v1/traces", func(w http.ResponseWriter, req *http.Request) {
		r.wait(req)
		if o.Discard {
			io.Copy(io.Discard, req.Body)
			r.answer(w, ptraceotlp.NewExportResponse().MarshalProto)
			return
		}
		er := ptraceotlp.NewExportRequest()
		if !decode(t, w, req, er.UnmarshalProto) {
			return
		}
		rs := er.Traces().ResourceSpans()
		r.mu.Lock()
		for i := range rs.Len() {
			res := rs.At(i)
			for j := range res.ScopeSpans().Len() {
				ss := res.ScopeSpans().At(j).Spans()
				for k := range ss.Len() {
					r.spans = append(r.spans, Span{Span: ss.At(k), Resource: res.Resource()})
				}
			}
		}
		r.mu.Unlock()
		r.answer(w, ptraceotlp.NewExportResponse().MarshalProto)
	})
	mux.HandleFunc("POST /v1/metrics", func(w http.ResponseWriter, req *http.Request) {
		if o.TracesOnly {
			r.mu.Lock()
			r.refused[req.URL.Path]++
			r.mu.Unlock()
			http.NotFound(w, req)
			return
		}
		r.wait(req)
		if o.Discard {
			io.Copy(io.Discard, req.Body)
			r.answer(w, pmetricotlp.NewExportResponse().MarshalProto)
			return
		}
		er := pmetricotlp.NewExportRequest()
		if !decode(t, w, req, er.UnmarshalProto) {
			return
		}
		rm := er.Metrics().ResourceMetrics()
		r.mu.Lock()
		for i := range rm.Len() {
			sm := rm.At(i).ScopeMetrics()
			for j := range sm.Len() {
				ms := sm.At(j).Metrics()
				for k := range ms.Len() {
					r.metrics[ms.At(k).Name()] = append(r.metrics[ms.At(k).Name()], ms.At(k))
				}
			}
		}
		r.mu.Unlock()
		r.answer(w, pmetricotlp.NewExportResponse().MarshalProto)
	})
	r.srv = httptest.NewServer(mux)
	t.Cleanup(r.srv.Close)
	r.URL = r.srv.URL
	return r
}

// wait holds a request for the receiver's latency and notes its headers.
func (r *Receiver) wait(req *http.Request) {
	r.mu.Lock()
	r.headers = req.Header.Clone()
	r.mu.Unlock()
	if r.o.Latency > 0 {
		select {
		case <-time.After(r.o.Latency):
		case <-req.Context().Done():
		}
	}
}

// decode reads a request's protobuf body, gzip or not, into unmarshal;
// on failure it answers the request with the error and reports false.
func decode(t testing.TB, w http.ResponseWriter, req *http.Request, unmarshal func([]byte) error) bool {
	if ct := req.Header.Get("Content-Type"); ct != "application/x-protobuf" {
		t.Errorf("otlptest: %s: Content-Type %q, want application/x-protobuf", req.URL.Path, ct)
		http.Error(w, "want application/x-protobuf", http.StatusUnsupportedMediaType)
		return false
	}
	var in io.Reader = req.Body
	if req.Header.Get("Content-Encoding") == "gzip" {
		z, err := gzip.NewReader(req.Body)
		if err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return false
		}
		in = z
	}
	body, err := io.ReadAll(in)
	if err == nil {
		if err = unmarshal(body); err != nil {
			t.Errorf("otlptest: %s: %v", req.URL.Path, err)
		}
	}
	if err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return false
	}
	return true
}

// answer writes an empty export response and notes the request.
func (r *Receiver) answer(w http.ResponseWriter, marshal func() ([]byte, error)) {
	b, _ := marshal()
	w.Header().Set("Content-Type", "application/x-protobuf")
	w.Write(b)
	r.mu.Lock()
	r.requests++
	r.mu.Unlock()
}

// Spans returns the spans received so far.
func (r *Receiver) Spans() []Span {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]Span(nil), r.spans...)
}

// Metric returns every received copy of the metric named name (one per
// export that carried it), the latest last.
func (r *Receiver) Metric(name string) []pmetric.Metric {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]pmetric.Metric(nil), r.metrics[name]...)
}

// MetricNames returns the names of every metric received.
func (r *Receiver) MetricNames() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	names := make([]string, 0, len(r.metrics))
	for n := range r.metrics {
		names = append(names, n)
	}
	return names
}

// Refused returns how many requests to path were answered 404.
func (r *Receiver) Refused(path string) int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.refused[path]
}

// Header returns a header of the last export request.
func (r *Receiver) Header(name string) string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.headers.Get(name)
}

// Requests returns how many export requests were decoded.
func (r *Receiver) Requests() int {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.requests
}
