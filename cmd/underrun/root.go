package main

import (
	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

const rootLong = `underrun models (or really plays) the pipeline from a streaming LLM through a
text buffer, a chunking policy and a speech synthesizer to the listener, flags
every moment the player would run out of audio, and ties each gap to the
inter-token latency that caused it.

Run with no arguments to analyze the built-in default turn: real text streamed
at TPOT 50 ms with two prefill-like stalls, spoken by a word-streaming TTS.

Exit codes: 0 pass, 1 verdict failed (the listener hears an interruption, or a
turn gets no reply; an SLO given with --tpot-slo or --ttft-slo is missed),
2 bad usage or bad input.`

const rootExample = `  underrun                                  # the built-in default, explained
  underrun analyze trace.jsonl              # analyze a recorded trace
  underrun analyze --chunking sentence --tts-latency 200ms trace.jsonl
  underrun sim tpot-50ms --stack pipecat-cartesia --find tpot   # what TPOT does my stack need?
  cat trace.jsonl | underrun analyze --report json > report.json`

func newRootCommand(e *env) *cobra.Command {
	a := newAnalyzeCommand(e)
	root := &cobra.Command{
		Use:           "underrun",
		Short:         "Find where a voice assistant's speech would go silent, and why",
		Long:          rootLong,
		Example:       rootExample,
		Args:          positional(0, 0, ""),
		SilenceUsage:  true,
		SilenceErrors: true,
		RunE: func(cmd *cobra.Command, _ []string) error {
			// With no subcommand: analyze the built-in default turn.
			return a.runDefault(cmd)
		},
	}
	// the default run takes analyze's flags but --format: it reads no input
	a.cmd.Flags().VisitAll(func(f *pflag.Flag) {
		if f.Name != "format" {
			root.Flags().AddFlag(f)
		}
	})
	showFlags(root)
	root.SetFlagErrorFunc(flagError)
	root.CompletionOptions.HiddenDefaultCmd = true
	root.AddCommand(a.cmd)
	for _, mk := range commands {
		root.AddCommand(mk(e))
	}
	for _, g := range commandGroups {
		root.AddGroup(&cobra.Group{ID: g.id, Title: g.title})
		for _, name := range g.commands {
			c, _, err := root.Find([]string{name})
			if err != nil || c == root {
				panic("commandGroups: no command " + name)
			}
			c.GroupID = g.id
		}
	}
	bindHelp(root)
	return root
}

// commandGroups sort the commands for root's help: those a newcomer needs
// first.
var commandGroups = []struct {
	id, title string
	commands  []string
}{
	{"start", "Start here:", []string{"analyze", "sim", "speak"}},
	{"live", "Measure and watch live systems:", []string{"capture", "proxy", "replay", "monitor", "heard"}},
	{"tools", "Tools and references:", []string{"plot", "convert", "mock", "voice", "scenarios", "stacks", "transports"}},
}

// commands are the subcommands other files register (init), each made
// fresh for every run.
var commands []func(e *env) *cobra.Command
