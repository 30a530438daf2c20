package scenarios

import (
	"embed"
	"errors"
	"fmt"
	"io/fs"
	"path"
	"slices"
	"strings"
)

//go:embed library/*.yaml texts/*.txt traces/*.jsonl
var library embed.FS

// ErrUnknown reports a scenario name that is not built in.
var ErrUnknown = errors.New("unknown scenario")

// Names lists the built-in scenarios, sorted.
func Names() []string {
	entries, _ := fs.ReadDir(library, "library")
	var names []string
	for _, e := range entries {
		if n, ok := strings.CutSuffix(e.Name(), ".yaml"); ok {
			names = append(names, n)
		}
	}
	slices.Sort(names)
	return names
}

// Builtin loads a built-in scenario by name.
func Builtin(name string) (*Scenario, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("%w %q: want one of %s", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	data, err := library.ReadFile(path.Join("library", name+".yaml"))
	if err != nil {
		return nil, fmt.Errorf("%w %q: %w", ErrUnknown, name, err)
	}
	s, err := Parse(data, name+".yaml", library, ".")
	if err != nil {
		return nil, err
	}
	s.Source = "builtin:" + name
	return s, nil
}

// Source returns the YAML text of a built-in scenario.
func Source(name string) ([]byte, error) {
	if !slices.Contains(Names(), name) {
		return nil, fmt.Errorf("%w %q: want one of %s", ErrUnknown, name, strings.Join(Names(), ", "))
	}
	return library.ReadFile(path.Join("library", name+".yaml"))
}

// All loads every built-in scenario.
func All() ([]*Scenario, error) {
	var out []*Scenario
	for _, n := range Names() {
		s, err := Builtin(n)
		if err != nil {
			return nil, err
		}
		out = append(out, s)
	}
	return out, nil
}
