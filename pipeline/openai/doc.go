// Package openai measures, guards and imitates servers that speak the
// OpenAI-compatible streaming API (vLLM, SGLang, TGI, llama.cpp, Ollama,
// hosted APIs): /v1/chat/completions and /v1/completions with
// "stream": true.
//
// The pieces, from the wire up:
//
//   - Parser splits a server-sent event (SSE) stream into events, as the
//     bytes arrive, and times each event by the read that completed it.
//   - Stream turns those events into a pipeline.Turn: content and reasoning
//     deltas become chunks; role-only and empty chunks, keep-alive comments,
//     usage, finish reasons, [DONE] and errors are counted in StreamStats.
//   - Client sends one streaming request and records its turn; Load drives
//     a server at a concurrency or a Poisson request rate.
//   - CaptureWriter and CaptureReader keep a raw SSE capture: every read of
//     every response body with its arrival time, so a capture can be parsed
//     again later exactly as it was parsed live.
//   - Proxy is a transparent reverse proxy that guards each stream it
//     forwards with a pipeline.Guard.
//   - Mock is an OpenAI-compatible server that streams recorded or
//     simulated turns with their timing, in vLLM's chunk format.
//
// Arrival times come from the monotonic clock, read the moment a read of
// the response body returns. Nothing here prints or exits; logging goes
// through injected zerolog loggers.
package openai
