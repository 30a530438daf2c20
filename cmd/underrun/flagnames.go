package main

import (
	"fmt"

	"github.com/spf13/pflag"
)

// renamedTo is the annotation a deprecated flag name carries: the name of
// the flag that replaced it.
const renamedTo = "underrun_renamed_to"

// renamed keeps old (and its shorthand, if any) working for one release as
// a hidden name of the flag now called to: giving it sets to, as if to had
// been given, and prints one line on stderr naming to. The flag to must be
// bound on fs already.
func renamed(e *env, fs *pflag.FlagSet, old, shorthand, to string) {
	target := fs.Lookup(to)
	if target == nil {
		panic("renamed: no flag --" + to + " to rename --" + old + " to")
	}
	name := "--" + old
	if shorthand != "" {
		name = "-" + shorthand + "/--" + old
	}
	warned := false
	warn := func() {
		if !warned {
			warned = true
			fmt.Fprintf(e.stderr, "underrun: %s is deprecated; use --%s\n", name, to)
		}
	}
	fs.AddFlag(&pflag.Flag{
		Name:        old,
		Shorthand:   shorthand,
		Usage:       "deprecated: use --" + to,
		Value:       &aliasValue{target: target, warn: warn},
		DefValue:    target.DefValue,
		NoOptDefVal: target.NoOptDefVal,
		Hidden:      true,
		Annotations: map[string][]string{renamedTo: {to}},
	})
}

// aliasValue is the value of a deprecated flag name: it sets the flag that
// replaced it.
type aliasValue struct {
	target *pflag.Flag
	warn   func()
}

func (a *aliasValue) Set(s string) error {
	a.warn()
	if err := a.target.Value.Set(s); err != nil {
		return err
	}
	a.target.Changed = true
	return nil
}

func (a *aliasValue) String() string { return a.target.Value.String() }
func (a *aliasValue) Type() string   { return a.target.Value.Type() }
