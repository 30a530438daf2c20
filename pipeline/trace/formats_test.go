package trace

import "testing"

// TestFormatsOrder: the registry sniffs in the order it always has (the
// order the readers' files once registered themselves in).
func TestFormatsOrder(t *testing.T) {
	t.Parallel()
	got, want := FormatNames(), "native, aiperf, sse, genai-perf, guidellm, llmperf, aiperf-summary, llmperf-summary, genai-perf-summary, sglang, vllm"
	if got != want {
		t.Errorf("formats %s; want %s", got, want)
	}
	for _, f := range Formats {
		if f.Name == "" || f.Describe == "" || f.Sniff == nil || f.Open == nil {
			t.Errorf("format %+v is not complete", f)
		}
	}
}
