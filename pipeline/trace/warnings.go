package trace

import (
	"fmt"
	"strings"
)

// Warner is a Decoder that notes what it read past without an error: the
// fields of a record that its format does not define (a misspelt name, or
// one of a newer version). Readers ignore such fields, so that a newer
// file still reads; a command prints the notes for its user.
type Warner interface {
	// Warnings returns the notes so far, oldest first: one per unknown
	// field name in the input, however often it comes.
	Warnings() []string
}

// maxFieldWarnings bounds the unknown field names noted in one input; a
// note past them says there are more.
const maxFieldWarnings = 32

// unknownFields notes the unknown field names of one input, each once.
type unknownFields struct {
	seen  map[string]struct{}
	notes []string
}

// note records field, found on line of input name in a record of kind
// ("" when the record's type is not known yet), unless it was noted.
func (u *unknownFields) note(name string, line int, kind string, field []byte) {
	if _, ok := u.seen[string(field)]; ok {
		return
	}
	if u.seen == nil {
		u.seen = map[string]struct{}{}
	}
	switch {
	case len(u.seen) > maxFieldWarnings:
		return
	case len(u.seen) == maxFieldWarnings:
		u.seen[string(field)] = struct{}{}
		u.notes = append(u.notes, fmt.Sprintf("%s:%d: more fields of unknown names; not listed", name, line))
		return
	}
	u.seen[string(field)] = struct{}{}
	where := "a record"
	if kind != "" {
		where = "a " + kind + " record"
		if strings.ContainsRune("aeiou", rune(kind[0])) {
			where = "an " + kind + " record"
		}
	}
	u.notes = append(u.notes, fmt.Sprintf("%s:%d: field %q of %s is not one the format defines; ignored, here and on every later line",
		name, line, truncateField(field), where))
}

// truncateField shortens a field name to what a warning shows.
func truncateField(field []byte) string {
	if len(field) > 64 {
		return string(field[:64]) + "..."
	}
	return string(field)
}

// Warnings returns the notes, oldest first.
func (u *unknownFields) Warnings() []string { return u.notes }

var (
	_ Warner = (*NativeReader)(nil)
	_ Warner = (*CaptureReader)(nil)
)
