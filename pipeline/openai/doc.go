// Package openai measures, guards and imitates servers that speak the
// OpenAI-compatible streaming API (vLLM, SGLang, TGI, llama.cpp, Ollama,
// hosted APIs): /v1/chat/completions and /v1/completions with
// "stream": true.
//
// The wire format itself (SSE events, chunk deltas, a streamed response
// assembled into a pipeline.Turn) and the raw SSE capture belong to
// pipeline/trace, the room of formats: trace.Stream parses each response
// here, and trace.CaptureWriter records it. On top of them:
//
//   - Client sends one streaming request and records its turn; Load drives
//     a server at a concurrency or a Poisson request rate.
//   - Proxy is a transparent reverse proxy that guards each stream it
//     forwards with a pipeline.Guard.
//   - Mock is an OpenAI-compatible server that streams recorded or
//     simulated turns with their timing, in vLLM's chunk format.
//
// Arrival times come from the monotonic clock, read the moment a read of
// the response body returns. Nothing here prints or exits; logging goes
// through injected zerolog loggers.
package openai
