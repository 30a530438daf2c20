package pipeline_test

import (
	"context"
	"errors"
	"io"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/scenarios"
	"github.com/speech-pipeline/underrun/tts"
)

// referenceMaxTPOT is MaxTPOT as it was before it stopped a play at its
// first interruption and reports remembered answers: every step of the
// search plays the whole turn with PlayTurn on a fresh Playout.
func referenceMaxTPOT(cfg pipeline.Config, t *pipeline.Turn) (time.Duration, bool) {
	if len(t.Chunks) == 0 {
		return 0, false
	}
	cfg.Measured = nil
	p, err := pipeline.NewPlayout(cfg, t.ID)
	if err != nil {
		panic(err)
	}
	ttft := t.Chunks[0].At
	clean := func(tpot time.Duration) bool {
		if err := p.PlayTurn(pipeline.Retime(t, ttft, tpot)); err != nil {
			return false
		}
		for _, u := range p.Underruns {
			if u.Class == pipeline.Interruption && u.Cause != pipeline.CauseTool {
				return false
			}
		}
		return true
	}
	if !clean(0) {
		return 0, false
	}
	lo, hi := time.Duration(0), 50*time.Millisecond
	for clean(hi) {
		lo = hi
		if hi >= pipeline.MaxTPOTLimit {
			return pipeline.MaxTPOTLimit, true
		}
		hi = min(2*hi, pipeline.MaxTPOTLimit)
	}
	for hi-lo > 10*time.Microsecond {
		mid := lo + (hi-lo)/2
		if clean(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo, true
}

// invertCase is a configuration and the turns to check the inversion on.
type invertCase struct {
	name  string
	cfg   pipeline.Config
	turns []*pipeline.Turn
}

// shifted returns a copy of t whose chunks all arrive by later (by may
// be negative down to -TTFT), text-less when textless: the inversion's
// answer must not change with the TTFT alone.
func shifted(t *pipeline.Turn, by time.Duration, textless bool, id string) *pipeline.Turn {
	c := *t
	c.ID = id
	c.Chunks = slices.Clone(t.Chunks)
	for i := range c.Chunks {
		c.Chunks[i].At += by
		if textless && !c.Chunks[i].Reasoning {
			c.Chunks[i].Text, c.Chunks[i].Textless = "", true
		}
	}
	return &c
}

// scenarioCases are the built-in scenarios, each with its own speech
// model, on its turns as they are, text-less, and moved in time (the
// turns the memo answers without a search), and with a pre-roll.
func scenarioCases(t *testing.T, turns int) []invertCase {
	all, err := scenarios.All()
	if err != nil {
		t.Fatal(err)
	}
	var out []invertCase
	for _, sc := range all {
		var ts []*pipeline.Turn
		err := sc.EachTurn(context.Background(), min(turns, sc.Turns), func(turn *pipeline.Turn) error {
			first := turn.Chunks[0].At
			ts = append(ts, turn,
				shifted(turn, 37*time.Millisecond+time.Duration(len(ts))*time.Microsecond, false, turn.ID+"-later"),
				shifted(turn, -first/2, false, turn.ID+"-earlier"),
				shifted(turn, 0, true, turn.ID+"-textless"),
				shifted(turn, 211*time.Millisecond+3, true, turn.ID+"-textless-later"),
				shifted(turn, -first, true, turn.ID+"-textless-at-0"))
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
		out = append(out, invertCase{sc.Name, sc.Setup.Config, ts})
		preroll := sc.Setup.Config
		preroll.Preroll = 300 * time.Millisecond
		out = append(out, invertCase{sc.Name + "/preroll", preroll, ts[:min(len(ts), 12)]})
	}
	return out
}

// traceCases are the trace files of the tests (benchmark tools' files as
// the tools write them, native traces), under the default speech model,
// a timer policy and a request-per-chunk synthesizer.
func traceCases(t *testing.T) []invertCase {
	var files []string
	for _, root := range []string{"trace/testdata", "../cmd/underrun/testdata"} {
		filepath.WalkDir(root, func(path string, d os.DirEntry, err error) error {
			if err == nil && !d.IsDir() && !strings.Contains(path, "fuzz") && !strings.HasSuffix(path, ".py") && !strings.HasSuffix(path, ".txt") && !strings.HasSuffix(path, ".yaml") {
				files = append(files, path)
			}
			return nil
		})
	}
	var turns []*pipeline.Turn
	for _, path := range files {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		dec, err := trace.Open(f, path, "auto")
		if err != nil {
			f.Close()
			continue // a summary, an expected output: no turns
		}
		for {
			turn, err := dec.Next()
			if err != nil {
				if !errors.Is(err, io.EOF) {
					t.Logf("%s: %v (the turns before it are checked)", path, err)
				}
				break
			}
			if turn.Validate() != nil || len(turn.Chunks) == 0 {
				continue
			}
			if pipeline.NotSpeech(turn) {
				pipeline.SpeakPerToken(turn)
			}
			turn.ID = path + ":" + turn.ID
			turns = append(turns, turn, shifted(turn, 123456789, false, turn.ID+"-later"))
		}
		if c, ok := dec.(io.Closer); ok {
			c.Close()
		}
		f.Close()
	}
	if len(turns) < 20 {
		t.Fatalf("only %d turns in %d trace files", len(turns), len(files))
	}
	var out []invertCase
	timer, _ := tts.ParsePolicy("timer:300ms")
	for _, v := range []struct {
		name string
		set  func(*pipeline.Config)
	}{
		{"default", func(*pipeline.Config) {}},
		{"timer", func(c *pipeline.Config) { c.Policy = timer }},
		{"request", func(c *pipeline.Config) { c.Synth.Mode = tts.ModeRequest; c.Synth.TTFA = 250 * time.Millisecond }},
		{"slow-synth", func(c *pipeline.Config) { c.Synth.RTF = 1.3 }},
		{"preroll", func(c *pipeline.Config) { c.Preroll = 400 * time.Millisecond }},
	} {
		cfg := pipeline.DefaultConfig()
		v.set(&cfg)
		out = append(out, invertCase{"traces/" + v.name, cfg, turns})
	}
	return out
}

// TestMaxTPOTAsBefore: the per-turn largest safe TPOT a report gives, and
// MaxTPOT on its own, are those of the search as it was (every play whole,
// no answer remembered), to the nanosecond, on every built-in scenario and
// the trace files of the tests, under several speech models.
func TestMaxTPOTAsBefore(t *testing.T) {
	t.Parallel()
	turns := 6
	if testing.Short() {
		turns = 2
	}
	cases := append(scenarioCases(t, turns), traceCases(t)...)
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			p, err := pipeline.NewPlayout(c.cfg, "")
			if err != nil {
				t.Fatal(err)
			}
			r := pipeline.NewReport(c.cfg, pipeline.ReportOptions{PerTurn: true, MaxTPOT: true})
			var checked, hits int
			for _, turn := range c.turns {
				if err := p.PlayTurn(turn); err != nil {
					t.Fatalf("%s: %v", turn.ID, err)
				}
				r.Add(turn, p)
				want, wantOK := referenceMaxTPOT(c.cfg, turn)
				got, ok, err := pipeline.MaxTPOT(c.cfg, turn, nil)
				if err != nil || got != want || ok != wantOK {
					t.Errorf("%s: MaxTPOT = %v, %v, %v; the search as it was: %v, %v", turn.ID, got, ok, err, want, wantOK)
				}
				line := r.PerTurn[len(r.PerTurn)-1]
				if tm, has := turn.Timing(); !has || !tm.HasSpeech {
					continue // no speech: not asked
				}
				checked++
				switch {
				case !wantOK && line.MaxSafeTPOTMs != nil:
					t.Errorf("%s: the report says %v ms; the search as it was found none", turn.ID, *line.MaxSafeTPOTMs)
				case wantOK && line.MaxSafeTPOTMs == nil:
					t.Errorf("%s: the report says none; the search as it was: %v ms", turn.ID, pipeline.Millis(want))
				case wantOK && *line.MaxSafeTPOTMs != pipeline.Millis(want):
					t.Errorf("%s: the report says %v ms; the search as it was: %v ms", turn.ID, *line.MaxSafeTPOTMs, pipeline.Millis(want))
				}
				if strings.Contains(turn.ID, "-later") || strings.Contains(turn.ID, "-earlier") || strings.Contains(turn.ID, "-at-0") {
					hits++
				}
			}
			if checked == 0 {
				t.Fatal("no turn with speech")
			}
			t.Logf("%d turns checked, %d of them moved in time", checked, hits)
		})
	}
}
