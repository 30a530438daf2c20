// Package otlp is a sink that sends what the engine found to a tracing
// backend over OTLP/HTTP (protobuf), with the OpenTelemetry Go SDK: every
// turn becomes a span named "turn" that starts when its request was sent
// and ends when its last audio played (real wall-clock times when the turn
// has them, else times laid out one turn after another from the export's
// start), with its timing figures and verdict as attributes; every
// underrun is an event on that span, at the moment the player ran dry,
// with its class, cause, token, ITL, stall tolerance and where it fell.
//
// Metrics go with the spans: the OpenTelemetry GenAI client metrics where
// the semantic conventions name one (gen_ai.client.operation.
// time_to_first_chunk, time_per_output_chunk, duration and
// gen_ai.client.token.usage, semantic conventions v1.41.0 as the SDK's
// semconv/v1.41.0/genaiconv defines them) and underrun.* for the rest
// (TPOT, time to first audio, turns and good turns, underruns by class and
// cause). Names.go lists every name.
//
// A turn may carry a W3C traceparent (the live monitor's turn_start does):
// its span is then a child of that span, in the caller's trace, read with
// the SDK's propagation.TraceContext.
//
// The package prints nothing and reads no flags or environment of its own
// (the SDK reads the standard OTEL_EXPORTER_OTLP_* settings it was not
// given, such as headers); an export that fails is reported once, through
// Options.OnError, and never stops or slows the engine: spans wait in the
// SDK's bounded batch queue, and Shutdown gives up after a bounded time.
package otlp
