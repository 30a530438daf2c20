package pipeline

import (
	"errors"
	"strings"
	"testing"
	"time"
)

func TestParseSLOs(t *testing.T) {
	t.Parallel()
	got, err := ParseSLOs([]string{"e2el:4000", "ttft:200,tpot:50.5", "ttft:150"})
	if err != nil {
		t.Fatal(err)
	}
	if s := FormatSLOs(got); s != "ttft:150 tpot:50.5 e2el:4000" {
		t.Errorf("parsed %q; want vLLM's order, the last ttft kept", s)
	}
	for _, bad := range []string{"ttft", "ttft:", "itl:5", "tpot:-1", "tpot:NaN", "ttft:1:2"} {
		if _, err := ParseSLOs([]string{bad}); !errors.Is(err, ErrSLO) {
			t.Errorf("%q: error %v, want ErrSLO", bad, err)
		}
	}
}

// TestGoodputRule: vLLM's calculate_metrics counts a request good when
// every SLO (ms / 1000) is >= its metric in seconds; a request of one
// token has TPOT 0; failed requests are never good but are requests.
func TestGoodputRule(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	turn := func(status Status, tokens int, at ...time.Duration) *Turn {
		tr := &Turn{ID: "t", Status: status, OutputTokens: tokens}
		for _, a := range at {
			tr.Chunks = append(tr.Chunks, Chunk{At: a, Tokens: 1})
		}
		return tr
	}
	slos, _ := ParseSLOs([]string{"ttft:100 tpot:50 e2el:1000"})
	cases := []struct {
		name string
		t    *Turn
		good bool
	}{
		{"at every bound", turn(StatusOK, 0, 100*ms, 150*ms, 200*ms), true},    // TPOT (200-100)/2 = 50
		{"TTFT a nanosecond over", turn(StatusOK, 0, 100*ms+1, 150*ms), false}, // 0.100000001 > 0.1
		{"TPOT over", turn(StatusOK, 0, 10*ms, 200*ms), false},                 // 190 ms
		{"one token: TPOT 0", turn(StatusOK, 1, 90*ms), true},                  // vLLM takes tpot 0
		{"one chunk, many tokens", turn(StatusOK, 40, 90*ms), true},            // (90-90)/39 = 0
		{"E2E over", turn(StatusOK, 1000, 50*ms, 1001*ms), false},              // tpot ~0.95 ms, e2e 1.001 s
		{"failed", turn(StatusError, 0, 10*ms, 20*ms), false},                  // never good
		{"no chunks", turn(StatusOK, 0), false},                                // never good
	}
	g := NewGoodput(slos)
	want := 0
	for _, c := range cases {
		before := g.Good
		g.AddTurn(c.t)
		if (g.Good > before) != c.good {
			t.Errorf("%s: good %v, want %v", c.name, g.Good > before, c.good)
		}
		if c.good {
			want++
		}
	}
	g.Close(2)
	if g.Requests != len(cases) || g.Completed != 6 || g.Good != want || g.Fraction != float64(want)/float64(len(cases)) || *g.PerSecond != float64(want)/2 {
		t.Errorf("%+v; want %d requests, 6 completed, %d good, %v/s", g, len(cases), want, float64(want)/2)
	}
	if s := g.String(); !strings.Contains(s, "3 of 8 requests (37.5%) met every SLO (ttft:100 tpot:50 e2el:1000), 1.50 requests/s over 2.0 s") {
		t.Errorf("String() = %q", s)
	}
}
