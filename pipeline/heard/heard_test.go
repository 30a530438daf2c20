package heard

import (
	"bytes"
	"math"
	"math/rand/v2"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/pipeline/trace"
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

// The noise after the last sound is no silence inside the speech, however
// the recording's length falls on the detector's frames: a last frame of
// a few samples of noise has a level as likely as not over the
// threshold.
func TestDetectEndsAtTheLastSound(t *testing.T) {
	t.Parallel()
	a := bursts(16000, 0.4, []float64{0.3}, -50, 0)
	tail := bursts(16000, 0, []float64{0.2}, -50, 0).Samples // noise only
	a.Samples = append(a.Samples, tail...)
	n := int(DefaultFrame.Seconds() * 16000)
	a.Samples = a.Samples[:len(a.Samples)/n*n+1]
	a.Samples[len(a.Samples)-1] = float32(3 * math.Pow(10, -50.0/20)) // a noise sample of 3 sigma
	got, lv := Detector{}.Detect(a)
	if len(got) != 1 {
		t.Fatalf("silences %+v, want the one between the bursts (levels %+v)", got, lv)
	}
	if d := lv.LastSound - 1100*time.Millisecond; absDur(d) > 5*time.Millisecond {
		t.Errorf("last sound at %v, want 1.1s (the second burst's end)", lv.LastSound)
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

// A long silence the rate puts as near a clause end as the word before it
// is placed at the clause end, where a silence costs nothing; when the engine predicts an underrun before the
// word ahead of the clause end (the text the synthesizer waited for), the
// silence is placed there instead, and the clause end is unheard.
func TestAlignExpectsThePredictedGap(t *testing.T) {
	t.Parallel()
	text := "One leaves at noon, the other at five."
	bs, art := boundaries(text, tts.DefaultVoice())
	noon, clause := -1, -1
	for j, b := range bs {
		switch text[b.off:min(b.off+4, len(text))] {
		case "noon":
			noon = j
		case "the ":
			clause = j
		}
	}
	if noon < 0 || clause != noon+1 || bs[clause].place != AtClause {
		t.Fatalf("boundaries %+v", bs)
	}
	// halfway between the two places: the rate cannot tell them apart
	runs := []run{{sound: (bs[noon].art + bs[clause].art) / 2, length: 770 * time.Millisecond}}
	if got := align(runs, art, bs, art); got[0] != clause {
		t.Errorf("no prediction: the silence at boundary %d, want the clause end %d", got[0], clause)
	}
	bs[noon].gap = 760 * time.Millisecond
	if got := align(runs, art, bs, art); got[0] != noon {
		t.Errorf("a gap predicted before %q: the silence at boundary %d, want %d", "noon", got[0], noon)
	}
}

// Between words a silence must be longer than the voice's pause by the
// word margin to be a gap, or by half the gap the engine predicts there
// when that gap is at least the margin (a smaller one is not told from
// the pause's own variation).
func TestClassifyByThePredictedGap(t *testing.T) {
	t.Parallel()
	r := &Result{Pauses: map[Place]time.Duration{AtWord: 36 * time.Millisecond}}
	h := &Heard{Silence: Silence{Start: time.Second, End: time.Second + 92*time.Millisecond}, Place: AtWord}
	for _, c := range []struct {
		predicted time.Duration
		want      Kind
	}{{0, Pause}, {90 * time.Millisecond, Gap}, {WordMargin, Gap}, {WordMargin - time.Millisecond, Pause}, {20 * time.Millisecond, Pause}} {
		h.predicted = c.predicted
		if r.classify(h); h.Kind != c.want {
			t.Errorf("92 ms beside a 36 ms pause, %v predicted: %s, want %s", c.predicted, h.Kind, c.want)
		}
	}
}

// A voiceless stop begins a word with its closure's silence; other sounds
// do not.
func TestStopOnset(t *testing.T) {
	t.Parallel()
	letter := 40 * time.Millisecond
	for word, want := range map[string]time.Duration{
		"password": 24 * time.Millisecond, "Twenty": 24 * time.Millisecond, "choose": 24 * time.Millisecond,
		"closes": 24 * time.Millisecond, "key": 24 * time.Millisecond,
		"the": 0, "three": 0, "city": 0, "cent": 0, "and": 0, "sunny": 0, "": 0, "c": 0,
	} {
		if got := stopOnset(word, letter); got != want {
			t.Errorf("stopOnset(%q) = %v, want %v", word, got, want)
		}
	}
}

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// A gap at punctuation follows the pause when the chunk holding the
// punctuation was ready before the silence, and comes before it when that
// chunk was the late one; between words it begins after half the
// shortest silence the detector reports.
func TestSetGapPlacesTheGapAroundThePause(t *testing.T) {
	t.Parallel()
	const text = "Sure. Rain"
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	// "Sure" [0,4), "." [4,6), "Rain" [6,10): the "." chunk ready at 100
	// ms (in time) or at 900 ms (it stalled, as late as the word after)
	playout := func(punctReady time.Duration) *pipeline.Playout {
		return &pipeline.Playout{Chunks: []pipeline.SpeechChunk{
			{From: 0, To: 4, Ready: ms(50)},
			{From: 4, To: 6, Ready: punctReady},
			{From: 6, To: 10, Ready: ms(900)},
		}}
	}
	r := &Result{wordEnd: DefaultMinSilence / 2, Pauses: map[Place]time.Duration{AtWord: ms(40), AtSentence: ms(180)}, measured: map[Place]bool{AtSentence: true}}
	for _, tc := range []struct {
		name       string
		place      Place
		punctReady time.Duration
		onset      time.Duration
		wantStart  time.Duration
		wantLength time.Duration
	}{
		{"punctuation in time: pause, then the gap", AtSentence, ms(100), 0, ms(480), ms(500)},
		{"punctuation in time, a stop after: pause, the gap, the closure", AtSentence, ms(100), ms(27), ms(453), ms(500)},
		{"punctuation late: the gap, then the pause", AtSentence, ms(900), ms(27), ms(300), ms(500)},
		{"between words: after the word's quiet end", AtWord, ms(100), ms(27), ms(315), ms(665)},
	} {
		h := &Heard{Silence: Silence{Start: ms(300), End: ms(980)}, Kind: Gap, Place: tc.place, Offset: 6, Expected: r.Pauses[tc.place]}
		r.setGap(h, playout(tc.punctReady), text, 0, tc.onset)
		if h.GapStart != tc.wantStart || h.GapLength != tc.wantLength {
			t.Errorf("%s: gap at %v for %v, want at %v for %v", tc.name, h.GapStart, h.GapLength, tc.wantStart, tc.wantLength)
		}
	}
	// the engine's predicted gap splits the silence: the pause from half
	// to all of the expected one
	for _, tc := range []struct {
		predicted, wantLength time.Duration
	}{
		{ms(550), ms(550)}, // pause 130 ms: within [90, 180]
		{ms(200), ms(500)}, // pause 480 ms: no more than the expected 180 ms
		{ms(670), ms(590)}, // pause 10 ms: no less than half, 90 ms
	} {
		p := playout(ms(100))
		p.Underruns = []pipeline.Underrun{{Start: ms(400), Duration: tc.predicted}}
		h := &Heard{Silence: Silence{Start: ms(300), End: ms(980)}, Kind: Gap, Place: AtSentence, Offset: 6, Expected: ms(180)}
		r.setGap(h, p, text, 0, 0)
		if h.GapLength != tc.wantLength || h.GapStart != h.End-tc.wantLength {
			t.Errorf("predicted %v: gap at %v for %v, want %v ending at the silence's end", tc.predicted, h.GapStart, h.GapLength, tc.wantLength)
		}
	}
}

// TestExplainWordWithoutAudioOfItsOwn: a recording of speak (busy machine)
// in which espeak-ng gave the audio of "It is" with "sunny.": the chunks
// of the words after the tool call have no audio of their own, so no
// chunk of the engine's playout holds the word after the gap. The gap is
// still the one the engine predicts there: the tool call's silence before
// token 4.
func TestExplainWordWithoutAudioOfItsOwn(t *testing.T) {
	t.Parallel()
	const name = "testdata/chunks-without-audio.jsonl"
	b, err := os.ReadFile(name)
	if err != nil {
		t.Fatal(err)
	}
	turn, err := trace.NewNativeReader(bytes.NewReader(b), name).Next()
	if err != nil {
		t.Fatal(err)
	}
	rec, err := speak.ReadRecording(bytes.NewReader(b), name)
	if err != nil {
		t.Fatal(err)
	}
	cfg := pipeline.DefaultConfig()
	cfg.Measured = rec.Measured()
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	text := pipeline.SpokenText(turn)
	word := strings.Index(text, "It")
	for _, c := range p.Chunks {
		if word >= c.From && word < c.To {
			t.Fatalf("chunk %+v holds %q: the fixture no longer has a word without audio of its own", c, "It")
		}
	}
	var want pipeline.Underrun
	for _, u := range p.Underruns {
		if u.Cause == pipeline.CauseTool {
			want = u
		}
	}
	if want.Cause == "" {
		t.Fatalf("the engine predicts %+v: want a tool call's silence", p.Underruns)
	}
	h := &Heard{Place: AtSentence, Offset: word, GapStart: want.Start, GapLength: want.Duration}
	if got := explain(p, text, h, 0); got.Cause != pipeline.CauseTool || got.Token != want.Token || got.Chunk != want.Chunk {
		t.Errorf("the heard gap explained as %+v, want the engine's %+v", got, want)
	}
}
