package corpus

import (
	"context"
	"errors"
	"fmt"
	"math"
	"math/rand/v2"
	"os/exec"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
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
// chunks' audio of one turn, each chunk plays no earlier than it was
// ready and after the one before, the stalls asked for are made where the
// text has room, each of the length drawn, and the trace's text is the
// answer's. A recording of several turns has each turn's request after
// the turn before played out and the user spoke, its trace placed there;
// a barge-in cuts its turn inside a chunk, with the trace of what had
// streamed by then and nothing after it until the next turn.
func TestBuildTruth(t *testing.T) {
	t.Parallel()
	n := 6
	if testkit.Race {
		n = 2 // minutes under the race detector
	}
	c, err := Build(context.Background(), Options{Seed: 3, PerVoice: n, Extra: len(Kinds), Voices: espeakVoices(t), Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	stalls := 0
	places := map[string]int{}
	kinds := map[string]int{}
	for _, r := range c.Recordings {
		kinds[r.Kind]++
		want := Tune
		if r.Kind != OneTurn || r.Voice.Part == HeldOut {
			want = HeldOut
		}
		if r.Part != want {
			t.Errorf("%s (%s, %s voice) in the %s part, want %s", r.Name, r.Kind, r.Voice.Part, r.Part, want)
		}
		if rate, ok := ExtraRates[r.Kind]; ok && r.Rate != rate {
			t.Errorf("%s (%s) at rate %v", r.Name, r.Kind, r.Rate)
		}
		for _, g := range r.Gaps {
			places[fmt.Sprintf("%s stall=%v", g.Place, g.Stall)]++
		}
		answers := append([]string{r.Text}, r.More...)
		if len(r.Turns) != len(answers) {
			t.Fatalf("%s: %d turns in the trace, %d answers", r.Name, len(r.Turns), len(answers))
		}
		rate := float64(r.Audio.Rate)
		sample := func(d time.Duration) int { return int(math.Round(d.Seconds() * rate)) }
		for k, turn := range r.Turns {
			var text strings.Builder
			for _, ch := range turn.Chunks {
				text.WriteString(ch.Text)
			}
			cut := k == r.BargeIn-1 && r.Cut > 0
			switch {
			case !cut && text.String() != answers[k]:
				t.Errorf("%s turn %d: the trace says %q, want %q", r.Name, k+1, text.String(), answers[k])
			case cut && !strings.HasPrefix(answers[k], text.String()):
				t.Errorf("%s turn %d, cut: the trace says %q, not a start of %q", r.Name, k+1, text.String(), answers[k])
			case cut && (turn.Status == pipeline.StatusCancelled) == (text.String() == answers[k]):
				t.Errorf("%s turn %d, cut: status %s with %d of %d bytes streamed", r.Name, k+1, turn.Status, text.Len(), len(answers[k]))
			}
			if err := turn.Validate(); err != nil {
				t.Errorf("%s: %v", r.Name, err)
			}
			base := sample(turn.Start.Sub(r.Turns[0].Start))
			var plays []Play
			for _, p := range r.Plays {
				if p.Turn == k {
					plays = append(plays, p)
				}
			}
			if len(plays) == 0 {
				t.Fatalf("%s turn %d: nothing played", r.Name, k+1)
			}
			if k > 0 {
				// the user's turn between
				prev := r.Plays[slices.IndexFunc(r.Plays, func(p Play) bool { return p.Turn == k })-1]
				if base < prev.End+sample(userRange[0]) {
					t.Errorf("%s turn %d: its request at sample %d, the turn before played until %d", r.Name, k+1, base, prev.End)
				}
			}
			if cut {
				last := plays[len(plays)-1]
				if last.End != r.Cut || last.Start >= r.Cut {
					t.Errorf("%s turn %d: cut at %d, its last chunk plays %d-%d", r.Name, k+1, r.Cut, last.Start, last.End)
				}
				if streamed := turn.Chunks[len(turn.Chunks)-1].At; base+sample(streamed) > r.Cut {
					t.Errorf("%s turn %d: a token at %v after the cut at sample %d", r.Name, k+1, streamed, r.Cut)
				}
				next := len(r.Audio.Samples)
				if k+1 < len(r.Turns) {
					next = sample(r.Turns[k+1].Start.Sub(r.Turns[0].Start))
				}
				for i := r.Cut; i < next; i++ {
					if r.Audio.Samples[i] != 0 {
						t.Fatalf("%s: sample %d after the cut at %d is %v", r.Name, i, r.Cut, r.Audio.Samples[i])
					}
				}
			}
			for i, p := range plays {
				if p.Start < base+sample(p.Ready) || i > 0 && p.Start < plays[i-1].End {
					t.Errorf("%s turn %d: chunk %d plays at sample %d, ready %v after %d, the one before ends at %d", r.Name, k+1, i, p.Start, p.Ready, base, plays[max(0, i-1)].End)
				}
			}
		}
		if len(r.Turns) > 1 && r.Cut == 0 && r.BargeIn > 0 {
			t.Errorf("%s: no barge-in made", r.Name)
		}
		made := 0
		for _, g := range r.Gaps {
			from, to := sample(g.Start), sample(g.End())
			if from != r.Plays[g.Chunk-1].End || to != r.Plays[g.Chunk].Start || r.Plays[g.Chunk-1].Turn != r.Plays[g.Chunk].Turn {
				t.Errorf("%s: gap %+v is not between chunks %d and %d of a turn", r.Name, g, g.Chunk-1, g.Chunk)
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
		asked := 0
		for k := range r.Turns {
			asked += (r.Stalls + k) % 5
		}
		if made > asked {
			t.Errorf("%s: %d stalls made, %d asked", r.Name, made, asked)
		}
		if asked > 0 && made == 0 && len(r.Plays) > 2 && r.Cut == 0 {
			t.Errorf("%s: %d stalls asked, none made in %d chunks", r.Name, asked, len(r.Plays))
		}
		stalls += made
	}
	t.Logf("gaps by place: %v; recordings by kind: %v", places, kinds)
	for _, k := range Kinds {
		if kinds[k] == 0 {
			t.Errorf("no recording of kind %q", k)
		}
	}
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

// The slow and fast recordings speak at their rates: a text takes about
// Fast/Slow times as long at the slow rate as at the fast one, on every
// engine installed.
func TestExtraRates(t *testing.T) {
	t.Parallel()
	text := Texts[HeldOut][0]
	for _, v := range []Voice{Voices[0], Voices[2], Voices[4]} {
		if err := v.Available(context.Background()); errors.Is(err, ErrMissing) {
			t.Log(err)
			continue
		}
		var secs []float64
		for _, k := range []string{Slow, Fast} {
			as, err := v.Speak(context.Background(), ExtraRates[k], []string{text}, t.TempDir())
			if err != nil {
				t.Fatal(err)
			}
			a := trim(as[0])
			secs = append(secs, float64(len(a.Samples))/float64(a.Rate))
		}
		want := ExtraRates[Fast] / ExtraRates[Slow]
		if got := secs[0] / secs[1]; math.Abs(got/want-1) > 0.2 {
			t.Errorf("%s: %.2f s slow, %.2f s fast: %.2f times as long, want %.2f", v.Label(), secs[0], secs[1], got, want)
		}
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
// millisecond (5 ms through a lossy codec, which spreads a sudden onset
// over part of its frame: pre-echo before it, its level built up after),
// whatever the rate, filter, room, gain control
// or encoding. What a condition adds (noise, voices, hum) is left out
// here: it is added sample by sample.
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
		f, err := c.Make(context.Background(), Input{Recording: r, Other: other, Seed: 1, Dir: t.TempDir(), TransformsOnly: true})
		if errors.Is(err, ErrMissing) {
			t.Log(err)
			continue
		}
		if err != nil {
			t.Fatal(err)
		}
		a, err := tts.DecodeRecording(f.Bytes, f.Channel)
		if err != nil {
			t.Fatalf("%s: %v", c.Name, err)
		}
		// the onset: the first 1 ms window after the quiet whose level is
		// 20 dB over the quiet before it
		tol, under := 0.001, 10.0
		if slices.ContainsFunc(c.Needs, func(t Tool) bool { return t == SoxMP3 || t == SoxGSM || t == OpusEnc }) {
			// the burst's onset is 20 dB under its level: a codec builds
			// it up over a few ms
			tol, under = 0.005, 20
		}
		for k, on := range onsets {
			want := float64(on) / rate
			got := onset(a, want-0.15, want+0.1, under)
			if math.Abs(got-want) > tol {
				t.Errorf("%s: burst %d starts at %.4f s, want %.4f s", c.Name, k, got, want)
			}
		}
	}
}

// onset returns where, between from and to seconds, the level first
// rises over under dB under the burst's (its loudest 1 ms window) and 20
// dB over the quiet before it (its first 50 ms), in 1 ms windows: a
// filter's ringing ahead of the burst is under that.
func onset(a tts.Audio, from, to, under float64) float64 {
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
	q := max(10*math.Log10(quiet/50)+20, peak-under)
	for i := start + 50*w; i+w <= end; i++ {
		if level(i) > q {
			return float64(i+w/2) / float64(a.Rate)
		}
	}
	return math.NaN()
}
