// Package trace reads and writes token traces. The native format is JSON
// Lines (one record per line: header, turn, chunk, end), written by Writer
// and read by NativeReader. Decoders for the files the serving benchmarks
// already write (vLLM bench serve, SGLang bench_serving, AIPerf,
// GenAI-Perf) and for raw OpenAI SSE captures register in Formats; Open
// tells them apart by their content. Every reader streams: memory is
// bounded by the turns open at once (for vLLM's single JSON object, by one
// request), not by the file. Parity computes a file's figures the way the
// tool that wrote it does, and compares them with the summary it saved.
package trace
