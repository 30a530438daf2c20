package heard

import (
	"math"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// bursts returns tone bursts of on seconds separated by the silences
// given, at rate, with white noise at noiseDB dBFS throughout and the
// level dropped by dropDB from the middle on.
func bursts(rate int, on float64, silences []float64, noiseDB, dropDB float64) tts.Audio {
	var s []float32
	tone := func(d float64) {
		for i := range int(d * float64(rate)) {
			s = append(s, float32(0.3*math.Sin(2*math.Pi*220*float64(i)/float64(rate))))
		}
	}
	tone(on)
	for _, q := range silences {
		s = append(s, make([]float32, int(q*float64(rate)))...)
		tone(on)
	}
	rng := rand.New(rand.NewPCG(1, 2))
	noise, gain := math.Pow(10, noiseDB/20), math.Pow(10, -dropDB/20)
	for i := range s {
		v := float64(s[i])
		if i >= len(s)/2 {
			v *= gain
		}
		s[i] = float32(v + noise*rng.NormFloat64())
	}
	return tts.Audio{Samples: s, Rate: rate}
}

func TestDetectFindsSilencesInNoise(t *testing.T) {
	t.Parallel()
	silences := []float64{0.1, 0.6, 0.05, 0.3}
	for _, noise := range []float64{-200, -50} {
		a := bursts(16000, 0.4, silences, noise, 10)
		got, lv := Detector{}.Detect(a)
		if len(got) != len(silences) {
			t.Fatalf("noise %v dBFS: %d silences %+v, want %d (levels %+v)", noise, len(got), got, len(silences), lv)
		}
		at := 0.4
		for i, q := range silences {
			if d := got[i].Start.Seconds() - at; math.Abs(d) > 0.005 {
				t.Errorf("noise %v: silence %d starts at %v, want %.3fs", noise, i, got[i].Start, at)
			}
			if d := got[i].Length().Seconds() - q; math.Abs(d) > 0.01 {
				t.Errorf("noise %v: silence %d lasts %v, want %.3fs", noise, i, got[i].Length(), q)
			}
			at += q + 0.4
		}
	}
}

// Without a trace, a silence is an underrun when it is longer than the
// voice's sentence pause by the margin.
func TestAnalyzeAlone(t *testing.T) {
	t.Parallel()
	a := bursts(16000, 0.4, []float64{0.1, 0.9, 0.3}, -55, 0)
	cfg := pipeline.DefaultConfig()
	res, err := Analyze(a, nil, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	gaps := res.Gaps()
	if len(res.Silences) != 3 || len(gaps) != 1 {
		t.Fatalf("%d silences, %d gaps: %+v; want 3 and 1", len(res.Silences), len(gaps), res.Silences)
	}
	g := gaps[0]
	if want := 900*time.Millisecond - cfg.Voice.SentencePause; absDur(g.GapLength-want) > 10*time.Millisecond || g.Underrun.Class != pipeline.Interruption {
		t.Errorf("gap %v (%s), want %v, an interruption", g.GapLength, g.Underrun.Class, want)
	}
	if g.Confidence < 0.99 || res.Silences[0].Kind != Pause || res.Silences[0].Confidence < 0.99 {
		t.Errorf("confidences %v (gap) and %v (the 100 ms pause)", g.Confidence, res.Silences[0].Confidence)
	}
	if _, err := Analyze(tts.Audio{}, nil, cfg, Options{}); err == nil {
		t.Error("a recording without a rate: no error")
	}
}

func TestBoundaries(t *testing.T) {
	t.Parallel()
	bs, art := boundaries("Sure, I can. Yes", tts.DefaultVoice())
	want := []struct {
		off   int
		place Place
	}{{6, AtClause}, {8, AtWord}, {13, AtSentence}}
	if len(bs) != len(want) {
		t.Fatalf("%+v, want %v", bs, want)
	}
	for i, w := range want {
		if bs[i].off != w.off || bs[i].place != w.place {
			t.Errorf("boundary %d: %+v, want %+v", i, bs[i], w)
		}
		if i > 0 && bs[i].art <= bs[i-1].art {
			t.Errorf("articulation does not grow: %+v", bs)
		}
	}
	if art <= bs[2].art {
		t.Errorf("whole text %v, last boundary %v", art, bs[2].art)
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
