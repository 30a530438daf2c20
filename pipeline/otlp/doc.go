// Package otlp is a sink that sends what the engine found to a tracing
// backend over OTLP/HTTP (protobuf). Every turn becomes a span that starts
// when its request was sent and ends when its last audio played, with its
// timing figures and verdict as attributes; every underrun is an
// "underrun" event on it, at the moment the player ran dry, and every
// silence while the stream stopped for a tool call a "tool_silence" event.
//
// Which span: a turn whose LLM call underrun saw itself (it knows the
// model: a client, a proxy, a benchmark result) and that comes with no
// caller's span is the GenAI client inference span of that call, as the
// semantic conventions v1.41.0 define it ("chat {model}", kind client);
// any other turn, and every turn with a W3C traceparent (the app's own LLM
// span is the call; the turn's span joins that trace as its child), is a
// "speech turn" span described by underrun.* attributes alone, so that
// Langfuse and Phoenix do not count the call twice.
//
// When: a turn with a wall-clock start is sent at once; turns without one
// are kept in a temporary file and, at Shutdown, laid one after another
// so that the last ends then. A replay faster than recorded passes
// TurnRecord.Speed: the spans keep the wall-clock length of the playing.
//
// Nothing is lost without a count: the spans wait in a bounded queue and
// leave in batches from one goroutine; an offline exporter
// (Options.Offline) waits for room and, at Shutdown, for every span, a
// live one drops what finds the queue full, and Delivery, DeliveryText and
// Collector (Prometheus) say what became of every span. A backend that
// answers a signal's path with 404 or 405 does not take that signal: it
// is reported once, through Options.OnNotTaken, and not sent again.
//
// Metrics go with the spans: the OpenTelemetry GenAI client metrics where
// the semantic conventions name one (gen_ai.client.operation.
// time_to_first_chunk, time_per_output_chunk, duration and
// gen_ai.client.token.usage, semconv/v1.41.0/genaiconv) and underrun.* for
// the rest. names.go lists every name.
//
// The OpenTelemetry Go SDK (v1.47.0) sends the spans (its OTLP/HTTP
// client) and makes the metrics; the spans are encoded here, straight to
// protobuf (proto.go), and the time per output chunk is bucketed here
// (itl.go): the SDK's tracer and one histogram measurement per ITL made
// analyze --otlp four times as slow on a large benchmark file.
//
// The package prints nothing and reads no environment of its own:
// FromEnv reads the standard OTEL_* settings through the getenv a command
// passes, and the SDK reads those it takes itself (headers, certificates,
// compression, OTEL_SERVICE_NAME, OTEL_RESOURCE_ATTRIBUTES). An export
// that fails is reported once, through Options.OnError.
package otlp
