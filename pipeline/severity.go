package pipeline

import (
	"cmp"
	"strings"
)

// Severity is how bad a turn sounded to its listener: the one measure by
// which every view ranks turns worst first (the verdict's "worst turn",
// the fleet view, the HTML report's timelines and per-turn table), so that
// all of them name the same turn for the same input, in any order of
// arrival.
type Severity struct {
	// Turn and Session name the turn; they only break ties.
	Turn, Session string
	Tally
}

// SeverityOf returns the severity of a turn with the given underruns.
func SeverityOf(turn, session string, us []Underrun) Severity {
	return Severity{Turn: turn, Session: session, Tally: TallyUnderruns(us)}
}

// CompareSeverity orders turns worst first, for slices.SortFunc: negative
// when a sounded worse than b. Worse is more silence in interruptions,
// then more silence in all underruns, then more underruns; turns that
// sounded the same go in order of session, then turn ID, so the order
// never depends on the order the turns came in (replay ends turns in time
// order, analyze reads them in file order).
func CompareSeverity(a, b Severity) int {
	if c := cmp.Compare(b.Interrupted, a.Interrupted); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Silence, a.Silence); c != 0 {
		return c
	}
	if c := cmp.Compare(b.Interruptions+b.Glitches, a.Interruptions+a.Glitches); c != 0 {
		return c
	}
	if c := strings.Compare(a.Session, b.Session); c != 0 {
		return c
	}
	return strings.Compare(a.Turn, b.Turn)
}

// Worse reports whether s ranks before o, worst first (CompareSeverity).
func (s Severity) Worse(o Severity) bool { return CompareSeverity(s, o) < 0 }
