package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/tts"
)

func init() { commands = append(commands, newStacksCommand) }

const stacksLong = `List the named stacks: a voice framework driving a TTS service, as one word
for --stack (every command that runs the engine) and tts.stack in scenario
files. Each sets the chunking policy the framework applies, the timing mode its
code path amounts to (stream: one synthesis context per turn; request: a
request per chunk, one after another) and the service's latencies from its
vendor's published figures. With a NAME, print that stack's framework path,
figures and their sources.

Speech flags given on the command line (--chunking, --tts-mode,
--tts-latency, --tts-continuation, --rtf) replace the stack's figure; the
report's header names the stack and what was replaced.`

const stacksExample = `  underrun stacks
  underrun stacks pipecat-cartesia
  underrun analyze --stack livekit-elevenlabs trace.jsonl
  underrun sim policy-token --stack pipecat-elevenlabs --tts-latency 300ms`

func newStacksCommand(e *env) *cobra.Command {
	return newPresetsCommand(e, "stacks [NAME]", "List the named framework + TTS stacks and their sources",
		stacksLong, stacksExample, tts.Stacks, tts.LookupStack, writeStacks)
}

// writeStacks prints the stacks: one in full, or the table of all.
func writeStacks(b *strings.Builder, stacks []tts.Stack, one bool) {
	if one {
		writeStack(b, stacks[0])
		return
	}
	fmt.Fprintf(b, "%d named stacks (use one with --stack NAME; details and sources: `underrun stacks NAME`):\n\n", len(stacks))
	tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
	fmt.Fprintln(tw, "  name\tchunking\tmode\tfirst audio\tcontinuation\tstack")
	for _, st := range stacks {
		cont := "-"
		if st.Synth.Timing() == tts.ModeStream {
			cont = st.Synth.Continuation.String()
		}
		fmt.Fprintf(tw, "  %s\t%s\t%s\t%v\t%s\t%s\n", st.Name, st.Chunking, st.Synth.Timing(), st.Synth.TTFA, cont, st.Summary)
	}
	tw.Flush()
	b.WriteString("\nsources:\n")
	for _, st := range stacks {
		fmt.Fprintf(b, "  %s: %s\n", st.Name, strings.Join(st.Sources, "; "))
	}
}

// newPresetsCommand lists a kind of preset (stacks, transports): all of
// them, or the one named, as text (write) or JSON (--report json).
func newPresetsCommand[T any](e *env, use, short, long, example string, all []T, lookup func(string) (T, error),
	write func(b *strings.Builder, list []T, one bool)) *cobra.Command {
	var output string
	cmd := newCommand(use, short, long, example, positional(0, 1, "a name"),
		func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usagef("--report: want text or json, got %q", output)
			}
			list := all
			if len(args) == 1 {
				v, err := lookup(args[0])
				if err != nil {
					return usageError{err}
				}
				list = []T{v}
			}
			if output == "json" {
				return writeJSON(e.stdout, list)
			}
			var b strings.Builder
			write(&b, list, len(args) == 1)
			_, err := fmt.Fprint(e.stdout, b.String())
			return err
		})
	cmd.Flags().StringVar(&output, "report", "text", "the list's `FORMAT`: text or json")
	renamed(e, cmd.Flags(), "output", "o", "report")
	return cmd
}

// writeStack prints one stack in full.
func writeStack(b *strings.Builder, st tts.Stack) {
	fmt.Fprintf(b, "%s: %s\n\n", st.Name, st.Summary)
	fmt.Fprintf(b, "  framework:  %s\n", st.Framework)
	fmt.Fprintf(b, "  service:    %s\n", st.Service)
	fmt.Fprintf(b, "  chunking:   %s\n", st.Chunking)
	fmt.Fprintf(b, "  timing:     %s\n", st.Synth)
	b.WriteString("  sources:\n")
	for _, src := range st.Sources {
		fmt.Fprintf(b, "    - %s\n", src)
	}
	if st.Differs != "" {
		fmt.Fprintf(b, "  differs:    %s\n", st.Differs)
	}
}
