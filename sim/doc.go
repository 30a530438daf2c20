// Package sim simulates token streams in virtual time: text split into
// tokens, token generators (constant pace, distributions, a roofline model
// of decoding on a GPU fitted on published decode measurements, prefill
// interference from an open or a closed loop), and the sweeps and
// inversions built on the playout engine. It never touches the wall clock:
// the same seed gives the same turns.
//
// A Timing (Constant, Sampled, Empirical, Roofline) paces the decode steps
// of a turn; a Generator adds the text, reasoning tokens and speculative
// decoding; a Stream makes turn i of a seed, the same turn whichever
// goroutine asks. Run plays many turns through the engine on every core
// and summarizes them (speech goodput with a Wilson interval,
// interruptions per minute, the ITL tail set against the stall
// tolerance). A Setup may share its synthesizer with other sessions on a
// TTSServer: each Monte Carlo turn then draws how many streams the server
// holds and plays at that load's time to first audio and RTF. RunSweep
// varies one Param; Solve finds the largest value of one (the smallest
// pre-roll) that keeps speech goodput at a target.
package sim
