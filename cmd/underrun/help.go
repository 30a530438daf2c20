package main

import (
	"fmt"
	"io"
	"slices"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// Help shows what a command's main job needs: the first paragraph of its
// description and its exit codes, its usage, examples and main flags
// (showFlags), in at most maxHelpLines lines of helpWidth columns.
// --help-all adds the rest of the description and every other flag.
const (
	helpAllFlag  = "help-all"
	helpWidth    = 80
	maxHelpLines = 60
	mainFlagsKey = "underrun_main_flags"
)

// showFlags names the flags --help shows for cmd, in that order; the rest
// are listed by --help-all only.
func showFlags(cmd *cobra.Command, names ...string) {
	for _, n := range names {
		if cmd.Flags().Lookup(n) == nil {
			panic("showFlags: " + cmd.Name() + " has no flag --" + n)
		}
	}
	if cmd.Annotations == nil {
		cmd.Annotations = map[string]string{}
	}
	cmd.Annotations[mainFlagsKey] = strings.Join(names, ",")
}

// bindHelp makes root and every command under it write help with
// writeHelp, --help-all included.
func bindHelp(root *cobra.Command) {
	root.PersistentFlags().Bool(helpAllFlag, false, "show every flag and the full description")
	root.SetHelpFunc(func(c *cobra.Command, _ []string) {
		all := false
		if f := c.Flag(helpAllFlag); f != nil {
			all = f.Value.String() == "true"
		}
		writeHelp(c.OutOrStdout(), c, all)
	})
	root.SetUsageFunc(func(c *cobra.Command) error {
		writeHelp(c.OutOrStderr(), c, false)
		return nil
	})
}

// withHelpAll adds --help to args that ask for --help-all (before any
// "--"), so that cobra shows help before it checks the arguments.
func withHelpAll(args []string) []string {
	for _, a := range args {
		switch a {
		case "--":
			return args
		case "--" + helpAllFlag, "--" + helpAllFlag + "=true":
			return append(slices.Clone(args), "--help")
		}
	}
	return args
}

// writeHelp writes c's help: all adds the details and every flag.
func writeHelp(w io.Writer, c *cobra.Command, all bool) {
	var b strings.Builder
	desc := c.Long
	if desc == "" {
		desc = c.Short
	}
	brief, details := helpDescription(desc)
	if all {
		brief = strings.TrimSpace(desc)
	}
	b.WriteString(brief + "\n")
	b.WriteString("\nUsage:\n")
	if c.Runnable() {
		b.WriteString("  " + c.UseLine() + "\n")
	}
	if c.HasAvailableSubCommands() {
		b.WriteString("  " + c.CommandPath() + " COMMAND\n")
	}
	if c.Example != "" {
		b.WriteString("\nExamples:\n" + strings.TrimRight(c.Example, "\n") + "\n")
	}
	if c.HasAvailableSubCommands() {
		writeCommandList(&b, c)
	}
	main, rest := helpFlags(c)
	shown := main
	if all {
		shown = append(main, rest...)
	}
	if len(shown) > 0 {
		b.WriteString("\nFlags:\n" + flagUsages(shown))
	}
	switch {
	case !c.HasParent() && !all:
		fmt.Fprintf(&b, "\n%s COMMAND --help says more about a command. With no command, %s\nanalyzes a built-in turn and takes analyze's %d flags: %s --%s.\n",
			c.Name(), c.Name(), len(rest), c.Name(), helpAllFlag)
	case !all && (len(rest) > 0 || details):
		more := "the details"
		if len(rest) > 0 {
			more = fmt.Sprintf("%d more %s", len(rest), noun(len(rest), "flag", "flags"))
			if details {
				more += " and the details"
			}
		}
		fmt.Fprintf(&b, "\n%s: %s --%s\n", more, c.CommandPath(), helpAllFlag)
	case c.HasAvailableSubCommands():
		fmt.Fprintf(&b, "\n%s COMMAND --help says more about a command.\n", c.CommandPath())
	}
	io.WriteString(w, b.String())
}

// helpDescription is what --help shows of a command's description: its
// first paragraph and its exit codes (a last paragraph beginning "Exit
// codes"); details reports whether --help-all shows more.
func helpDescription(desc string) (brief string, details bool) {
	paras := strings.Split(strings.TrimSpace(desc), "\n\n")
	shown := paras[:1]
	if last := paras[len(paras)-1]; len(paras) > 1 && strings.HasPrefix(last, "Exit codes") {
		shown = append(shown, last)
	}
	return strings.Join(shown, "\n\n"), len(shown) < len(paras)
}

// writeCommandList lists c's subcommands, by group where it has groups.
func writeCommandList(b *strings.Builder, c *cobra.Command) {
	width := 0
	for _, sub := range c.Commands() {
		if sub.IsAvailableCommand() {
			width = max(width, len(sub.Name()))
		}
	}
	list := func(title, group string) {
		var lines []string
		for _, sub := range c.Commands() {
			if sub.IsAvailableCommand() && sub.GroupID == group {
				lines = append(lines, fmt.Sprintf("  %-*s  %s\n", width, sub.Name(), sub.Short))
			}
		}
		if len(lines) > 0 {
			b.WriteString("\n" + title + "\n" + strings.Join(lines, ""))
		}
	}
	for _, g := range c.Groups() {
		list(g.Title, g.ID)
	}
	list("Commands:", "")
}

// helpFlags returns the flags --help shows for c (its showFlags, in order;
// every visible flag when it names none) and the others --help-all adds,
// by name.
func helpFlags(c *cobra.Command) (main, rest []*pflag.Flag) {
	var visible []*pflag.Flag
	c.LocalFlags().VisitAll(func(f *pflag.Flag) {
		if !f.Hidden && f.Name != "help" && f.Name != helpAllFlag {
			visible = append(visible, f)
		}
	})
	names, ok := c.Annotations[mainFlagsKey]
	if !ok {
		return visible, nil
	}
	for _, n := range strings.Split(names, ",") {
		if f := c.Flags().Lookup(n); f != nil && !f.Hidden {
			main = append(main, f)
		}
	}
	for _, f := range visible {
		if !slices.Contains(main, f) {
			rest = append(rest, f)
		}
	}
	return main, rest
}

// flagUsages lists flags in the order given, their text wrapped at
// helpWidth.
func flagUsages(flags []*pflag.Flag) string {
	fs := pflag.NewFlagSet("help", pflag.ContinueOnError)
	fs.SortFlags = false
	for _, f := range flags {
		fs.AddFlag(f)
	}
	return fs.FlagUsagesWrapped(helpWidth)
}
