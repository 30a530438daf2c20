package otlp

import (
	"context"
	"errors"
	"fmt"
	"net/http"
	"net/url"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"time"

	"github.com/google/uuid"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/exporters/otlp/otlpmetric/otlpmetrichttp"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace"
	"go.opentelemetry.io/otel/exporters/otlp/otlptrace/otlptracehttp"
	"go.opentelemetry.io/otel/metric"
	"go.opentelemetry.io/otel/propagation"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
	"go.opentelemetry.io/otel/sdk/resource"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
	"go.opentelemetry.io/otel/semconv/v1.41.0/genaiconv"
	"go.opentelemetry.io/otel/trace"
	commonpb "go.opentelemetry.io/proto/otlp/common/v1"
	resourcepb "go.opentelemetry.io/proto/otlp/resource/v1"
	tracepb "go.opentelemetry.io/proto/otlp/trace/v1"
	"google.golang.org/protobuf/reflect/protoreflect"

	"github.com/speech-pipeline/underrun/pipeline"
)

// DefaultTimeout bounds one export request, with its retries; a live
// run's Shutdown waits at most twice as long.
const DefaultTimeout = 3 * time.Second

// DefaultService is the service.name of the resource unless the
// environment's OTEL_SERVICE_NAME or OTEL_RESOURCE_ATTRIBUTES name another.
const DefaultService = "underrun"

// DefaultProvider is the gen_ai.provider.name when Options.Provider is
// empty: underrun saw the stream, not who served it.
const DefaultProvider = "unknown"

// DefaultOperation is the gen_ai.operation.name of a turn that does not
// say its own (pipeline.Turn.Operation) when Options.Operation is empty.
const DefaultOperation = "chat"

// ErrEndpoint reports an endpoint that is not an http or https URL.
var ErrEndpoint = errors.New("invalid OTLP endpoint")

// ErrExport reports telemetry the backend did not take.
var ErrExport = errors.New("OTLP export failed")

// ErrNotTaken reports a backend that answered a signal's path with 404 or
// 405: it takes no traces (or no metrics). It is no loss: the signal is
// not sent again.
var ErrNotTaken = errors.New("the backend does not take this signal")

// Options configure an Exporter. Endpoint, TracesEndpoint and
// MetricsEndpoint say where the telemetry goes, as the standard
// OTEL_EXPORTER_OTLP_ENDPOINT, OTEL_EXPORTER_OTLP_TRACES_ENDPOINT and
// OTEL_EXPORTER_OTLP_METRICS_ENDPOINT do: traces go to TracesEndpoint as
// it is, else to Endpoint + /v1/traces; metrics likewise (/v1/metrics); a
// signal with neither, or turned off, is not sent. FromEnv fills them from
// the environment. The SDK takes the rest from the standard environment
// itself (OTEL_EXPORTER_OTLP_HEADERS, certificates, compression,
// OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES).
type Options struct {
	Endpoint, TracesEndpoint, MetricsEndpoint string
	// NoTraces and NoMetrics turn a signal off though an endpoint names it
	// (OTEL_TRACES_EXPORTER=none, OTEL_METRICS_EXPORTER=none).
	NoTraces, NoMetrics bool
	// Timeout bounds each export request with its retries (0:
	// DefaultTimeout).
	Timeout time.Duration
	// TPOTSLO, when positive, is the TPOT a turn must stay within to
	// pass, as the report's verdict counts it (pipeline.ReportOptions);
	// zero: none, the verdict is what the listener hears. TTFTSLO is the
	// same for the TTFT.
	TPOTSLO, TTFTSLO time.Duration
	// Provider is the gen_ai.provider.name of the GenAI client spans and
	// metrics ("": DefaultProvider); a command that spoke the OpenAI API to
	// the server itself says "openai".
	Provider string
	// Operation is their gen_ai.operation.name where the turn does not say
	// its own (pipeline.Turn.Operation: chat, or text_completion for
	// /v1/completions); "": DefaultOperation.
	Operation string
	// Server is the URL of the LLM server underrun called, when it called
	// one (capture, proxy, speak --url): server.address and server.port of
	// the GenAI client spans and metrics.
	Server string
	// Command names the underrun command that exports (a resource
	// attribute, underrun.command).
	Command string
	// InstanceID is service.instance.id ("": a random UUID, so that a
	// fleet of monitors exports distinct series; OTEL_RESOURCE_ATTRIBUTES
	// may set it too).
	InstanceID string
	// Offline says the run is not live (analyze, sim, replay, capture):
	// every span is delivered, Export waiting while the queue is full and
	// Shutdown waiting for every export, each bounded by Timeout, unless
	// its context ends. A live run (monitor, proxy, speak) never waits: a
	// span that finds the queue full is dropped and counted.
	Offline bool
	// QueueSize is how many spans may wait for export (0: DefaultQueue).
	QueueSize int
	// OnError, when set, is called once, with the first export that
	// failed (wrapping ErrExport and naming the endpoint); later failures
	// are counted and Shutdown reports them.
	OnError func(error)
	// OnNotTaken, when set, is called once per signal the backend does
	// not take (404 or 405 on its path), with a *NotTakenError. It is no
	// failure: the signal is not sent again.
	OnNotTaken func(error)
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
	if o.NoTraces {
		traces = ""
	}
	if o.NoMetrics {
		metrics = ""
	}
	return traces, metrics, nil
}

// Exporter turns finished turns into spans and metrics and sends them.
// It is safe for concurrent use. Create it with New; Shutdown sends what
// is left.
type Exporter struct {
	opts            Options
	ctx             context.Context
	client          otlptrace.Client // nil: no traces
	resource        *resourcepb.Resource
	resourceSchema  string
	ids             *ids
	batch           []byte // the spans of the export under way (the queue's goroutine's)
	mp              *sdkmetric.MeterProvider
	queue           *queue
	counts          counts
	traces, metrics string // where each signal goes ("": not sent)
	serverAddr      string
	serverPort      int
	inst            instruments
	itl             *itlHistogram
	// exports that failed, by signal
	tracesFailed, metricsFailed atomic.Int64
	metricsRefused              atomic.Bool

	mu       sync.Mutex
	spill    spill // the turns without a start time, laid out at Shutdown
	failed   int   // exports that failed
	first    error // the first of them
	notTaken [2]bool
	closed   bool
	sets     attrSets
}

// attrSets are the metric attribute sets already built, by what varies.
type attrSets struct {
	genai map[[2]string]genaiSets // by operation and model
	turns map[[2]string]metric.MeasurementOption
	gaps  map[[2]string]metric.MeasurementOption
}

// genaiSets are the GenAI metric attributes of an operation on a model, and the record
// options made of them once (with the token type for the token usage).
type genaiSets struct {
	op                     attribute.Set
	opRecord, tokensRecord []metric.RecordOption
}

// instruments are the metrics an Exporter records through the SDK (the
// time per output chunk is itlHistogram).
type instruments struct {
	ttfc      genaiconv.ClientOperationTimeToFirstChunk
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
// the first batch of spans leaves the queue.
func New(ctx context.Context, o Options) (*Exporter, error) {
	if o.Timeout <= 0 {
		o.Timeout = DefaultTimeout
	}
	if o.Provider == "" {
		o.Provider = DefaultProvider
	}
	if o.Operation == "" {
		o.Operation = DefaultOperation
	}
	if o.QueueSize <= 0 {
		o.QueueSize = DefaultQueue
	}
	if o.InstanceID == "" {
		o.InstanceID = uuid.NewString()
	}
	traces, metrics, err := o.signalURLs()
	if err != nil {
		return nil, err
	}
	if traces == "" && metrics == "" {
		return nil, fmt.Errorf("%w: no endpoint given, or every signal turned off", ErrEndpoint)
	}
	e := &Exporter{opts: o, ctx: context.Background(), traces: traces, metrics: metrics, ids: newIDs()}
	e.sets = attrSets{genai: map[[2]string]genaiSets{}, turns: map[[2]string]metric.MeasurementOption{},
		gaps: map[[2]string]metric.MeasurementOption{}}
	if o.Server != "" {
		if u, err := url.Parse(o.Server); err == nil && u.Host != "" {
			e.serverAddr, e.serverPort = serverOf(u)
		}
	}
	res, err := newResource(ctx, o)
	if err != nil {
		return nil, err
	}
	if traces != "" {
		// protobuf, whatever the environment says: the spans are encoded
		// here (proto.go)
		client := otlptracehttp.NewClient(otlptracehttp.WithEndpointURL(traces), otlptracehttp.WithTimeout(o.Timeout),
			otlptracehttp.WithEncoding(otlptracehttp.EncodingProtobuf),
			otlptracehttp.WithRetry(otlptracehttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond,
				MaxInterval: time.Second, MaxElapsedTime: o.Timeout}))
		if err := client.Start(ctx); err != nil {
			return nil, fmt.Errorf("otlp: traces exporter for %s: %w", traces, err)
		}
		e.client = client
		e.resource = &resourcepb.Resource{}
		e.resource.ProtoReflect().SetUnknown(appendAttrs(nil, fResourceAttributes, res.Attributes()))
		e.resourceSchema = res.SchemaURL()
		e.queue = newQueue(o.QueueSize, DefaultBatch, o.Timeout, o.Offline, &e.counts, e.sendSpans)
	}
	var meter metric.Meter
	if metrics != "" {
		exp, err := otlpmetrichttp.New(ctx, otlpmetrichttp.WithEndpointURL(metrics), otlpmetrichttp.WithTimeout(o.Timeout),
			otlpmetrichttp.WithRetry(otlpmetrichttp.RetryConfig{Enabled: true, InitialInterval: 100 * time.Millisecond,
				MaxInterval: time.Second, MaxElapsedTime: o.Timeout}))
		if err != nil {
			e.shutdownTraces()
			return nil, fmt.Errorf("otlp: metrics exporter for %s: %w", metrics, err)
		}
		e.itl = newITLHistogram(exp.Temporality(sdkmetric.InstrumentKindHistogram) == metricdata.DeltaTemporality)
		ropts := []sdkmetric.PeriodicReaderOption{sdkmetric.WithTimeout(o.Timeout), sdkmetric.WithProducer(e.itl)}
		if o.MetricInterval > 0 {
			ropts = append(ropts, sdkmetric.WithInterval(o.MetricInterval))
		}
		e.mp = sdkmetric.NewMeterProvider(sdkmetric.WithResource(res),
			sdkmetric.WithReader(sdkmetric.NewPeriodicReader(metricGuard{exp, e}, ropts...)))
		meter = e.mp.Meter(ScopeName, metric.WithSchemaURL(semconv.SchemaURL))
	}
	if err := e.inst.make(meter); err != nil {
		e.shutdownTraces()
		return nil, err
	}
	return e, nil
}

// newResource starts from the SDK's default resource (telemetry.sdk.*,
// and what the environment says) and adds service.name (the
// environment's wins), service.instance.id and underrun.command.
func newResource(ctx context.Context, o Options) (*resource.Resource, error) {
	ours := resource.NewSchemaless(semconv.ServiceName(DefaultService), semconv.ServiceInstanceID(o.InstanceID),
		attribute.String("underrun.command", o.Command))
	res, err := resource.Merge(resource.DefaultWithContext(ctx), ours)
	if err != nil {
		return nil, fmt.Errorf("otlp: resource: %w", err)
	}
	env, err := resource.New(ctx, resource.WithFromEnv())
	if err != nil {
		env = resource.Empty() // a malformed OTEL_RESOURCE_ATTRIBUTES is left out, as the SDK does
	}
	if res, err = resource.Merge(res, env); err != nil {
		return nil, fmt.Errorf("otlp: resource: %w", err)
	}
	return res, nil
}

// serverOf is a URL's server.address and server.port (the scheme's
// default port when it names none).
func serverOf(u *url.URL) (string, int) {
	host, port := u.Hostname(), u.Port()
	if port == "" {
		if u.Scheme == "https" {
			return host, 443
		}
		return host, 80
	}
	p, _ := strconv.Atoi(port)
	return host, p
}

// make creates the instruments on m (nil: no metrics; every instrument a
// no-op).
func (in *instruments) make(m metric.Meter) error {
	var errs []error
	keep := func(err error) { errs = append(errs, err) }
	buckets := metric.WithExplicitBucketBoundaries(latencyBuckets[:]...)
	var err error
	in.ttfc, err = genaiconv.NewClientOperationTimeToFirstChunk(m, buckets)
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
	// with: its span joins that trace as a child of that span, the app's
	// own (LLM) span, and so describes the speech turn with underrun.*
	// attributes alone. A traceparent that cannot be read starts a trace
	// of its own, and is kept in the underrun.traceparent attribute.
	Traceparent, Tracestate string
	// Start, when not zero, replaces Turn.Start as when the request was
	// sent on the wall clock (a replay faster than recorded: the turn's
	// own start is on the faster clock).
	Start time.Time
	// Speed is how many times as fast as recorded the turn was played
	// (replay --speed; 0 is 1): its span and events keep the wall-clock
	// times of the playing, the turn's times divided by Speed. The
	// attributes keep the turn's own figures.
	Speed float64
}

// Export records one turn: its span, with an event per underrun and per
// tool-call silence, and its metrics. A turn with a start time is sent
// at once; one without waits for Shutdown, which lays such turns one
// after another so that the last ends then. Export waits only in an
// offline run, while the queue is full; a live run's full queue drops the
// span and counts it.
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
	start := r.Start
	if start.IsZero() {
		start = t.Start
	}
	e.mu.Lock()
	closed := e.closed
	e.mu.Unlock()
	if closed {
		return
	}
	if e.client != nil {
		e.counts.spans.Add(1)
		sp := specs.Get().(*spec)
		e.fill(sp, r, f, us, start.IsZero())
		if start.IsZero() {
			e.mu.Lock()
			err := e.spill.add(sp)
			e.mu.Unlock()
			if err != nil {
				e.counts.failed.Add(1)
				e.fail("", err)
			}
		} else {
			e.queue.add(e.protoSpan(sp, start, r.Speed))
		}
		specs.Put(sp)
	}
	if e.mp != nil {
		e.record(f, us, t)
	}
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
	f.tm.Tokens = t.Tokens() // a turn with no chunk too
	f.tpot, f.hasTPOT = t.TPOTOver(f.tm.Tokens)
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
	if !f.good || e.opts.TPOTSLO > 0 && f.hasTPOT && f.tpot*float64(time.Second) > float64(e.opts.TPOTSLO) ||
		e.opts.TTFTSLO > 0 && f.hasTiming && f.tm.TTFT > e.opts.TTFTSLO {
		f.verdict = "fail"
	}
	return f
}

// specs are the specs a turn's span is built in, reused: encoding one
// keeps nothing of it.
var specs = sync.Pool{New: func() any { return new(spec) }}

// fill builds a turn's span in sp. A turn whose call underrun saw (it
// knows the model) and that comes with no caller's span is the GenAI
// client span of that call; any other is a speech turn, described by
// underrun.* attributes alone, so that a backend does not read it as a
// second LLM call under the app's own.
func (e *Exporter) fill(sp *spec, r TurnRecord, f figures, us []pipeline.Underrun, virtual bool) {
	t := r.Turn
	*sp = spec{name: SpanTurn, length: f.end, traceparent: r.Traceparent, tracestate: r.Tracestate,
		call: t.Model != "" && r.Traceparent == "", attrs: sp.attrs[:0], events: sp.events[:0], flat: sp.flat[:0]}
	clock := "wall"
	if virtual {
		clock = "virtual"
	}
	a := sp.attrs
	if sp.call {
		op := e.operation(t)
		sp.name = CallSpanName(op, t.Model)
		a = append(a, attrOperation.String(op), attrProvider.String(e.opts.Provider),
			attrRequestModel.String(t.Model), attrStream.Bool(true), attrOutputTokens.Int(f.tm.Tokens))
		if t.Session != "" {
			a = append(a, attrConversation.String(t.Session))
		}
		if f.hasTiming {
			a = append(a, attrFirstChunk.Float64(f.tm.TTFT.Seconds()))
		}
		if e.serverAddr != "" {
			a = append(a, attrServerAddr.String(e.serverAddr), attrServerPort.Int(e.serverPort))
		}
		if t.Status == pipeline.StatusError {
			a = append(a, attrErrorType.String("_OTHER"))
		}
	}
	a = append(a,
		AttrTurn.String(t.ID), AttrStatus.String(f.status), AttrVerdict.String(f.verdict),
		AttrSpeechGood.Bool(f.good), AttrClock.String(clock),
		AttrTokens.Int(f.tm.Tokens), AttrChunks.Int(len(t.Chunks)),
		AttrGlitches.Int(f.tally.Glitches), AttrInterrupts.Int(f.tally.Interruptions),
		AttrUnderrunMs.Float64(pipeline.Millis(f.tally.Silence)))
	if f.tally.ToolSilences > 0 {
		a = append(a, AttrToolSilences.Int(f.tally.ToolSilences), AttrToolSilence.Float64(pipeline.Millis(f.tally.ToolSilence)))
	}
	if t.Session != "" {
		a = append(a, AttrSession.String(t.Session))
	}
	if f.hasTiming {
		a = append(a, AttrTTFT.Float64(pipeline.Millis(f.tm.TTFT)), AttrE2EL.Float64(pipeline.Millis(f.tm.E2E)))
	}
	if f.hasTPOT {
		a = append(a, AttrTPOT.Float64(f.tpot*1000))
	}
	p := r.Playout
	if p != nil {
		a = append(a, AttrSpeech.Float64(pipeline.Millis(f.speech)), AttrMinPreroll.Float64(pipeline.Millis(f.minPreroll)))
		if f.hasTTFA {
			a = append(a, AttrTTFA.Float64(pipeline.Millis(f.ttfa)))
		}
		if f.hasMinTol {
			a = append(a, AttrMinTolerance.Float64(pipeline.Millis(f.minTol)))
		}
		if f.stack != "" {
			a = append(a, AttrStack.String(f.stack))
		}
	}
	if r.Speed > 0 && r.Speed != 1 {
		a = append(a, AttrSpeed.Float64(r.Speed))
	}
	if r.Traceparent != "" {
		carrier := propagation.MapCarrier{"traceparent": r.Traceparent}
		if !trace.SpanContextFromContext(propagation.TraceContext{}.Extract(context.Background(), carrier)).IsValid() {
			a = append(a, AttrTraceparent.String(r.Traceparent))
		}
	}
	sp.attrs = a
	// the events' attributes go in one array, each event's its part of it
	from := make([]int, 0, 8)
	for i := range us {
		u := &us[i]
		from = append(from, len(sp.flat))
		if u.Cause == pipeline.CauseTool {
			sp.events = append(sp.events, e.toolEvent(sp, p, u))
			continue
		}
		sp.flat = append(sp.flat,
			AttrClass.String(string(u.Class)), AttrCause.String(string(u.Cause)), AttrPosition.String(string(u.Position)),
			AttrToken.Int(u.Token), AttrChunk.Int(u.Chunk), AttrITL.Float64(pipeline.Millis(u.ITL)),
			AttrStart.Float64(pipeline.Millis(u.Start)), AttrDuration.Float64(pipeline.Millis(u.Duration)))
		if u.Tolerance != pipeline.Unbounded {
			sp.flat = append(sp.flat, AttrTolerance.Float64(pipeline.Millis(u.Tolerance)))
		}
		sp.events = append(sp.events, eventSpec{name: EventUnderrun, at: u.Start})
	}
	for i := range sp.events {
		to := len(sp.flat)
		if i+1 < len(from) {
			to = from[i+1]
		}
		sp.events[i].attrs = sp.flat[from[i]:to:to]
	}
	if t.Status == pipeline.StatusError {
		sp.failed, sp.errText = true, t.Error
	}
}

// toolEvent is the tool_silence event of a gap while the stream stopped
// for a tool call: no underrun, so neither class nor cause. Its
// attributes go at the end of sp.flat.
func (e *Exporter) toolEvent(sp *spec, p *pipeline.Playout, u *pipeline.Underrun) eventSpec {
	ev := append(sp.flat,
		AttrStart.Float64(pipeline.Millis(u.Start)), AttrDuration.Float64(pipeline.Millis(u.Duration)),
		AttrToken.Int(u.Token), AttrPosition.String(string(u.Position)))
	if p != nil {
		if tc, ok := p.ToolCallOf(u); ok {
			if tc.Name != "" {
				ev = append(ev, AttrToolName.String(tc.Name))
			}
			ev = append(ev, AttrToolMs.Float64(pipeline.Millis(tc.Duration)))
		}
		if cfg := p.Config(); cfg.Filler.Plays() {
			cov := cfg.Filler.Cover(u.Duration, cfg)
			ev = append(ev, AttrFillerCovered.Float64(pipeline.Millis(cov.Covered)), AttrFillerLate.Float64(pipeline.Millis(cov.Late)))
		}
	}
	sp.flat = ev
	return eventSpec{name: EventToolSilence, at: u.Start}
}

// operation is t's gen_ai.operation.name: its own, or the options'.
func (e *Exporter) operation(t *pipeline.Turn) string {
	if t.Operation != "" {
		return string(t.Operation)
	}
	return e.opts.Operation
}

// genai returns the GenAI metrics' attribute sets of an operation on a
// model.
func (e *Exporter) genai(op, model string) genaiSets {
	key := [2]string{op, model}
	e.mu.Lock()
	defer e.mu.Unlock()
	if s, ok := e.sets.genai[key]; ok {
		return s
	}
	kvs := []attribute.KeyValue{attrOperation.String(op), attrProvider.String(e.opts.Provider)}
	if model != "" {
		kvs = append(kvs, attrRequestModel.String(model))
	}
	if e.serverAddr != "" {
		kvs = append(kvs, attrServerAddr.String(e.serverAddr), attrServerPort.Int(e.serverPort))
	}
	s := genaiSets{op: attribute.NewSet(kvs...)}
	tokens := attribute.NewSet(append(kvs, attribute.String("gen_ai.token.type", string(genaiconv.TokenTypeOutput)))...)
	s.opRecord = []metric.RecordOption{metric.WithAttributeSet(s.op)}
	s.tokensRecord = []metric.RecordOption{metric.WithAttributeSet(tokens)}
	e.sets.genai[key] = s
	return s
}

// attrOption returns the measurement option of two attributes' values,
// made once.
func (e *Exporter) attrOption(cache map[[2]string]metric.MeasurementOption, k1, k2 attribute.Key, v1, v2 string) metric.MeasurementOption {
	e.mu.Lock()
	defer e.mu.Unlock()
	key := [2]string{v1, v2}
	o, ok := cache[key]
	if !ok {
		o = metric.WithAttributeSet(attribute.NewSet(k1.String(v1), k2.String(v2)))
		cache[key] = o
	}
	return o
}

// record adds the turn to the metrics.
func (e *Exporter) record(f figures, us []pipeline.Underrun, t *pipeline.Turn) {
	ctx := context.Background()
	in := &e.inst
	if f.hasTiming {
		sets := e.genai(e.operation(t), t.Model)
		in.ttfc.Inst().Record(ctx, f.tm.TTFT.Seconds(), sets.opRecord...)
		in.duration.Inst().Record(ctx, f.tm.E2E.Seconds(), sets.opRecord...)
		e.itl.add(t, sets.op) // a tool call's time is no decode time
		in.tokens.Inst().Record(ctx, int64(f.tm.Tokens), sets.tokensRecord...)
	}
	if f.hasTPOT {
		in.tpot.Record(ctx, f.tpot)
	}
	if f.hasTTFA {
		in.ttfa.Record(ctx, f.ttfa.Seconds())
	}
	in.turns.Add(ctx, 1, e.attrOption(e.sets.turns, AttrStatus, AttrVerdict, f.status, f.verdict))
	if f.good {
		in.good.Add(ctx, 1)
	}
	in.speech.Add(ctx, f.speech.Seconds())
	for i := range us {
		u := &us[i]
		if u.Cause == pipeline.CauseTool {
			in.toolGap.Record(ctx, u.Duration.Seconds()) // no underrun
			continue
		}
		set := e.attrOption(e.sets.gaps, AttrClass, AttrCause, string(u.Class), string(u.Cause))
		in.underruns.Add(ctx, 1, set)
		in.gapLen.Record(ctx, u.Duration.Seconds(), set)
	}
}

// refusedStatus finds the HTTP status in an OTLP/HTTP exporter's error
// for a response it does not retry ("failed to send to URL: 404 Not
// Found (...)", "failed to send metrics to URL: ..."), 0 when none.
var refusedStatus = regexp.MustCompile(`failed to send (?:metrics )?to \S+: (\d{3}) `)

func statusOf(err error) int {
	m := refusedStatus.FindStringSubmatch(err.Error())
	if m == nil {
		return 0
	}
	n, _ := strconv.Atoi(m[1])
	return n
}

// notTakenStatus says whether an HTTP status means the backend does not
// take a signal: no handler at its path (404) or not for POST (405).
func notTakenStatus(code int) bool {
	return code == http.StatusNotFound || code == http.StatusMethodNotAllowed
}

// sendSpans exports one batch and says how it went. The encoded spans
// go in as the ScopeSpans message's span field, which protobuf writes as
// it is given.
func (e *Exporter) sendSpans(ctx context.Context, spans [][]byte) outcome {
	ss := &tracepb.ScopeSpans{Scope: &commonpb.InstrumentationScope{Name: ScopeName}, SchemaUrl: semconv.SchemaURL}
	e.batch = scopeSpansBytes(e.batch[:0], spans)
	ss.ProtoReflect().SetUnknown(protoreflect.RawFields(e.batch))
	err := e.client.UploadTraces(ctx, []*tracepb.ResourceSpans{{
		Resource: e.resource, SchemaUrl: e.resourceSchema, ScopeSpans: []*tracepb.ScopeSpans{ss},
	}})
	if err == nil {
		return delivered
	}
	if code := statusOf(err); notTakenStatus(code) {
		e.notTakenSignal(0, "traces", e.traces, code)
		return refused
	}
	e.tracesFailed.Add(1)
	e.fail(e.traces, fmt.Errorf("%d spans: %w", len(spans), err))
	return failed
}

// notTakenSignal reports, once, a signal the backend does not take.
func (e *Exporter) notTakenSignal(i int, signal, where string, code int) {
	e.mu.Lock()
	first := !e.notTaken[i]
	e.notTaken[i] = true
	e.mu.Unlock()
	if first && e.opts.OnNotTaken != nil {
		e.opts.OnNotTaken(&NotTakenError{Signal: signal, URL: where, Status: code})
	}
}

// NotTakenError is ErrNotTaken for one signal: where it went and what
// the backend answered.
type NotTakenError struct {
	Signal string // traces or metrics
	URL    string
	Status int // 404 or 405
}

func (e *NotTakenError) Error() string {
	return fmt.Sprintf("%s answered %d %s: this backend takes no %s", e.URL, e.Status, http.StatusText(e.Status), e.Signal)
}

// Is makes it ErrNotTaken for errors.Is.
func (*NotTakenError) Is(target error) bool { return target == ErrNotTaken }

// fail notes an export that failed: the first is reported through
// OnError.
func (e *Exporter) fail(where string, err error) {
	if where != "" {
		err = fmt.Errorf("%w to %s: %w", ErrExport, where, err)
	} else {
		err = fmt.Errorf("%w: %w", ErrExport, err)
	}
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

// Delivery returns what became of the spans so far.
func (e *Exporter) Delivery() Delivery { return e.counts.delivery() }

// Shutdown lays out the turns that had no start time so that the last
// ends now, sends the spans and metrics still waiting and stops the
// exporter. An offline run waits for every span, each export bounded by
// Options.Timeout, until ctx ends; a live one waits at most twice
// Options.Timeout. It returns an error wrapping ErrExport when an export
// failed or a span was not delivered, saying how many of how many were
// (OnError has had the first failure); Export does nothing after it.
func (e *Exporter) Shutdown(ctx context.Context) error {
	e.mu.Lock()
	if e.closed {
		e.mu.Unlock()
		return nil
	}
	e.closed = true
	e.mu.Unlock()
	var errs []error
	if e.client != nil {
		if e.spill.n > 0 {
			// the kept turns were waiting for this moment: they wait for
			// room in the queue, whatever the run
			e.queue.setBlock()
			at := time.Now().Add(-e.spill.total)
			err := e.spill.each(func(sp *spec) {
				if ctx.Err() == nil {
					e.queue.add(e.protoSpan(sp, at, 1))
				}
				at = at.Add(sp.length)
			})
			if err != nil {
				e.fail("", err)
			}
		}
		sctx, cancel := ctx, context.CancelFunc(func() {})
		if !e.opts.Offline {
			sctx, cancel = context.WithTimeout(ctx, 2*e.opts.Timeout)
		}
		if err := e.queue.shutdown(sctx); err != nil {
			errs = append(errs, fmt.Errorf("traces: %w", err))
		}
		cancel()
		stop, cancel := context.WithTimeout(ctx, e.opts.Timeout)
		_ = e.client.Stop(stop)
		cancel()
	}
	if e.mp != nil {
		mctx, cancel := context.WithTimeout(ctx, 2*e.opts.Timeout)
		if err := e.mp.Shutdown(mctx); err != nil {
			errs = append(errs, fmt.Errorf("metrics: %w", err))
		}
		cancel()
	}
	if err := errors.Join(errs...); err != nil {
		e.fail("", err) // what the guards did not see: the wait ran out
	}
	e.mu.Lock()
	defer e.mu.Unlock()
	d := e.counts.delivery()
	if e.failed == 0 && d.Lost() == 0 {
		return nil
	}
	msg := e.deliveryText(d)
	if e.first != nil {
		return fmt.Errorf("%s; the first failure: %w", msg, e.first)
	}
	return fmt.Errorf("%w: %s", ErrExport, msg)
}

// DeliveryText says how many spans were delivered to where, of how many,
// and what became of the rest: "2560 of 3000 spans delivered to URL (440
// dropped: the queue of 2048 was full)".
func (e *Exporter) DeliveryText() string {
	e.mu.Lock()
	defer e.mu.Unlock()
	return e.deliveryText(e.counts.delivery())
}

func (e *Exporter) deliveryText(d Delivery) string {
	if e.client == nil {
		return plural(int64(e.failed), "metric export", "metric exports") + " failed"
	}
	s := fmt.Sprintf("%d of %d spans delivered to %s", d.Delivered, d.Spans-d.Refused, e.traces)
	var why []string
	if d.Dropped > 0 {
		why = append(why, fmt.Sprintf("%d dropped: the queue of %d was full", d.Dropped, e.opts.QueueSize))
	}
	if d.Failed > 0 {
		why = append(why, fmt.Sprintf("%d in exports that failed", d.Failed))
	}
	if w := d.Waiting(); w > 0 {
		why = append(why, fmt.Sprintf("%d still waiting when the wait ran out", w))
	}
	if n := e.metricsFailed.Load(); n > 0 {
		why = append(why, plural(n, "metric export", "metric exports")+" failed")
	}
	if len(why) > 0 {
		s += " (" + strings.Join(why, "; ") + ")"
	}
	return s
}

func plural(n int64, one, many string) string {
	if n == 1 {
		return "1 " + one
	}
	return strconv.FormatInt(n, 10) + " " + many
}

// shutdownTraces stops the traces' queue and client made before New
// failed.
func (e *Exporter) shutdownTraces() {
	if e.client != nil {
		ctx, cancel := context.WithTimeout(context.Background(), e.opts.Timeout)
		defer cancel()
		_ = e.queue.shutdown(ctx)
		_ = e.client.Stop(ctx)
	}
}

// metricGuard is the metric exporter that notes a failure instead of
// handing it to the SDK's global error handler (which would print it),
// and stops sending metrics to a backend that does not take them.
type metricGuard struct {
	sdkmetric.Exporter
	e *Exporter
}

func (g metricGuard) Export(ctx context.Context, rm *metricdata.ResourceMetrics) error {
	if g.e.metricsRefused.Load() {
		return nil
	}
	err := g.Exporter.Export(ctx, rm)
	if err == nil {
		return nil
	}
	if code := statusOf(err); notTakenStatus(code) {
		g.e.metricsRefused.Store(true)
		g.e.notTakenSignal(1, "metrics", g.e.metrics, code)
		return nil
	}
	g.e.metricsFailed.Add(1)
	g.e.fail(g.e.metrics, fmt.Errorf("metrics: %w", err))
	return nil
}
