package scenarios

import "testing"

// TestParseOverflows: values that overflowed the simulator's nanoseconds
// or looped in the engine (issue 45: tpot 2562047h, gamma cv 1e-300, wpm
// 1e-10) are refused with the file, the line and the field; before, they
// came back from the run as "chunk 2 arrives at -1h34m33s" with neither.
func TestParseOverflows(t *testing.T) {
	t.Parallel()
	checkParseErrors(t, overflowCases)
}

// overflowCases are TestParseOverflows' files; the fuzzers start from them.
var overflowCases = []parseErrorCase{
	{"tpot 2562047h", "generator:\n  kind: constant\n  tpot: 2562047h\n", []string{"test.yaml", "line 3", "generator.tpot", "up to 1h0m0s"}},
	{"lognormal tpot 2562047h", "generator:\n  kind: lognormal\n  tpot: 2562047h\n  cv: 0.5\n", []string{"line 3", "generator.tpot"}},
	{"ttft 2562047h", "generator:\n  kind: constant\n  tpot: 50ms\n  ttft: 2562047h\n", []string{"line 4", "generator.ttft"}},
	{"stall 2562047h", "generator:\n  kind: constant\n  tpot: 50ms\n  stalls: [{token: 3, delay: 2562047h}]\n", []string{"line 4", "generator.stalls", "stall 1"}},
	{"gamma cv 1e-300", "generator:\n  kind: gamma\n  tpot: 50ms\n  cv: 1e-300\n", []string{"test.yaml", "line 4", "generator.cv", "1e-06"}},
	{"lognormal cv 1e-300", "generator:\n  kind: lognormal\n  tpot: 50ms\n  cv: 1e-300\n", []string{"line 4", "generator.cv"}},
	{"wpm 1e-10", "generator:\n  kind: constant\n  tpot: 50ms\ntts:\n  wpm: 1e-10\n", []string{"test.yaml", "line 5", "tts.wpm", "from 10 to 2000"}},
	{"token audio 2562047h", "generator:\n  kind: constant\n  tpot: 50ms\ntts:\n  token_audio: 2562047h\n", []string{"line 5", "tts.token_audio"}},
}
