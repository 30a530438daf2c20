package main

import (
	"github.com/spf13/cobra"
)

const rootLong = `underrun models (or really plays) the pipeline from a streaming LLM through a
text buffer, a chunking policy and a speech synthesizer to the listener, flags
every moment the player would run out of audio, and ties each gap to the
inter-token latency that caused it.

Run with no arguments to analyze the built-in default turn: real text streamed
at TPOT 50 ms with two prefill-like stalls, spoken by a word-streaming TTS.

Exit codes: 0 pass, 1 verdict failed (TPOT over the SLO or an interruption),
2 bad usage or bad input.`

const rootExample = `  underrun                                  # the built-in default, explained
  underrun analyze trace.jsonl              # analyze a recorded trace
  underrun analyze --chunking sentence --tts-latency 200ms trace.jsonl
  cat trace.jsonl | underrun analyze --report json > report.json`

func newRootCommand(e *env) *cobra.Command {
	a := newAnalyzeCommand(e)
	root := &cobra.Command{
		Use:           "underrun",
		Short:         "Find where a voice assistant's speech would go silent, and why",
		Long:          rootLong,
		Example:       rootExample,
		Args:          cobra.NoArgs,
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// With no subcommand: analyze the built-in default turn.
			return a.runDefault(cmd)
		},
	}
	root.Flags().AddFlagSet(a.cmd.Flags())
	root.SetFlagErrorFunc(func(_ *cobra.Command, err error) error { return usageError{err} })
	root.AddCommand(a.cmd)
	for _, mk := range commands {
		root.AddCommand(mk(e))
	}
	return root
}

// commands are the subcommands other files register (init), each made
// fresh for every run.
var commands []func(e *env) *cobra.Command
