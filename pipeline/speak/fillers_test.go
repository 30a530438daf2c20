package speak

import (
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts/player"
)

// TestLessFillers: a filler inside a gap leaves the silence before and
// after it, each graded again and of the gap's cause; one over a whole
// gap leaves none; one outside every gap changes nothing.
func TestLessFillers(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	cfg := pipeline.Config{SampleRate: 1000, Interruption: 200 * ms}
	gap := func(start, d time.Duration) pipeline.Underrun {
		u := pipeline.Underrun{Turn: "t", Cause: pipeline.CauseTool, Token: 3, Chunk: 2}
		cfg.Place(&u, start, d)
		return u
	}
	span := func(start, d time.Duration) player.Span { return player.Span{Start: start, Duration: d} }
	for _, tc := range []struct {
		name    string
		gaps    []pipeline.Underrun
		fillers []player.Span
		want    []pipeline.Underrun
	}{
		{"inside", []pipeline.Underrun{gap(100*ms, 1000*ms)}, []player.Span{span(300*ms, 600*ms)},
			[]pipeline.Underrun{gap(100*ms, 200*ms), gap(900*ms, 200*ms)}},
		{"two inside", []pipeline.Underrun{gap(100*ms, 1000*ms)}, []player.Span{span(150*ms, 100*ms), span(300*ms, 700*ms)},
			[]pipeline.Underrun{gap(100*ms, 50*ms), gap(250*ms, 50*ms), gap(1000*ms, 100*ms)}},
		{"over the start", []pipeline.Underrun{gap(100*ms, 1000*ms)}, []player.Span{span(50*ms, 900*ms)},
			[]pipeline.Underrun{gap(950*ms, 150*ms)}},
		{"over the end", []pipeline.Underrun{gap(100*ms, 1000*ms)}, []player.Span{span(1000*ms, 900*ms)},
			[]pipeline.Underrun{gap(100*ms, 900*ms)}},
		{"over it all", []pipeline.Underrun{gap(100*ms, 1000*ms), gap(1500*ms, 100*ms)}, []player.Span{span(100*ms, 1000*ms)},
			[]pipeline.Underrun{gap(1500*ms, 100*ms)}},
		{"between", []pipeline.Underrun{gap(100*ms, 100*ms), gap(500*ms, 100*ms)}, []player.Span{span(200*ms, 300*ms)},
			[]pipeline.Underrun{gap(100*ms, 100*ms), gap(500*ms, 100*ms)}},
	} {
		got := lessFillers(cfg, tc.gaps, tc.fillers)
		if len(got) != len(tc.want) {
			t.Errorf("%s: %+v, want %+v", tc.name, got, tc.want)
			continue
		}
		for i := range got {
			if got[i] != tc.want[i] {
				t.Errorf("%s: gap %d %+v, want %+v", tc.name, i, got[i], tc.want[i])
			}
		}
	}
	if g := gap(100*ms, 200*ms); g.Class != pipeline.Interruption || g.Samples != 200 || g.StartSample != 100 {
		t.Errorf("Config.Place: %+v, want an interruption of 200 samples from sample 100", g)
	}
}
