package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"
	"sync"
	"time"

	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/codes"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	sdktrace "go.opentelemetry.io/otel/sdk/trace"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"

	"github.com/speech-pipeline/underrun/pipeline"
)

// DefaultTimeout bounds one export request, with its retries; Shutdown
// waits at most twice as long.
const DefaultTimeout = 3 * time.Second

// DefaultService is the service.name of the resource unless the
// environment's OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name another.
const DefaultService = "underrun"

// DefaultProvider is the gen_ai.provider.name the GenAI metrics carry when
// Options.Provider is empty: underrun sees the stream, not who served it.
const DefaultProvider = "unknown"

// ErrEndpoint reports an endpoint that is not an http or https URL.
var ErrEndpoint = errors.New("invalid OTLP endpoint")

// ErrExport reports telemetry the backend did not take.
var ErrExport = errors.New("OTLP export failed")

// Options configure an Exporter. Endpoint, TracesEndpoint and
// MetricsEndpoint say where the telemetry goes, as the standard
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT do: traces go to TracesEndpoint as
// it is, else to Endpoint + /v1/traces; metrics likewise (/v1/metrics); a
// signal with neither is not sent. Everything else the SDK takes from the
// standard environment (OTEL_EXPORTER_OTLP_HEADERS, its certificate and
// compression settings, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
type Options struct {
	Endpoint, TracesEndpoint, MetricsEndpoint string
	// Timeout bounds each export request with its retries (0:
	// DefaultTimeout).
	Timeout time.Duration
	// TPOTSLO, when positive, is the TPOT a turn must stay within to
	// pass, as the report's verdict counts it (pipeline.ReportOptions);
	// zero: none, the verdict is what the listener hears.
	TPOTSLO time.Duration
	// Provider is the gen_ai.provider.name of the GenAI metrics (""
	// DefaultProvider).
	Provider string
	// Command names the underrun command that exports (a resource
	// attribute, underrun.command).
	Command string
	// OnError, when set, is called once, with the first export that
	// failed (wrapping ErrExport and naming the endpoint); later failures
	// are counted and Shutdown returns their sum.
	OnError func(error)
	// MetricInterval is how often metrics are sent while the exporter
	// runs (0: the SDK's, OTEL_METRIC_EXPORT_INTERVAL or 60 s); Shutdown
	// always sends the last figures.
	MetricInterval time.Duration
}

// ParseEndpoint checks an OTLP/HTTP endpoint: an http or https URL with a
// host (a path, when given, is kept: the signal's path goes after it).
func ParseEndpoint(s string) (*url.URL, error) {
	u, err := url.Parse(s)
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrEndpoint, s, err)
	}
	if u.Scheme != "http" && u.Scheme != "https" {
		return nil, fmt.Errorf("%w %q: want an http:// or https:// URL (OTLP over HTTP, such as http://localhost:4318)", ErrEndpoint, s)
	}
	if u.Host == "" {
		return nil, fmt.Errorf("%w %q: the URL has no host", ErrEndpoint, s)
	}
	return u, nil
}

// signalURL is the URL of one signal under a base endpoint: its path
// with /v1/traces or /v1/metrics after it, as the OTLP exporter
// specification builds it from OTEL_EXPORTER_OTLP_ENDPOINT.
func signalURL(base *url.URL, signal string) string {
	u := *base
	u.Path = strings.TrimSuffix(u.Path, "/") + "/v1/" + signal
	u.RawPath = ""
	return u.String()
}

// Exporter turns finished turns into spans and metrics and sends them.
// It is safe for concurrent use. Create it with New; Shutdown sends what
// is left.
type Exporter struct {
	opts   Options
	tp     *sdktrace.TracerProvider
	mp     *sdkmetric.MeterProvider
	tracer trace.Tracer
	where  string // the endpoints, for messages
	inst   instruments

	mu      sync.Mutex
	virtual time.Time // where the next turn without a start time begins
	failed  int       // exports that failed
	first   error     // the first of them
	closed  bool
}

// instruments are the metrics an Exporter records.
type instruments struct {
	ttfc      genaiconv.ClientOperationTimeToFirstChunk
	tpoc      genaiconv.ClientOperationTimePerOutputChunk
	duration  genaiconv.ClientOperationDuration
	tokens    genaiconv.ClientTokenUsage
	tpot      metric.Float64Histogram
	ttfa      metric.Float64Histogram
	turns     metric.Int64Counter
	good      metric.Int64Counter
	speech    metric.Float64Counter
	underruns metric.Int64Counter
	gapLen    metric.Float64Histogram
	toolGap   metric.Float64Histogram
}

// New makes an Exporter. Nothing is sent, and no connection made, before
// the first turn's span leaves the SDK's batch.
func New(ctx context.Context, o Options) (*Exporter, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Provider == "" {
		o.Provider = DefaultProvider
	}
	traces, metrics, err := o.signalURLs()
	if err != nil {
		return nil, err
	}
	if traces == "" && metrics == "" {
		return nil, fmt.Errorf("%w: no endpoint given", ErrEndpoint)
	}
	e := &Exporter{opts: o, virtual: time.Now()}
	res, err := resource.Merge(
		resource.NewWithAttributes(semconv.SchemaURL, semconv.ServiceName(DefaultService), attribute.String("underrun.command", o.Command)),
		envResource(ctx))
	if err != nil {
		return nil, fmt.Errorf("otlp: resource: %w", err)
	}
	var where []string
	if traces != "" {
		where = append(where, "traces "+traces)
		exp, err := otlptracehttp.New(ctx, otlptracehttp.WithEndpointURL(traces), otlptracehttp.WithTimeout(o.Timeout),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond,
				MaxInterval: time.Second, MaxElapsedTime: o.Timeout}))
		if err != nil {
			return nil, fmt.Errorf("otlp: traces exporter for %s: %w", traces, err)
		}
		e.tp = sdktrace.NewTracerProvider(sdktrace.WithResource(res), sdktrace.WithSampler(sdktrace.AlwaysSample()),
			sdktrace.WithBatcher(spanGuard{exp, e, traces}, sdktrace.WithExportTimeout(o.Timeout)))
		e.tracer = e.tp.Tracer(ScopeName, trace.WithSchemaURL(semconv.SchemaURL))
	}
	var meter metric.Meter
	if metrics != "" {
		where = append(where, "metrics "+metrics)
		exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(metrics), otlpmetrichttp.WithTimeout(o.Timeout),
			otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond,
				MaxInterval: time.Second, MaxElapsedTime: o.Timeout}))
		if err != nil {
			e.shutdownTraces()
			return nil, fmt.Errorf("otlp: metrics exporter for %s: %w", metrics, err)
		}
		ropts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithTimeout(o.Timeout)}
		if o.MetricInterval > 0 {
			ropts = append(ropts, sdkmetric.WithInterval(o.MetricInterval))
		}
		e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricGuard{exp, e, metrics}, ropts...)))
		meter = e.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	}
	e.where = strings.Join(where, ", ")
	if err := e.inst.make(meter); err != nil {
		e.shutdownTraces()
		return nil, err
	}
	return e, nil
}

// envResource is the resource the environment describes
// (OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES); a malformed one is left
// out, as the SDK does.
func envResource(ctx context.Context) *resource.Resource {
	r, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		return resource.Empty()
	}
	return r
}

// signalURLs are where traces and metrics go ("": not sent).
func (o Options) signalURLs() (traces, metrics string, err error) {
	var base *url.URL
	if o.Endpoint != "" {
		if base, err = ParseEndpoint(o.Endpoint); err != nil {
			return "", "", err
		}
		traces, metrics = signalURL(base, "traces"), signalURL(base, "metrics")
	}
	if o.TracesEndpoint != "" {
		if _, err := ParseEndpoint(o.TracesEndpoint); err != nil {
			return "", "", err
		}
		traces = o.TracesEndpoint
	}
	if o.MetricsEndpoint != "" {
		if _, err := ParseEndpoint(o.MetricsEndpoint); err != nil {
			return "", "", err
		}
		metrics = o.MetricsEndpoint
	}
	return traces, metrics, nil
}

// make creates the instruments on m (nil: no metrics; every instrument a
// no-op).
func (in *instruments) make(m metric.Meter) error {
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	buckets := metric.WithExplicitBucketBoundaries(latencyBuckets...)
	var err error
	in.ttfc, err = genaiconv.NewClientOperationTimeToFirstChunk(m, buckets)
	keep(err)
	in.tpoc, err = genaiconv.NewClientOperationTimePerOutputChunk(m, buckets)
	keep(err)
	in.duration, err = genaiconv.NewClientOperationDuration(m, buckets)
	keep(err)
	in.tokens, err = genaiconv.NewClientTokenUsage(m)
	keep(err)
	if m == nil {
		return errors.Join(errs...)
	}
	in.tpot, err = m.Float64Histogram(MetricTPOT, metric.WithUnit("s"), buckets,
		metric.WithDescription("Time per output token of each turn: (E2E - TTFT) / (tokens - 1)."))
	keep(err)
	in.ttfa, err = m.Float64Histogram(MetricTTFA, metric.WithUnit("s"), buckets,
		metric.WithDescription("Time to first audio of each turn: when the player started, after the request."))
	keep(err)
	in.turns, err = m.Int64Counter(MetricTurns, metric.WithUnit("{turn}"),
		metric.WithDescription("Turns ended, by status and verdict."))
	keep(err)
	in.good, err = m.Int64Counter(MetricGoodTurns, metric.WithUnit("{turn}"),
		metric.WithDescription("Turns that ended ok with no interruption: speech goodput is underrun.turns.good / underrun.turns."))
	keep(err)
	in.speech, err = m.Float64Counter(MetricSpeech, metric.WithUnit("s"),
		metric.WithDescription("Audio of the turns ended, which interruptions per minute of speech count against."))
	keep(err)
	in.underruns, err = m.Int64Counter(MetricUnderruns, metric.WithUnit("{underrun}"),
		metric.WithDescription("Underruns (the player had nothing to play), by class and cause."))
	keep(err)
	in.gapLen, err = m.Float64Histogram(MetricUnderrunLen, metric.WithUnit("s"), buckets,
		metric.WithDescription("Length of each underrun, by class and cause."))
	keep(err)
	in.toolGap, err = m.Float64Histogram(MetricToolSilence, metric.WithUnit("s"), buckets,
		metric.WithDescription("Length of each silence while a turn's stream stopped for a tool call (no underrun)."))
	keep(err)
	if err := errors.Join(errs...); err != nil {
		return fmt.Errorf("otlp: instruments: %w", err)
	}
	return nil
}

// TurnRecord is one finished turn to export.
type TurnRecord struct {
	// Turn is the turn as it streamed; Playout its finished engine (nil:
	// no speech model ran, the span has the timings alone). Neither is
	// kept after Export returns.
	Turn    *pipeline.Turn
	Playout *pipeline.Playout
	// Underruns, when not nil, replace the playout's (the monitor's, cut
	// at a barge-in).
	Underruns []pipeline.Underrun
	// Status, when set, replaces the turn's status in the attributes
	// (barge_in).
	Status string
	// Traceparent and Tracestate are the W3C trace context the turn came
	// with: its span joins that trace as a child of that span. A
	// traceparent that cannot be read starts a trace of its own, and is
	// kept in the underrun.traceparent attribute.
	Traceparent, Tracestate string
}

// Export records one turn: its span, with an event per underrun, and its
// metrics. It never blocks on the network: spans wait in the SDK's
// bounded queue (the oldest are dropped when it is full).
func (e *Exporter) Export(r TurnRecord) {
	t, p := r.Turn, r.Playout
	if t == nil {
		return
	}
	us := r.Underruns
	if us == nil && p != nil {
		us = p.Underruns
	}
	status := r.Status
	if status == "" {
		status = string(t.Status)
		if status == "" {
			status = string(pipeline.StatusOK)
		}
	}
	f := e.figures(t, p, us, status)
	start, clock := t.Start, "wall"
	e.mu.Lock()
	if start.IsZero() {
		start, clock = e.virtual, "virtual"
		e.virtual = e.virtual.Add(f.end)
	}
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return
	}
	if e.tracer != nil {
		e.span(r, f, start, clock, us)
	}
	e.record(f, us, t)
}

// figures are what a turn's span and metrics say.
type figures struct {
	status, verdict string
	good            bool
	tm              pipeline.Timing
	hasTiming       bool
	tpot            float64 // seconds
	hasTPOT         bool
	ttfa            time.Duration
	hasTTFA         bool
	speech, end     time.Duration
	tally           pipeline.Tally // the underruns, and the tool-call silences apart
	minTol          time.Duration
	hasMinTol       bool
	minPreroll      time.Duration
	stack           string
}

func (e *Exporter) figures(t *pipeline.Turn, p *pipeline.Playout, us []pipeline.Underrun, status string) figures {
	f := figures{status: status}
	f.tm, f.hasTiming = t.Timing()
	f.tpot, f.hasTPOT = t.TPOTSeconds()
	if f.hasTiming {
		f.end = f.tm.E2E
	}
	for _, u := range us {
		f.end = max(f.end, u.Start+u.Duration)
	}
	f.tally = pipeline.TallyUnderruns(us)
	if p != nil {
		f.ttfa, f.hasTTFA = p.Started()
		f.speech = p.Speech()
		f.minPreroll = p.MinPreroll
		f.stack = p.Config().Stack
		for _, c := range p.Chunks {
			f.end = max(f.end, c.PlayEnd)
		}
		if f.hasTTFA {
			for k, tol := range p.Tolerance {
				if k < len(t.Chunks) && tol != pipeline.Unbounded && t.Chunks[k].At >= f.ttfa && (!f.hasMinTol || tol < f.minTol) {
					f.minTol, f.hasMinTol = tol, true
				}
			}
		}
	}
	failed := t.Status != pipeline.StatusOK && t.Status != ""
	f.good = !failed && f.tally.Interruptions == 0
	f.verdict = "pass"
	if !f.good || e.opts.TPOTSLO > 0 && f.hasTPOT && f.tpot*float64(time.Second) > float64(e.opts.TPOTSLO) {
		f.verdict = "fail"
	}
	return f
}

// span records the turn's span and its underrun events.
func (e *Exporter) span(r TurnRecord, f figures, start time.Time, clock string, us []pipeline.Underrun) {
	t := r.Turn
	ctx := context.Background()
	var badParent bool
	if r.Traceparent != "" {
		carrier := propagation.MapCarrier{"traceparent": r.Traceparent}
		if r.Tracestate != "" {
			carrier["tracestate"] = r.Tracestate
		}
		ctx = propagation.TraceContext{}.Extract(ctx, carrier)
		badParent = !trace.SpanContextFromContext(ctx).IsValid()
	}
	attrs := []attribute.KeyValue{
		attrOperation.String(string(genaiconv.OperationNameChat)),
		AttrTurn.String(t.ID), AttrStatus.String(f.status), AttrVerdict.String(f.verdict),
		AttrSpeechGood.Bool(f.good), AttrClock.String(clock),
		AttrTokens.Int(t.Tokens()), AttrChunks.Int(len(t.Chunks)),
		attrOutputTokens.Int(t.Tokens()),
		AttrGlitches.Int(f.tally.Glitches), AttrInterrupts.Int(f.tally.Interruptions),
		AttrUnderrunMs.Float64(pipeline.Millis(f.tally.Silence)),
	}
	if f.tally.ToolSilences > 0 {
		attrs = append(attrs, AttrToolSilences.Int(f.tally.ToolSilences), AttrToolSilence.Float64(pipeline.Millis(f.tally.ToolSilence)))
	}
	if t.Session != "" {
		attrs = append(attrs, AttrSession.String(t.Session), attrConversation.String(t.Session))
	}
	if f.hasTiming {
		attrs = append(attrs, AttrTTFT.Float64(pipeline.Millis(f.tm.TTFT)), AttrE2EL.Float64(pipeline.Millis(f.tm.E2E)),
			attrFirstChunk.Float64(f.tm.TTFT.Seconds()))
	}
	if f.hasTPOT {
		attrs = append(attrs, AttrTPOT.Float64(f.tpot*1000))
	}
	if r.Playout != nil {
		attrs = append(attrs, AttrSpeech.Float64(pipeline.Millis(f.speech)), AttrMinPreroll.Float64(pipeline.Millis(f.minPreroll)))
		if f.hasTTFA {
			attrs = append(attrs, AttrTTFA.Float64(pipeline.Millis(f.ttfa)))
		}
		if f.hasMinTol {
			attrs = append(attrs, AttrMinTolerance.Float64(pipeline.Millis(f.minTol)))
		}
		if f.stack != "" {
			attrs = append(attrs, AttrStack.String(f.stack))
		}
	}
	if badParent {
		attrs = append(attrs, AttrTraceparent.String(r.Traceparent))
	}
	if t.Status == pipeline.StatusError {
		attrs = append(attrs, attrErrorType.String("_OTHER"))
	}
	_, span := e.tracer.Start(ctx, SpanTurn, trace.WithTimestamp(start), trace.WithAttributes(attrs...),
		trace.WithSpanKind(trace.SpanKindInternal))
	for _, u := range us {
		ev := []attribute.KeyValue{
			AttrClass.String(string(u.Class)), AttrCause.String(string(u.Cause)), AttrPosition.String(string(u.Position)),
			AttrToken.Int(u.Token), AttrChunk.Int(u.Chunk), AttrITL.Float64(pipeline.Millis(u.ITL)),
			AttrStart.Float64(pipeline.Millis(u.Start)), AttrDuration.Float64(pipeline.Millis(u.Duration)),
		}
		if u.Tolerance != pipeline.Unbounded {
			ev = append(ev, AttrTolerance.Float64(pipeline.Millis(u.Tolerance)))
		}
		if u.Cause == pipeline.CauseTool && r.Playout != nil && r.Playout.Config().Filler.Plays() {
			cfg := r.Playout.Config()
			cov := cfg.Filler.Cover(u.Duration, cfg)
			ev = append(ev, AttrFillerCovered.Float64(pipeline.Millis(cov.Covered)), AttrFillerLate.Float64(pipeline.Millis(cov.Late)))
		}
		span.AddEvent(EventUnderrun, trace.WithTimestamp(start.Add(u.Start)), trace.WithAttributes(ev...))
	}
	if t.Status == pipeline.StatusError {
		span.SetStatus(codes.Error, t.Error)
	}
	span.End(trace.WithTimestamp(start.Add(f.end)))
}

// record adds the turn to the metrics.
func (e *Exporter) record(f figures, us []pipeline.Underrun, t *pipeline.Turn) {
	ctx := context.Background()
	in := &e.inst
	op, prov := genaiconv.OperationNameChat, genaiconv.ProviderNameAttr(e.opts.Provider)
	if f.hasTiming {
		in.ttfc.Record(ctx, f.tm.TTFT.Seconds(), op, prov)
		in.duration.Record(ctx, f.tm.E2E.Seconds(), op, prov)
		for itl := range t.ITLs() { // a tool call's time is no decode time
			in.tpoc.Record(ctx, itl.Seconds(), op, prov)
		}
		in.tokens.Record(ctx, int64(t.Tokens()), op, prov, genaiconv.TokenTypeOutput)
	}
	if e.mp == nil {
		return
	}
	if f.hasTPOT {
		in.tpot.Record(ctx, f.tpot)
	}
	if f.hasTTFA {
		in.ttfa.Record(ctx, f.ttfa.Seconds())
	}
	in.turns.Add(ctx, 1, metric.WithAttributes(AttrStatus.String(f.status), AttrVerdict.String(f.verdict)))
	if f.good {
		in.good.Add(ctx, 1)
	}
	in.speech.Add(ctx, f.speech.Seconds())
	for _, u := range us {
		if u.Cause == pipeline.CauseTool {
			in.toolGap.Record(ctx, u.Duration.Seconds()) // no underrun
			continue
		}
		set := metric.WithAttributes(AttrClass.String(string(u.Class)), AttrCause.String(string(u.Cause)))
		in.underruns.Add(ctx, 1, set)
		in.gapLen.Record(ctx, u.Duration.Seconds(), set)
	}
}

// fail notes an export that failed: the first is reported through
// OnError.
func (e *Exporter) fail(where string, err error) {
	err = fmt.Errorf("%w to %s: %w", ErrExport, where, err)
	e.mu.Lock()
	e.failed++
	first := e.first == nil
	if first {
		e.first = err
	}
	e.mu.Unlock()
	if first && e.opts.OnError != nil {
		e.opts.OnError(err)
	}
}

// Shutdown sends the spans and metrics still waiting and stops the
// exporter, waiting at most twice Options.Timeout (and no longer than ctx
// allows). It returns an error wrapping ErrExport when any export failed
// (OnError has had the first); Export does nothing after it.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	ctx, cancel := context.WithTimeout(ctx, 2*e.opts.Timeout)
	defer cancel()
	var errs []error
	if e.tp != nil {
		errs = append(errs, e.tp.Shutdown(ctx))
	}
	if e.mp != nil {
		errs = append(errs, e.mp.Shutdown(ctx))
	}
	if err := errors.Join(errs...); err != nil {
		// what the guards did not see: the wait ran out
		e.fail(e.where, err)
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	if e.failed > 0 {
		return fmt.Errorf("%d exports failed, the first: %w", e.failed, e.first)
	}
	return nil
}

// shutdownTraces stops a tracer provider made before New failed.
func (e *Exporter) shutdownTraces() {
	if e.tp != nil {
		ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
		defer cancel()
		_ = e.tp.Shutdown(ctx)
	}
}

// spanGuard is the span exporter that notes a failure instead of handing
// it to the SDK's global error handler (which would print it).
type spanGuard struct {
	sdktrace.SpanExporter
	e     *Exporter
	where string
}

func (g spanGuard) ExportSpans(ctx context.Context, spans []sdktrace.ReadOnlySpan) error {
	if err := g.SpanExporter.ExportSpans(ctx, spans); err != nil {
		g.e.fail(g.where, fmt.Errorf("%d spans: %w", len(spans), err))
	}
	return nil
}

// metricGuard is spanGuard for metrics.
type metricGuard struct {
	sdkmetric.Exporter
	e     *Exporter
	where string
}

func (g metricGuard) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if err := g.Exporter.Export(ctx, rm); err != nil {
		g.e.fail(g.where, fmt.Errorf("metrics: %w", err))
	}
	return nil
}
