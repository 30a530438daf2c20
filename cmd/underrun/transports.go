package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/tts"
)

func init() { commands = append(commands, newTransportsCommand) }

const transportsLong = `List the output transports for --transport (every command that runs the
engine) and tts.transport in scenario files: how the voice app's audio leaves
for the listener, reproduced from the frameworks' code. A transport changes
when audio is audible and how a short gap is heard: audio leaves in frames,
a partial frame waits for the next audio (whole frames only), the listener's
side plays on a clock, a framework may declare the bot stopped speaking after
a silence, and a sender that sleeps between writes falls behind. With one, the
reports' underruns are the gaps the listener hears through it; a gap the
player did not have is caused by the transport.

Override a preset's figures after commas: frame, tick, idle, overshoot
(durations), hold, pad (true or false), e.g. --transport pipecat,idle=0.`

const transportsExample = `  underrun transports
  underrun transports pipecat
  underrun sim transport-pipecat --transport livekit
  underrun analyze --stack pipecat-cartesia --transport pipecat trace.jsonl`

func newTransportsCommand(e *env) *cobra.Command {
	return newPresetsCommand(e, "transports [NAME]", "List the output transports and their sources",
		transportsLong, transportsExample, tts.Transports, tts.LookupTransport, writeTransports)
}

// writeTransports prints the transports: the table of all, then each
// with its source.
func writeTransports(b *strings.Builder, list []tts.Transport, one bool) {
	if !one {
		fmt.Fprintf(b, "%d output transports (use one with --transport NAME; the default is none):\n\n", len(list))
		tw := tabwriter.NewWriter(b, 0, 0, 2, ' ', 0)
		fmt.Fprintln(tw, "  name\tframe\twhole frames\tclock\tbot stopped after\tsender oversleeps")
		for _, tr := range list {
			fmt.Fprintf(tw, "  %s\t%v\t%s\t%s\t%s\t%s\n", tr.Name, tr.Frame, yesNo(tr.Hold), orNone(tr.Tick), orNone(tr.Idle), orNone(tr.Overshoot))
		}
		tw.Flush()
		b.WriteString("\n")
	}
	for _, tr := range list {
		fmt.Fprintf(b, "%s: %s\n  source: %s\n", tr.Name, tr.Summary, tr.Source)
	}
}

func yesNo(b bool) string {
	if b {
		return "yes"
	}
	return "no"
}

func orNone[T comparable](v T) string {
	var zero T
	if v == zero {
		return "-"
	}
	return fmt.Sprint(v)
}
