package openai

// chat returns a vLLM-style chat chunk event carrying delta.
func chat(delta string) string {
	return `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":` + delta + `,"logprobs":null,"finish_reason":null}]}` + "\n\n"
}

// The events that end a vLLM chat stream.
const (
	finishChunk = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":""},"logprobs":null,"finish_reason":"stop"}]}` + "\n\n"
	usageChunk  = `data: {"id":"c1","object":"chat.completion.chunk","created":1,"model":"m","choices":[],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":1}}}` + "\n\n"
	done        = "data: [DONE]\n\n"
)
