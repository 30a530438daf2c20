// Package testkit holds what the tests of several packages share: a
// buffer a test reads while a server or command writes to it, a writer
// that fails after N bytes as a full disk does, the
// kernel's receive stamps kept on for a test, the check that a server
// closes idle keep-alive connections, the events of a vLLM chat stream,
// a reader read to its end, an engine configuration of a policy and a
// synthesizer, a turn streamed a word per token, and the arrays of a
// result file written by hand, whether the race detector is on, and the
// assistant answers heard's evaluations speak. Only tests import it.
package testkit
