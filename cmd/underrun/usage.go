package main

import (
	"errors"
	"fmt"
	"sort"
	"strings"

	"github.com/spf13/cobra"
	"github.com/spf13/pflag"
)

// positional is a command's rule for its positional arguments: at least
// least and at most most (-1: any number); what says what they are. A
// wrong count is a usage error that says what is missing or extra, with
// the command's first example.
func positional(least, most int, what string) cobra.PositionalArgs {
	return func(c *cobra.Command, args []string) error {
		name := commandName(c)
		switch {
		case len(args) < least:
			return usagef("%s needs %s%s", name, what, exampleOf(c))
		case most < 0 || len(args) <= most:
			return nil
		case c.HasAvailableSubCommands():
			return unknownCommand(c, args[most])
		case most == 0:
			return usagef("%s takes no arguments, got %s (did a value lose its --flag?)%s", name, quoteAll(args), exampleOf(c))
		}
		return usagef("%s takes at most %d %s (%s), got %d: %s%s", name, most, noun(most, "argument", "arguments"), what, len(args), quoteAll(args), exampleOf(c))
	}
}

// commandName is c's path without the program's name ("underrun" for the
// root), for messages that "underrun: " begins.
func commandName(c *cobra.Command) string {
	if !c.HasParent() {
		return c.Name()
	}
	return strings.TrimPrefix(c.CommandPath(), c.Root().Name()+" ")
}

// unknownCommand says that name is no command of c, naming the nearest.
func unknownCommand(c *cobra.Command, name string) error {
	msg := fmt.Sprintf("unknown command %q for %s", name, c.CommandPath())
	c.SuggestionsMinimumDistance = 2
	if s := c.SuggestionsFor(name); len(s) > 0 {
		msg += "; did you mean " + strings.Join(s, " or ") + "?"
	}
	return usagef("%s (%s --help lists the commands)", msg, c.CommandPath())
}

// exampleOf is c's first example, as the end of a message.
func exampleOf(c *cobra.Command) string {
	for _, line := range strings.Split(c.Example, "\n") {
		line = strings.TrimSpace(line)
		if i := strings.Index(line, "  #"); i >= 0 {
			line = strings.TrimSpace(line[:i])
		}
		if line != "" && !strings.HasPrefix(line, "#") {
			return "\n  for example: " + line
		}
	}
	return ""
}

func quoteAll(args []string) string {
	q := make([]string, len(args))
	for i, a := range args {
		q[i] = fmt.Sprintf("%q", a)
	}
	return strings.Join(q, " ")
}

// flagError turns a flag parse error into a usage error; an unknown flag
// gets the nearest flag of the command (hidden and deprecated names
// included), or the commands that have a flag of that name.
func flagError(c *cobra.Command, err error) error {
	var ne *pflag.NotExistError
	if !errors.As(err, &ne) {
		return usageError{err}
	}
	if short := ne.GetSpecifiedShortnames(); short != "" {
		return usagef("%s: unknown shorthand flag -%s in -%s (%s --help lists the flags)", commandName(c), ne.GetSpecifiedName(), short, c.CommandPath())
	}
	name := ne.GetSpecifiedName()
	msg := fmt.Sprintf("%s: unknown flag --%s", commandName(c), name)
	if near := nearestFlag(c, name); near != "" {
		return usagef("%s; did you mean --%s?", msg, near)
	}
	if others := commandsWithFlag(c.Root(), name); len(others) > 0 {
		return usagef("%s: it is a flag of %s (%s --help lists this command's flags)", msg, strings.Join(others, ", "), c.CommandPath())
	}
	return usagef("%s (%s --help lists the flags)", msg, c.CommandPath())
}

// nearestFlag is the flag of c whose name is nearest to name by edit
// distance (a deprecated name gives the name that replaced it), or ""
// when none is near: within a third of the name's length, at least 2, or
// a prefix either way.
func nearestFlag(c *cobra.Command, name string) string {
	best, bestDist := "", -1
	c.Flags().VisitAll(func(f *pflag.Flag) {
		d := editDistance(name, f.Name)
		if len(name) >= 3 && (strings.HasPrefix(f.Name, name) || strings.HasPrefix(name, f.Name)) {
			d = min(d, 2)
		}
		if bestDist < 0 || d < bestDist || d == bestDist && f.Name < best {
			best, bestDist = f.Name, d
			if to := f.Annotations[renamedTo]; len(to) == 1 {
				best = to[0]
			}
		}
	})
	if bestDist < 0 || bestDist > max(2, len(name)/3) {
		return ""
	}
	return best
}

// commandsWithFlag lists the commands under root that have a flag name.
func commandsWithFlag(root *cobra.Command, name string) []string {
	var found []string
	var walk func(c *cobra.Command)
	walk = func(c *cobra.Command) {
		if f := c.Flags().Lookup(name); f != nil && !f.Hidden && c.IsAvailableCommand() {
			found = append(found, strings.TrimPrefix(c.CommandPath(), root.Name()+" "))
		}
		for _, sub := range c.Commands() {
			walk(sub)
		}
	}
	for _, sub := range root.Commands() {
		walk(sub)
	}
	sort.Strings(found)
	return found
}

// editDistance is the Levenshtein distance between a and b.
func editDistance(a, b string) int {
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
		}
		prev, cur = cur, prev
	}
	return prev[len(b)]
}
