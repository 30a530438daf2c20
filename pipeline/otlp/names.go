package otlp

import (
	"go.opentelemetry.io/otel/attribute"
	semconv "go.opentelemetry.io/otel/semconv/v1.41.0"
)

// SpanTurn is the name of the span of a speech turn underrun did not see
// the LLM call of (its own attributes only: the app's own LLM span, if
// any, is the call); a turn whose call underrun saw is the GenAI client
// span CallSpanName names. EventUnderrun is the span event of one underrun,
// EventToolSilence of a silence while the stream stopped for a tool call
// (no underrun).
const (
	SpanTurn         = "speech turn"
	EventUnderrun    = "underrun"
	EventToolSilence = "tool_silence"
)

// CallSpanName is the name of the GenAI client span of a turn underrun saw
// the call of, as the semantic conventions build it: the operation, then
// the model ("chat gpt-4o-mini").
func CallSpanName(operation, model string) string { return operation + " " + model }

// ScopeName is the instrumentation scope of every span and metric.
const ScopeName = "github.com/speech-pipeline/underrun/pipeline/otlp"

// The attributes of a turn span. Durations are in milliseconds, as in
// underrun's reports, except the semantic conventions' own
// gen_ai.response.time_to_first_chunk, in seconds.
const (
	AttrTurn         = attribute.Key("underrun.turn.id")         // the turn's id
	AttrSession      = attribute.Key("underrun.session.id")      // its session (also gen_ai.conversation.id)
	AttrStatus       = attribute.Key("underrun.status")          // ok, error, cancelled, incomplete, barge_in
	AttrVerdict      = attribute.Key("underrun.verdict")         // pass or fail
	AttrSpeechGood   = attribute.Key("underrun.speech.good")     // no interruption and not failed: what speech goodput counts
	AttrTTFT         = attribute.Key("underrun.ttft_ms")         // first chunk's arrival
	AttrTPOT         = attribute.Key("underrun.tpot_ms")         // (E2E - TTFT) / (tokens - 1); absent below 2 tokens
	AttrE2EL         = attribute.Key("underrun.e2el_ms")         // last chunk's arrival
	AttrTTFA         = attribute.Key("underrun.ttfa_ms")         // time to first audio: the player started; absent when it never did
	AttrSpeech       = attribute.Key("underrun.speech_ms")       // audio released to the synthesizer
	AttrUnderrunMs   = attribute.Key("underrun.underrun_ms")     // silence in underruns, both classes (tool-call silences apart)
	AttrGlitches     = attribute.Key("underrun.glitches")        // underruns shorter than the interruption threshold
	AttrInterrupts   = attribute.Key("underrun.interruptions")   // underruns at least that long
	AttrToolSilences = attribute.Key("underrun.tool_silences")   // gaps while the stream stopped for a tool call: no underruns
	AttrToolSilence  = attribute.Key("underrun.tool_silence_ms") // their silence
	AttrMinTolerance = attribute.Key("underrun.min_tolerance_ms")
	AttrMinPreroll   = attribute.Key("underrun.min_preroll_ms") // the smallest pre-roll with no underrun
	AttrTokens       = attribute.Key("underrun.tokens")
	AttrChunks       = attribute.Key("underrun.chunks")
	AttrStack        = attribute.Key("underrun.stack")       // the named framework + TTS stack, when one was chosen
	AttrClock        = attribute.Key("underrun.clock")       // wall (the turn's own start time) or virtual (laid out by the exporter)
	AttrTraceparent  = attribute.Key("underrun.traceparent") // a traceparent that could not be read, kept as it came
	AttrSpeed        = attribute.Key("underrun.speed")       // replay --speed: the span lasts the turn's length over this
)

// The attributes of an underrun event.
const (
	AttrClass     = attribute.Key("underrun.class")        // glitch or interruption
	AttrCause     = attribute.Key("underrun.cause")        // stall, pace, startup, held, synthesizer, tool_call
	AttrPosition  = attribute.Key("underrun.position")     // where in the text it fell
	AttrToken     = attribute.Key("underrun.token")        // the chunk (from 0) that came late
	AttrChunk     = attribute.Key("underrun.chunk")        // the speech chunk that was awaited
	AttrITL       = attribute.Key("underrun.itl_ms")       // the inter-token latency behind it
	AttrTolerance = attribute.Key("underrun.tolerance_ms") // the stall the stream could take there with no gap
	AttrStart     = attribute.Key("underrun.start_ms")     // when it began, since the request
	AttrDuration  = attribute.Key("underrun.duration_ms")  // how long it lasted
)

// The attributes of a tool_silence event, besides underrun.start_ms,
// underrun.duration_ms, underrun.token and underrun.position.
const (
	AttrToolName = attribute.Key("underrun.tool.name") // the tool the stream stopped for
	AttrToolMs   = attribute.Key("underrun.tool_ms")   // how long the tool ran
	// with the playout's Config.Filler: what the filler plays over of the
	// silence, and how long a phrase that outlasts it holds back the reply
	AttrFillerCovered = attribute.Key("underrun.filler_covered_ms")
	AttrFillerLate    = attribute.Key("underrun.filler_late_ms")
)

// The semantic conventions' attributes (v1.41.0) of the GenAI client span
// of a turn whose call underrun saw; a speech turn span has none.
var (
	attrOperation    = semconv.GenAIOperationNameKey
	attrProvider     = semconv.GenAIProviderNameKey
	attrRequestModel = semconv.GenAIRequestModelKey
	attrStream       = semconv.GenAIRequestStreamKey
	attrConversation = semconv.GenAIConversationIDKey
	attrFirstChunk   = semconv.GenAIResponseTimeToFirstChunkKey
	attrOutputTokens = semconv.GenAIUsageOutputTokensKey
	attrServerAddr   = semconv.ServerAddressKey
	attrServerPort   = semconv.ServerPortKey
	attrErrorType    = semconv.ErrorTypeKey
)

// underrun's own metrics (the GenAI ones come from genaiconv).
const (
	MetricTPOT        = "underrun.turn.time_per_output_token" // s, histogram, per turn
	MetricTTFA        = "underrun.turn.time_to_first_audio"   // s, histogram, per turn
	MetricTurns       = "underrun.turns"                      // {turn}, counter, by underrun.status and underrun.verdict
	MetricGoodTurns   = "underrun.turns.good"                 // {turn}, counter: speech goodput is this over underrun.turns
	MetricSpeech      = "underrun.speech"                     // s, counter: audio of the turns
	MetricUnderruns   = "underrun.underruns"                  // {underrun}, counter, by underrun.class and underrun.cause
	MetricUnderrunLen = "underrun.underrun.duration"          // s, histogram, by underrun.class and underrun.cause
	MetricToolSilence = "underrun.tool_silence.duration"      // s, histogram: the silence while a stream stopped for a tool call (no underrun)
)

// latencyBuckets are the histogram boundaries, in seconds, of every
// duration metric: 5 ms to 10 s, as the monitor's Prometheus histograms,
// fine where token latencies and audible gaps fall.
var latencyBuckets = [...]float64{.005, .01, .02, .03, .04, .05, .075, .1, .15, .2, .3, .5, .75, 1, 2, 5, 10}
