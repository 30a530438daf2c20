package corpus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
	"github.com/speech-pipeline/underrun/tts"
)

// The noise of each colour has the slope it is named for, measured by
// Welch's estimate over 100 Hz to 6 kHz, and the level asked for.
func TestNoiseColours(t *testing.T) {
	t.Parallel()
	for _, c := range []struct {
		colour Colour
		slope  float64 // dB an octave
	}{{White, 0}, {Pink, -3.01}, {Brown, -6.02}} {
		for _, rate := range []int{8000, 16000, 48000} {
			rng := rand.New(rand.NewPCG(1, 2))
			s := Noise(rng, c.colour, 5*rate, rate, -45)
			to := min(6000, 0.4*float64(rate))
			if got := SpectrumSlope(s, rate, 100, to); math.Abs(got-c.slope) > 0.3 {
				t.Errorf("%s noise at %d Hz: slope %.2f dB/octave over 100-%.0f Hz, want %.2f", c.colour.Name, rate, got, to, c.slope)
			}
			if got := Level(s); math.Abs(got+45) > 0.01 {
				t.Errorf("%s noise at %d Hz: level %.3f dBFS, want -45", c.colour.Name, rate, got)
			}
		}
	}
	// the estimate tells the colours apart: white noise is not pink
	rng := rand.New(rand.NewPCG(3, 4))
	if got := SpectrumSlope(Noise(rng, White, 160000, 16000, -30), 16000, 100, 6000); math.Abs(got+3) < 1 {
		t.Errorf("white noise measured at %.2f dB/octave, as pink", got)
	}
}

// Every encoding reads back through heard's decoder as written, within
// its quantization, on the channel asked for.
func TestWAVReadsBack(t *testing.T) {
	t.Parallel()
	const rate = 16000
	left, right := make([]float32, rate), make([]float32, rate)
	for i := range left {
		left[i] = float32(0.5 * math.Sin(2*math.Pi*440*float64(i)/rate))
		right[i] = float32(0.25 * math.Sin(2*math.Pi*300*float64(i)/rate))
	}
	for _, c := range []struct {
		e   Encoding
		tol float64 // largest error, relative to full scale
	}{{PCM16, 1e-4}, {PCM24, 1e-6}, {Float32, 1e-7}, {MuLaw, 0.02}, {ALaw, 0.02}} {
		b, err := WAV([][]float32{left, right}, rate, c.e)
		if err != nil {
			t.Fatal(err)
		}
		for ch, want := range map[int][]float32{1: left, 2: right} {
			a, err := tts.DecodeRecording(b, ch)
			if err != nil {
				t.Fatalf("%s: %v", c.e, err)
			}
			if a.Rate != rate || len(a.Samples) != len(want) {
				t.Fatalf("%s channel %d: %d samples at %d Hz, want %d at %d", c.e, ch, len(a.Samples), a.Rate, len(want), rate)
			}
			worst := 0.0
			for i := range want {
				worst = max(worst, math.Abs(float64(a.Samples[i]-want[i])))
			}
			if worst > c.tol {
				t.Errorf("%s channel %d: error up to %.6f, want at most %v", c.e, ch, worst, c.tol)
			}
		}
	}
	if _, err := WAV([][]float32{left, right[:10]}, rate, PCM16); err == nil {
		t.Error("channels of different lengths: no error")
	}
}

// The chunks of every policy give the text back, each released no
// earlier than its last token, and the places between them are what ends
// before.
func TestChunksAndPlaces(t *testing.T) {
	t.Parallel()
	const text = "First, preheat the oven. Then mix the flour and butter."
	toks := tokens.Split(text)
	for _, p := range Policies {
		cs, err := chunks(p, toks)
		if err != nil {
			t.Fatal(err)
		}
		var got strings.Builder
		end := 0
		for i, c := range cs {
			got.WriteString(text[c.From:c.To])
			for end < len(toks) && len(strings.Join(toks[:end+1], "")) <= c.To {
				end++
			}
			if c.Release < end-1 {
				t.Errorf("%s: chunk %d %q released by token %d, before its last token %d", p, i, text[c.From:c.To], c.Release, end-1)
			}
		}
		if got.String() != text {
			t.Errorf("%s: chunks give %q", p, got.String())
		}
	}
	for off, want := range map[int]Place{
		strings.Index(text, " preheat"):  ClauseEnd,
		strings.Index(text, " the oven"): Word,
		strings.Index(text, " Then"):     Sentence,
		strings.Index(text, "heat"):      InWord,
	} {
		if got := placeAt(text, off); got != want {
			t.Errorf("place before %q: %s, want %s", text[off:], got, want)
		}
	}
	cs, _ := chunks(Clause, toks)
	if len(cs) != 3 {
		t.Errorf("clause chunks %+v, want 3", cs)
	}
}

// Match pairs by overlap, nearest start first, one to one; a gap found as
// two pieces is one match and one false find; gaps shorter than
// MinScored count neither way.
func TestMatch(t *testing.T) {
	t.Parallel()
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	truth := []Gap{
		{Start: ms(1000), Length: ms(500), Place: Sentence},
		{Start: ms(3000), Length: ms(100), Place: Word},
		{Start: ms(5000), Length: ms(20), Place: Word}, // too short to score
		{Start: ms(7000), Length: ms(300), Place: First},
	}
	found := []Found{
		{Start: ms(1010), Length: ms(480)}, // on time
		{Start: ms(1300), Length: ms(200)}, // the second piece of the first
		{Start: ms(3050), Length: ms(60)},  // 50 ms late
		{Start: ms(5005), Length: ms(30)},  // on the short one
		{Start: ms(9000), Length: ms(200)}, // false
	}
	s := Match(truth, found)
	if s.Truth != 3 || s.Found != 4 || s.Matched != 2 || s.OnTime != 1 {
		t.Fatalf("%+v: want 3 true, 4 found, 2 matched, 1 on time", s)
	}
	if got := s.StartError(1); got != ms(50) {
		t.Errorf("worst start error %v, want 50ms", got)
	}
	if got := s.LengthError(0); got != ms(20) {
		t.Errorf("least length error %v, want 20ms", got)
	}
	if s.ByPlace[First] != [2]int{1, 0} || s.ByPlace[Sentence] != [2]int{1, 1} {
		t.Errorf("by place %v", s.ByPlace)
	}
	if p, r := s.Precision(), s.Recall(); p != 0.5 || math.Abs(r-2.0/3) > 1e-9 {
		t.Errorf("precision %v, recall %v; want 0.5 and 2/3", p, r)
	}
	var sum Score
	sum.Add(s)
	sum.Add(Match(nil, nil))
	if sum.Matched != 2 || sum.ByLength[">= 400 ms"] != [2]int{1, 1} {
		t.Errorf("sum %+v", sum)
	}
}

// espeakVoices returns the corpus's espeak-ng voices, or skips the test.
func espeakVoices(t *testing.T) []Voice {
	t.Helper()
	var vs []Voice
	for _, v := range Voices {
		if v.Engine == Espeak {
			vs = append(vs, v)
		}
	}
	if err := vs[0].Available(context.Background()); errors.Is(err, ErrMissing) {
		t.Skip(err)
	}
	return vs
}

// The truth is the recording: every gap is digital silence between two
// chunks' audio, each chunk plays no earlier than it was ready and after
// the one before, the stalls asked for are made where the text has room,
// each of the length drawn, and the trace's text is the answer's.
func TestBuildTruth(t *testing.T) {
	t.Parallel()
	n := 6
	if testkit.Race {
		n = 2 // minutes under the race detector
	}
	c, err := Build(context.Background(), Options{Seed: 3, PerVoice: n, Voices: espeakVoices(t), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	stalls := 0
	places := map[string]int{}
	for _, r := range c.Recordings {
		for _, g := range r.Gaps {
			places[fmt.Sprintf("%s stall=%v", g.Place, g.Stall)]++
		}
		var text strings.Builder
		for _, ch := range r.Turn.Chunks {
			text.WriteString(ch.Text)
		}
		if text.String() != r.Text {
			t.Errorf("%s: the trace says %q, want %q", r.Name, text.String(), r.Text)
		}
		if err := r.Turn.Validate(); err != nil {
			t.Errorf("%s: %v", r.Name, err)
		}
		rate := float64(r.Audio.Rate)
		for i, p := range r.Plays {
			if float64(p.Start) < math.Round(p.Ready.Seconds()*rate) || i > 0 && p.Start < r.Plays[i-1].End {
				t.Errorf("%s: chunk %d plays at sample %d, ready %v, the one before ends at %d", r.Name, i, p.Start, p.Ready, r.Plays[max(0, i-1)].End)
			}
		}
		made := 0
		for _, g := range r.Gaps {
			from, to := int(math.Round(g.Start.Seconds()*rate)), int(math.Round(g.End().Seconds()*rate))
			if from != r.Plays[g.Chunk-1].End || to != r.Plays[g.Chunk].Start {
				t.Errorf("%s: gap %+v is not between chunks %d and %d", r.Name, g, g.Chunk-1, g.Chunk)
			}
			for i := from; i < to; i++ {
				if r.Audio.Samples[i] != 0 {
					t.Fatalf("%s: sample %d of the gap at %v is %v", r.Name, i, g.Start, r.Audio.Samples[i])
				}
			}
			if g.Stall {
				made++
				if g.Length < MinStall-time.Millisecond || g.Length > MaxStall+time.Millisecond {
					t.Errorf("%s: stall gap of %v, outside %v-%v", r.Name, g.Length, MinStall, MaxStall)
				}
			}
		}
		if made > r.Stalls {
			t.Errorf("%s: %d stalls made, %d asked", r.Name, made, r.Stalls)
		}
		if r.Stalls > 0 && made == 0 && len(r.Plays) > 2 {
			t.Errorf("%s: %d stalls asked, none made in %d chunks", r.Name, r.Stalls, len(r.Plays))
		}
		stalls += made
	}
	t.Logf("gaps by place: %v", places)
	if stalls < 3*n {
		t.Errorf("%d stalls in %d recordings", stalls, len(c.Recordings))
	}
	// the same seed makes the same corpus
	again, err := Build(context.Background(), Options{Seed: 3, PerVoice: 2, Voices: espeakVoices(t)[:1], Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	if a, b := again.Recordings[1], c.Recordings[1]; len(a.Gaps) != len(b.Gaps) || len(a.Audio.Samples) != len(b.Audio.Samples) {
		t.Errorf("seed 3 twice: %d gaps in %d samples, then %d in %d", len(b.Gaps), len(b.Audio.Samples), len(a.Gaps), len(a.Audio.Samples))
	}
}

// A missing engine is reported as ErrMissing with what to install.
func TestMissingEngine(t *testing.T) {
	t.Setenv("PATH", t.TempDir())
	v := Voice{Engine: Flite, Name: "slt"}
	err := v.probe(context.Background())
	if !errors.Is(err, ErrMissing) || !strings.Contains(err.Error(), "apt-get install flite") {
		t.Errorf("flite off the PATH: %v", err)
	}
}

// Every condition keeps the recording's time base: a burst's onset is
// where it was, on the channel heard is told to read, to within a
// millisecond, whatever the rate, filter or encoding.
func TestConditionsKeepTime(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath(Sox); err != nil {
		t.Skip("sox is not installed (apt-get install sox):", err)
	}
	const rate = 22050
	s := make([]float32, 3*rate)
	onsets := []int{rate / 2, rate + rate/3, 2*rate + rate/4}
	for _, on := range onsets {
		for i := range rate / 5 {
			s[on+i] = float32(0.3 * math.Sin(2*math.Pi*1000*float64(i)/rate))
		}
	}
	r := &Recording{Audio: tts.Audio{Samples: s, Rate: rate}}
	other := tts.Audio{Samples: make([]float32, rate), Rate: 16000}
	for i := range other.Samples {
		other.Samples[i] = float32(0.3 * math.Sin(2*math.Pi*500*float64(i)/16000))
	}
	for _, c := range Conditions {
		f, err := c.Make(context.Background(), Input{Recording: r, Other: other, Seed: 1, Dir: t.TempDir()})
		if err != nil {
			t.Fatal(err)
		}
		a, err := tts.DecodeRecording(f.Bytes, f.Channel)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		// the onset: the first 1 ms window after the quiet whose level is
		// 20 dB over the quiet before it
		for k, on := range onsets {
			want := float64(on) / rate
			got := onset(a, want-0.15, want+0.1)
			if math.Abs(got-want) > 0.001 {
				t.Errorf("%s: burst %d starts at %.4f s, want %.4f s", c.Name, k, got, want)
			}
		}
	}
}

// onset returns where, between from and to seconds, the level first
// rises over 10 dB under the burst's (its loudest 1 ms window) and 20 dB
// over the quiet before it (its first 50 ms), in 1 ms windows: a filter's
// ringing ahead of the burst is under that.
func onset(a tts.Audio, from, to float64) float64 {
	w := max(1, a.Rate/1000)
	level := func(i int) float64 { return Level(a.Samples[i : i+w]) }
	start, end := int(from*float64(a.Rate)), int(to*float64(a.Rate))
	var quiet float64
	for i := start; i < start+50*w; i += w {
		quiet += math.Pow(10, level(i)/10)
	}
	peak := math.Inf(-1)
	for i := start; i+w <= end+100*w; i += w {
		peak = max(peak, level(i))
	}
	q := max(10*math.Log10(quiet/50)+20, peak-10)
	for i := start + 50*w; i+w <= end; i++ {
		if level(i) > q {
			return float64(i+w/2) / float64(a.Rate)
		}
	}
	return math.NaN()
}
