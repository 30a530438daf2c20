package pipeline

import (
	"slices"
	"testing"
	"time"
)

func TestCompareSeverity(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	gap := func(d time.Duration) Underrun {
		u := Underrun{Duration: d, Class: Glitch}
		if d >= DefaultInterruption {
			u.Class = Interruption
		}
		return u
	}
	// worst first
	want := []Severity{
		SeverityOf("long", "", []Underrun{gap(1000 * ms)}),
		SeverityOf("three", "", []Underrun{gap(160 * ms), gap(160 * ms), gap(160 * ms)}),
		SeverityOf("x", "", []Underrun{gap(200 * ms), gap(100 * ms)}), // 200 interrupted, 300 in all
		SeverityOf("y", "", []Underrun{gap(200 * ms), gap(50 * ms)}),
		SeverityOf("glitches", "", []Underrun{gap(50 * ms), gap(50 * ms)}),
		SeverityOf("a", "", []Underrun{gap(100 * ms)}),   // same silence, fewer underruns
		SeverityOf("b", "", []Underrun{gap(100 * ms)}),   // the same: by ID
		SeverityOf("a", "s2", []Underrun{gap(100 * ms)}), // by session first
		SeverityOf("clean", "", nil),
	}
	for _, order := range [][]int{{8, 7, 6, 5, 4, 3, 2, 1, 0}, {4, 0, 8, 2, 6, 1, 7, 3, 5}} {
		got := make([]Severity, len(order))
		for i, k := range order {
			got[i] = want[k]
		}
		slices.SortFunc(got, CompareSeverity)
		for i := range want {
			if got[i].Turn != want[i].Turn || got[i].Session != want[i].Session {
				t.Errorf("from order %v: rank %d is %s/%s, want %s/%s", order, i, got[i].Session, got[i].Turn, want[i].Session, want[i].Turn)
			}
		}
	}
	if !want[0].Worse(want[1]) || want[1].Worse(want[0]) || want[0].Worse(want[0]) {
		t.Error("Worse disagrees with CompareSeverity")
	}
}
