package testkit

// ChatChunk returns a vLLM-style chat completion chunk event (Server-Sent
// Events) carrying delta, a JSON object such as {"content":"Hi"}.
func ChatChunk(delta string) string {
	return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
}

// The events that end a vLLM chat stream: the chunk with the finish
// reason, the usage chunk (4 completion tokens, one of them reasoning) and
// the [DONE] sentinel.
const (
	FinishChunk = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
	UsageChunk  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":1}}}` + "\n\n"
	Done        = "data: [DONE]\n\n"
)
