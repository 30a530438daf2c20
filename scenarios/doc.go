// Package scenarios holds the built-in scenario library, embedded in the
// binary, the scenario file format with its loader and validation, and the
// default turn underrun shows a newcomer.
//
// A scenario file is YAML:
//
//	name: prefill-chunked          # default: the file name
//	doc: One line on what it shows.
//	seed: 1                        # turn i is the same turn for a seed
//	turns: 50                      # turns through the report
//	monte_carlo: 2000              # turns in the parallel Monte Carlo run
//	text: "..."                    # or corpus: [...], corpus_file: answers.txt
//	                               # (blank-line separated; builtin:texts/NAME.txt
//	                               # names one built into underrun), or tokens: 200
//	generator:
//	  kind: roofline               # constant | lognormal | gamma | empirical | roofline
//	  # constant, lognormal, gamma: ttft, tpot (the mean ITL), cv, stalls
//	  # empirical: trace (any format analyze reads) or itls/ttfts, tpot rescales
//	  gpu: h100                    # a100 a100-40gb h100 h200 h20 b200 l4 rtx4090 mi300x, or a new name
//	  gpu_profile: {memory_gb: 94} # change or define it: bandwidth_gb_s tflops_16 tflops_8 memory_gb
//	                               # bandwidth_efficiency compute_efficiency overhead layer_overhead comm
//	  model: llama-3.1-70b         # llama-3.1-8b/70b/405b llama-3.3-70b qwen3-8b mixtral-8x7b/8x22b
//	                               # qwen3-30b-a3b deepseek-v3 deepseek-r1, or a new name
//	  model_profile: {layers: 80}  # params_b active_params_b layers kv_heads head_dim experts experts_per_token
//	  weights: fp8                 # fp32 fp16 bf16 fp8 int8 int4 fp4; kv_cache likewise
//	  gpus: 1                      # tensor-parallel size
//	  batch: 16                    # or concurrency: 16 with output_tokens: {mean: 500}, a closed loop
//	  prompt_tokens: 1000          # the turn's own prompt; context: the others'
//	  bandwidth_efficiency: 0.76   # these five override the GPU profile and the fitted defaults
//	  compute_efficiency: 0.36
//	  overhead: 0s                 # per step
//	  layer_overhead: 61us         # per layer and step
//	  comm: 7us                    # per layer and step, for each GPU beyond the first
//	  expert_overhead: 75us        # per layer and step of a mixture of experts
//	  prefill: {rate: 0.5, prompt_tokens: {mean: 8000, cv: 0.5, max: 32000}, chunked: true, token_budget: 2048}
//	  speculative: {draft_tokens: 4, acceptance: 0.7, draft_cost: 0.05}
//	  reasoning: {mean: 600, cv: 0.4}
//	tts:
//	  stack: pipecat-cartesia      # a named stack (underrun stacks); the keys below replace its figures
//	  chunking: word               # any tts.ParsePolicy name: token word sentence pipecat livekit ...
//	  mode: stream                 # stream request parallel
//	  ttfa: 150ms                  # first audio (in stream mode of the turn's first chunk)
//	  continuation: 50ms           # stream mode: first audio of every later chunk
//	  rtf: 0.1
//	  wpm: 184
//	  preroll: 0s
//	  interruption: 150ms
//	  server:                      # a TTS server shared by sessions (no ttfa or rtf beside it)
//	    preset: riva-fastpitch     # riva-fastpitch magpie-a100, or curve: and source:
//	    # curve: [{streams: 1, ttfa: 68ms, rtf: 0.098}, {streams: 4, ttfa: 81ms, rtf: 0.11}]
//	    sessions: 16               # 1..1024 (default 1)
//	    active: 0.6                # share of the time a session synthesizes (default 0.5)
//	expect:                        # metric: number (equal) or "OP number"
//	  interruptions: 0
//	  speech_goodput: ">= 0.99"
//	  tpot_p50_ms: "< 50"
//
// Metrics (MetricNames) are those of the report over the turns (counts,
// rates, goodput, and ttft/ttfst/tpot/itl/e2el/ttfa summaries as
// NAME_{mean,min,max,p50,p90,p95,p99,p999}_ms) and, prefixed mc_, those of
// the Monte Carlo run. Errors name the file, the line when known, the
// field and what was expected.
package scenarios
