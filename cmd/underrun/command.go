package main

import "github.com/spf13/cobra"

// newCommand builds a subcommand from its help texts, its positional-argument
// rule (nil: any) and the function that runs it.
func newCommand(use, short, long, example string, args cobra.PositionalArgs, run func(*cobra.Command, []string) error) *cobra.Command {
	return &cobra.Command{Use: use, Short: short, Long: long, Example: example, Args: args, RunE: run}
}
