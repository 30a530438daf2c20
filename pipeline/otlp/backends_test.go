package otlp_test

import (
	"strings"

	"go.opentelemetry.io/collector/pdata/pcommon"
)

// What two LLM tracing backends make of a span, written from their
// ingestion code (read, not copied), so the tests check the span the way
// each backend will file it.
//
// Langfuse, packages/shared/src/server/otel/ObservationTypeMapper.ts at
// commit 98bf336cc515345d431d8f02de1a657379447c4d and
// OtelIngestionProcessor.ts at 0030ed8fe732499506f8138623da0eabc12554a6:
// the observation type is the first of langfuse.observation.type,
// openinference.span.kind, gen_ai.operation.name (chat, completion,
// text_completion, generate_content, generate: GENERATION), a
// gen_ai.tool.name or gen_ai.tool.call.id (TOOL), then any model
// attribute (GENERATION); else SPAN. Usage comes from every gen_ai.usage.*
// and llm.token_count.* attribute; input and output from attributes
// such as input, output, input.value, gen_ai.input.messages.
//
// Arize Phoenix, src/phoenix/trace/gen_ai/conversion.py at commit
// 10c483a01064febb912e3503eac7e21d64f1bb39 (semantic conventions
// v1.41.1): a span with any gen_ai.* attribute gets OpenInference
// attributes synthesized; its kind is LLM for gen_ai.operation.name chat,
// text_completion or generate_content, or, with no operation, a request
// model or messages; gen_ai.usage.output_tokens becomes
// llm.token_count.completion. A span with no gen_ai.* attribute and no
// openinference.span.kind is left as it is (kind UNKNOWN).

// langfuseType is the observation type Langfuse gives a span.
func langfuseType(a pcommon.Map) string {
	str := func(k string) string {
		v, ok := a.Get(k)
		if !ok {
			return ""
		}
		return v.AsString()
	}
	if t := str("langfuse.observation.type"); t != "" {
		return strings.ToUpper(t)
	}
	switch str("openinference.span.kind") {
	case "LLM":
		return "GENERATION"
	case "":
	default:
		return str("openinference.span.kind")
	}
	switch str("gen_ai.operation.name") {
	case "chat", "completion", "text_completion", "generate_content", "generate":
		return "GENERATION"
	case "embeddings":
		return "EMBEDDING"
	case "invoke_agent", "create_agent":
		return "AGENT"
	case "execute_tool":
		return "TOOL"
	}
	if str("gen_ai.tool.name") != "" || str("gen_ai.tool.call.id") != "" {
		return "TOOL"
	}
	for _, k := range []string{"langfuse.observation.model.name", "gen_ai.request.model", "gen_ai.response.model", "llm.model_name", "model"} {
		if str(k) != "" {
			return "GENERATION"
		}
	}
	return "SPAN"
}

// langfuseUsage is the usage Langfuse reads from a span's attributes
// (outside the Vercel AI SDK's and Pydantic AI's scopes), by its keys.
func langfuseUsage(a pcommon.Map) map[string]float64 {
	names := map[string]string{"prompt_tokens": "input", "completion_tokens": "output", "total_tokens": "total",
		"input_tokens": "input", "output_tokens": "output", "prompt": "input", "completion": "output"}
	usage := map[string]float64{}
	for k, v := range a.All() {
		var rest string
		switch {
		case strings.HasPrefix(k, "gen_ai.usage.") && k != "gen_ai.usage.cost":
			rest = strings.TrimPrefix(k, "gen_ai.usage.")
		case strings.HasPrefix(k, "llm.token_count."):
			rest = strings.TrimPrefix(k, "llm.token_count.")
		default:
			continue
		}
		if n, ok := names[rest]; ok {
			rest = n
		}
		switch v.Type() {
		case pcommon.ValueTypeInt:
			usage[rest] = float64(v.Int())
		case pcommon.ValueTypeDouble:
			usage[rest] = v.Double()
		}
	}
	return usage
}

// langfuseInputOutput says whether Langfuse finds an input or output on a
// span in the attributes any producer may set.
func langfuseInputOutput(a pcommon.Map) bool {
	for _, k := range []string{"input", "output", "input.value", "output.value", "gen_ai.input.messages",
		"gen_ai.output.messages", "gen_ai.tool.call.arguments", "gen_ai.tool.call.result", "prompt"} {
		if _, ok := a.Get(k); ok {
			return true
		}
	}
	return false
}

// phoenixKind is the OpenInference span kind Phoenix gives a span, and
// the completion token count it reads ("" and -1 when none).
func phoenixKind(a pcommon.Map) (kind string, completionTokens int64) {
	completionTokens = -1
	if v, ok := a.Get("openinference.span.kind"); ok {
		kind = v.AsString()
	}
	genai := false
	for k := range a.All() {
		genai = genai || strings.HasPrefix(k, "gen_ai.")
	}
	if !genai {
		return kind, completionTokens
	}
	if v, ok := a.Get("gen_ai.usage.output_tokens"); ok {
		completionTokens = v.Int()
	}
	if kind != "" {
		return kind, completionTokens
	}
	op, hasOp := a.Get("gen_ai.operation.name")
	switch {
	case hasOp && (op.Str() == "chat" || op.Str() == "text_completion" || op.Str() == "generate_content"):
		kind = "LLM"
	case hasOp:
	default:
		if _, ok := a.Get("gen_ai.request.model"); ok {
			kind = "LLM"
		}
	}
	return kind, completionTokens
}
