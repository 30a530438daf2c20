package trace

import "io"

// Formats lists the formats Open knows, in the order they are sniffed:
// the native trace first, then the more telling layouts before the looser
// ones (a summary after the per-request file of its tool, SGLang's lines
// before vLLM's object). It is the one registry of formats: a reader is
// added here, with the function that sniffs it and the one that opens it.
var Formats = []Format{
	{"native", "underrun JSON Lines trace (header, turn, chunk, end records)",
		sniffNative, opens(NewNativeReader)},
	{"aiperf", "AIPerf profile_export.jsonl (one record per request)",
		sniffAIPerf, opens(NewAIPerfReader)},
	// the raw SSE capture reads as a trace: its bytes are parsed again
	// exactly as the live client parsed them
	{"sse", "raw OpenAI SSE capture with arrival times (underrun capture --sse)",
		SniffCapture, opens(NewCaptureReader)},
	{"genai-perf", "GenAI-Perf profile_export.json (experiments[].requests[])",
		sniffGenAIPerf, opens(NewGenAIPerfReader)},
	{"guidellm", "GuideLLM benchmarks.json (benchmarks[].requests by status, with their timings)",
		sniffGuideLLM, opens(NewGuideLLMReader)},
	{"llmperf", "llmperf *_individual_responses.json (per-request TTFT, latency, tokens; no chunk times)",
		sniffLLMPerf, opens(NewLLMPerfReader)},
	{"aiperf-summary", "AIPerf profile_export_aiperf.json (the run's summary only)",
		func(head []byte) bool { return sniffStatsSummary(head) == ToolAIPerf }, opensSummary(ToolAIPerf)},
	{"llmperf-summary", "llmperf *_summary.json (the run's summary only)",
		sniffLLMPerfSummary, opensSummary(ToolLLMPerf)},
	{"genai-perf-summary", "GenAI-Perf profile_export_genai_perf.json (the run's summary only)",
		func(head []byte) bool { return sniffStatsSummary(head) == ToolGenAIPerf }, opensSummary(ToolGenAIPerf)},
	{"sglang", "SGLang bench_serving JSONL with --output-details (one run per line)",
		sniffSGLang, opensOrFails(NewSGLangReader)},
	{"vllm", "vLLM bench serve --save-result --save-detailed JSON",
		sniffVLLM, opensOrFails(NewVLLMReader)},
}

// opens adapts a reader's constructor to Format.Open.
func opens[D Decoder](open func(r io.Reader, name string) D) func(io.Reader, string) (Decoder, error) {
	return func(r io.Reader, name string) (Decoder, error) { return open(r, name), nil }
}

// opensOrFails adapts a constructor that can fail to Format.Open.
func opensOrFails[D Decoder](open func(r io.Reader, name string) (D, error)) func(io.Reader, string) (Decoder, error) {
	return func(r io.Reader, name string) (Decoder, error) {
		d, err := open(r, name)
		if err != nil {
			return nil, err
		}
		return d, nil
	}
}

// opensSummary opens the summary-only file of a tool.
func opensSummary(tool Tool) func(io.Reader, string) (Decoder, error) {
	return func(r io.Reader, name string) (Decoder, error) { return NewSummaryReader(r, name, tool), nil }
}
