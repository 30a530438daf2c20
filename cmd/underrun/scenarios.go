package main

import (
	"fmt"
	"strings"
	"text/tabwriter"

	"github.com/spf13/cobra"

	"github.com/speech-pipeline/underrun/scenarios"
)

func init() { commands = append(commands, newScenariosCommand) }

const scenariosLong = `List the built-in scenarios, embedded in the binary, with one line each on
what they show; with a NAME, print that scenario's YAML, a starting point for
your own file that runs as it is, wherever it is saved (its corpus,
corpus_file: builtin:texts/assistant.txt, is built in). Run one with ` + "`underrun sim NAME`" + `.`

const scenariosExample = `  underrun scenarios
  underrun scenarios prefill-chunked > mine.yaml   # then edit and: underrun sim mine.yaml
  underrun scenarios --report json
  underrun scenarios --metrics                     # what expect: may test`

func newScenariosCommand(e *env) *cobra.Command {
	var output string
	var metrics bool
	cmd := newCommand("scenarios [NAME]", "List the built-in simulation scenarios, or print one",
		scenariosLong, scenariosExample, positional(0, 1, "a scenario name"),
		func(cmd *cobra.Command, args []string) error {
			if output != "text" && output != "json" {
				return usagef("--report: want text or json, got %q", output)
			}
			if metrics {
				names := scenarios.MetricNames()
				if output == "json" {
					return writeJSON(e.stdout, names)
				}
				_, err := fmt.Fprintf(e.stdout, "metrics an expectation may name (mc_: the Monte Carlo run; the rest: the report):\n  %s\n",
					strings.Join(names, "\n  "))
				return err
			}
			if len(args) == 1 {
				src, err := scenarios.Source(args[0])
				if err != nil {
					return usageError{err}
				}
				_, err = e.stdout.Write(src)
				return err
			}
			all, err := scenarios.All()
			if err != nil {
				return err
			}
			if output == "json" {
				type entry struct {
					Name       string `json:"name"`
					Doc        string `json:"doc"`
					Generator  string `json:"generator"`
					Speech     string `json:"speech"`
					Turns      int    `json:"turns"`
					MonteCarlo int    `json:"monte_carlo"`
					Expect     int    `json:"expectations"`
				}
				list := []entry{}
				for _, s := range all {
					list = append(list, entry{s.Name, s.Doc, s.Setup.Gen.String(), speechOf(s), s.Turns, s.MonteCarlo, len(s.Expect)})
				}
				return writeJSON(e.stdout, list)
			}
			var b strings.Builder
			fmt.Fprintf(&b, "%d built-in scenarios (run one with `underrun sim NAME`, print it with `underrun scenarios NAME`):\n\n", len(all))
			tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', 0)
			for _, s := range all {
				fmt.Fprintf(tw, "  %s\t%s\t%s\n", s.Name, speechOf(s), s.Doc)
			}
			tw.Flush()
			_, err = fmt.Fprint(e.stdout, b.String())
			return err
		})
	cmd.Flags().StringVar(&output, "report", "text", "the list's `FORMAT`: text or json")
	renamed(e, cmd.Flags(), "output", "o", "report")
	cmd.Flags().BoolVar(&metrics, "metrics", false, "list the metrics a scenario's expect section may name")
	return cmd
}

// speechOf says which stack a scenario models: its named stack, or its
// chunking policy and timing mode when it names none.
func speechOf(s *scenarios.Scenario) string {
	cfg := s.Setup.Config
	if cfg.Stack != "" {
		return cfg.Stack
	}
	return cfg.Policy.Name() + "/" + string(cfg.Synth.Timing())
}
