package trace

import (
	"strings"

	"github.com/speech-pipeline/underrun/pipeline"
)

// PathOperation is the operation of a request to an OpenAI-compatible
// server's path: chat for /v1/chat/completions, a text completion for
// /v1/completions (any prefix before them), "" for any other path.
func PathOperation(path string) pipeline.Operation {
	switch {
	case strings.HasSuffix(path, "/chat/completions"):
		return pipeline.OperationChat
	case strings.HasSuffix(path, "/completions"):
		return pipeline.OperationTextCompletion
	}
	return ""
}

// backendOperation is the operation a benchmark's requests made, from the
// backend its result file names (vLLM's endpoint_type and backend,
// SGLang's backend): the endpoint each tool sends that backend's requests
// to, "" for one that is not an OpenAI-compatible completions endpoint
// (SGLang's native /generate, TensorRT-LLM's generate_stream). vLLM's
// backends are those of vllm/benchmarks/lib/endpoint_request_func.py
// (vllm-project/vllm at 02cfb534df5674737558730b10f23d1b7aef9b7c),
// SGLang's those of python/sglang/bench_serving.py (sgl-project/sglang at
// 0033168f0f58b2bc05aa0273bd475d9c01bafb1c).
func backendOperation(tool Tool, backend string) pipeline.Operation {
	switch tool {
	case ToolVLLM:
		switch backend {
		case "vllm", "openai":
			return pipeline.OperationTextCompletion
		case "openai-chat":
			return pipeline.OperationChat
		}
	case ToolSGLang:
		switch backend {
		case "sglang-oai", "vllm", "lmdeploy":
			return pipeline.OperationTextCompletion
		case "sglang-oai-chat", "vllm-chat", "lmdeploy-chat":
			return pipeline.OperationChat
		}
	}
	return ""
}
