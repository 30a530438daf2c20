package pipeline

import (
	"testing"
	"time"
)

// TestReportKeepsFirstUnderruns: with MaxUnderruns the report keeps the
// first ones only, and counts every one.
func TestReportKeepsFirstUnderruns(t *testing.T) {
	t.Parallel()
	turn := &Turn{ID: "slow"}
	for i := range 12 {
		turn.Chunks = append(turn.Chunks, Chunk{At: time.Duration(i) * 2 * time.Second, Textless: true, Tokens: 1})
	}
	p, err := Play(DefaultConfig(), turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Underruns) < 5 {
		t.Fatalf("%d underruns; the test wants 5 or more", len(p.Underruns))
	}
	for _, keep := range []int{0, 3} {
		r := NewReport(DefaultConfig(), ReportOptions{KeepUnderruns: true, MaxUnderruns: keep})
		r.Add(turn, p)
		r.Add(turn, p)
		want := 2 * len(p.Underruns)
		if keep > 0 {
			want = keep
		}
		if len(r.List) != want || r.Underruns.Count != 2*len(p.Underruns) {
			t.Errorf("MaxUnderruns %d: %d kept of %d; want %d of %d", keep, len(r.List), r.Underruns.Count, want, 2*len(p.Underruns))
		}
		if keep > 0 && r.List[keep-1] != NewUnderrunReport(p.Underruns[keep-1]) {
			t.Errorf("MaxUnderruns %d: not the first ones kept", keep)
		}
	}
}
