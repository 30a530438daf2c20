// Package pipeline is the domain of underrun: the token chunks of a turn
// as an LLM streams them, the playout engine that feeds them through a
// chunking policy, a synthesizer and a player and finds every moment the
// player starves, the timing metrics of a stream (TTFT, TPOT, ITL, E2E)
// and the reports built from them.
//
// The engine (Playout) is incremental: offline analysis pushes a whole
// recorded turn at once, while the live Guard pushes chunks as they arrive
// and asks the same engine when the buffered audio will run out. Sources
// and sinks live in sub-packages (trace formats in pipeline/trace).
//
// Nothing here prints, exits or reads flags; logging goes through an
// injected zerolog logger that defaults to a no-op.
package pipeline
