// Package trace reads and writes token traces. The native format is JSON
// Lines (one record per line: header, turn, chunk, end), written by Writer
// and read by NativeReader. Decoders for the files the serving benchmarks
// already write (vLLM bench serve, SGLang bench_serving, AIPerf,
// GenAI-Perf, llmperf, GuideLLM, and the summary-only files of AIPerf,
// GenAI-Perf and llmperf) and for raw OpenAI SSE captures register in
// Formats; Open tells them apart by their content. Every reader streams:
// memory is bounded by the turns open at once (for vLLM's single JSON
// object, by one request) and by the limits in limits.go, not by the file.
// Parity computes a file's figures the way the tool that wrote it does,
// and compares them with the summary it saved.
//
// The OpenAI streaming wire format lives here too, since it is what a raw
// SSE capture holds: SSEParser splits a server-sent event stream into
// events as its bytes arrive, Stream assembles a streamed response into a
// pipeline.Turn, and CaptureWriter and CaptureReader keep every read of
// every response body with its arrival time. The live parts
// (pipeline/openai: client, proxy, mock) parse and record through them;
// nothing here imports a client, server or simulator.
package trace
