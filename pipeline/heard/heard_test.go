package heard

import (
	"bytes"
	"context"
	"encoding/binary"
	"io"
	"math"
	"math/rand/v2"
	"os"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/render"
)

// noise returns n samples of Gaussian noise of the colour given (0 white,
// 1 pink, 2 brown) at db dBFS RMS: white noise through one pole per
// octave (pink, Kellet's filter) or a leaky integrator (brown).
func noise(rng *rand.Rand, colour, n, rate int, db float64) []float32 {
	out := make([]float32, n)
	var b [7]float64
	var brown float64
	for i := range out {
		w := rng.NormFloat64()
		switch colour {
		case 1:
			b[0] = 0.99886*b[0] + w*0.0555179
			b[1] = 0.99332*b[1] + w*0.0750759
			b[2] = 0.96900*b[2] + w*0.1538520
			b[3] = 0.86650*b[3] + w*0.3104856
			b[4] = 0.55000*b[4] + w*0.5329522
			b[5] = -0.7616*b[5] - w*0.0168980
			out[i] = float32(b[0] + b[1] + b[2] + b[3] + b[4] + b[5] + b[6] + w*0.5362)
			b[6] = w * 0.115926
		case 2:
			brown = 0.998*brown + w
			out[i] = float32(brown)
		default:
			out[i] = float32(w)
		}
	}
	var sum float64
	for _, v := range out {
		sum += float64(v) * float64(v)
	}
	g := math.Pow(10, db/20) / math.Sqrt(sum/float64(n))
	for i := range out {
		out[i] *= float32(g)
	}
	return out
}

// voiced returns d seconds of a voice-like sound at rate: a 140 Hz pulse
// train's harmonics through two formants' worth of weights, at about -20
// dBFS, with a little wobble so that no two frames are alike.
func voiced(d float64, rate int, rng *rand.Rand) []float32 {
	n := int(d * float64(rate))
	out := make([]float32, n)
	f0 := 120 + 40*rng.Float64()
	for i := range out {
		t := float64(i) / float64(rate)
		f := f0 * (1 + 0.03*math.Sin(2*math.Pi*3*t))
		var v float64
		for h := 1; h <= 25; h++ {
			hz := f * float64(h)
			if hz > float64(rate)/2 {
				break
			}
			w := math.Exp(-math.Pow((hz-600)/400, 2)) + 0.5*math.Exp(-math.Pow((hz-1800)/600, 2)) + 0.1
			v += w * math.Sin(2*math.Pi*hz*t) / float64(h)
		}
		out[i] = float32(0.1 * v)
	}
	// soft edges, as a word's
	ramp := min(n/2, rate/100)
	for i := range ramp {
		g := float32(i) / float32(ramp)
		out[i] *= g
		out[n-1-i] *= g
	}
	return out
}

// speechLike returns stretches of voice of on seconds with the silences
// given between them, each silence filled with pad (a level in dBFS of
// near silence, as engines pad with; -200 for none), and the whole level
// dropped by dropDB from the middle on.
func speechLike(rate int, on float64, silences []float64, padDB, dropDB float64, rng *rand.Rand) []float32 {
	s := voiced(on, rate, rng)
	for _, q := range silences {
		gap := make([]float32, int(q*float64(rate)))
		if padDB > -150 {
			copy(gap, noise(rng, 0, len(gap), rate, padDB))
		}
		s = append(s, gap...)
		s = append(s, voiced(on, rate, rng)...)
	}
	gain := float32(math.Pow(10, -dropDB/20))
	for i := len(s) / 2; i < len(s); i++ {
		s[i] *= gain
	}
	return s
}

// The detector finds each silence whole, its edges within a frame or two,
// in noise of each colour at the levels heard in calls, in engines'
// near-silent padding, and across a drop of level, at the rates
// recordings come at.
func TestDetectFindsSilencesInNoise(t *testing.T) {
	t.Parallel()
	silences := []float64{0.1, 0.6, 0.05, 0.3, 0.2}
	for _, tc := range []struct {
		name                  string
		rate, colour          int
		noiseDB, padDB, dropB float64
	}{
		{"clean", 16000, 0, -300, -200, 0},
		{"engine padding at -62 dBFS", 16000, 0, -300, -62, 0},
		{"white -45 dBFS, level -10 dB", 22050, 0, -45, -200, 10},
		{"pink -45 dBFS", 48000, 1, -45, -200, 0},
		{"brown -35 dBFS", 16000, 2, -35, -200, 0},
		{"pink -60 dBFS, level -15 dB", 8000, 1, -60, -200, 15},
	} {
		rng := rand.New(rand.NewPCG(3, uint64(tc.rate)))
		s := speechLike(tc.rate, 0.4, silences, tc.padDB, tc.dropB, rng)
		if tc.noiseDB > -200 {
			nz := noise(rng, tc.colour, len(s), tc.rate, tc.noiseDB)
			for i := range s {
				s[i] += nz[i]
			}
		}
		got, lv := Detector{}.Detect(tts.Audio{Samples: s, Rate: tc.rate})
		if len(got) != len(silences) {
			t.Errorf("%s: %d silences %+v, want %d (levels %+v)", tc.name, len(got), got, len(silences), lv)
			continue
		}
		at := 0.4
		for i, q := range silences {
			if d := got[i].Start.Seconds() - at; math.Abs(d) > 0.012 {
				t.Errorf("%s: silence %d starts at %v, want %.3fs", tc.name, i, got[i].Start, at)
			}
			if d := got[i].Length().Seconds() - q; math.Abs(d) > 0.02 {
				t.Errorf("%s: silence %d lasts %v, want %.3fs", tc.name, i, got[i].Length(), q)
			}
			at += q + 0.4
		}
	}
}

// Where near silence pads a silence of digital zeros (an engine's padding
// around a player's underrun), the silence's core is the zeros.
func TestDetectCore(t *testing.T) {
	t.Parallel()
	const rate = 16000
	rng := rand.New(rand.NewPCG(5, 6))
	s := voiced(0.4, rate, rng)
	s = append(s, noise(rng, 0, rate/10, rate, -65)...) // 100 ms of padding
	s = append(s, make([]float32, rate/4)...)           // 250 ms of nothing
	s = append(s, noise(rng, 0, rate/5, rate, -65)...)  // 200 ms of padding
	s = append(s, voiced(0.4, rate, rng)...)
	got, _ := Detector{}.Detect(tts.Audio{Samples: s, Rate: rate})
	if len(got) != 1 {
		t.Fatalf("silences %+v, want one", got)
	}
	g := got[0]
	if !padded(g) || absDur(g.CoreStart-500*time.Millisecond) > 10*time.Millisecond || absDur(g.CoreEnd-750*time.Millisecond) > 10*time.Millisecond {
		t.Errorf("silence %v-%v with core %v-%v, want the core at 500-750 ms", g.Start, g.End, g.CoreStart, g.CoreEnd)
	}
}

// The noise after the last sound is no silence inside the speech, however
// the recording's length falls on the detector's frames.
func TestDetectEndsAtTheLastSound(t *testing.T) {
	t.Parallel()
	const rate = 16000
	rng := rand.New(rand.NewPCG(1, 2))
	s := speechLike(rate, 0.4, []float64{0.3}, -200, 0, rng)
	s = append(s, make([]float32, rate/5+1)...)
	nz := noise(rng, 0, len(s), rate, -50)
	for i := range s {
		s[i] += nz[i]
	}
	got, lv := Detector{}.Detect(tts.Audio{Samples: s, Rate: rate})
	if len(got) != 1 {
		t.Fatalf("silences %+v, want the one between the two (levels %+v)", got, lv)
	}
	if d := lv.LastSound - 1100*time.Millisecond; absDur(d) > 10*time.Millisecond {
		t.Errorf("last sound at %v, want 1.1s", lv.LastSound)
	}
	if d := lv.Duration - time.Duration(float64(len(s))/rate*1e9); absDur(d) > time.Millisecond {
		t.Errorf("duration %v, want %d samples' worth", lv.Duration, len(s))
	}
}

// endless is a recording made as it is read: stretches of voice-like sound
// (a few made once, played in turn) and silences over white noise, for
// left samples, at rate; it notes the heap in use every so often.
type endless struct {
	rate, left, pos, every int
	words                  [][]float32
	noise                  []float32
	block                  []float32
	k                      int
	peak                   uint64
}

func newEndless(rate, seconds int) *endless {
	rng := rand.New(rand.NewPCG(7, 8))
	e := &endless{rate: rate, left: seconds * rate, every: 60 * rate, noise: noise(rng, 0, rate, rate, -55)}
	for _, d := range []float64{0.3, 0.45, 0.6, 0.8} {
		e.words = append(e.words, voiced(d, rate, rng))
	}
	return e
}

func (e *endless) Read(p []float32) (int, error) {
	if e.left == 0 {
		return 0, io.EOF
	}
	if len(e.block) == 0 {
		w := e.words[e.k%len(e.words)]
		quiet := e.rate * (50 + 97*(e.k%5)) / 1000
		e.block = append(append(e.block[:0], w...), make([]float32, quiet)...)
		for i := range e.block {
			e.block[i] += e.noise[(i+e.k*131)%len(e.noise)]
		}
		e.k++
	}
	n := copy(p, e.block[:min(len(e.block), e.left)])
	e.block, e.left, e.pos = e.block[n:], e.left-n, e.pos+n
	if e.pos/e.every != (e.pos-n)/e.every {
		var ms runtime.MemStats
		runtime.ReadMemStats(&ms)
		e.peak = max(e.peak, ms.HeapInuse)
	}
	return n, nil
}

// The scan's memory does not grow with the recording: an hour of speech at
// 16 kHz keeps the heap within a few megabytes of what it held after its
// first minute (the silences found, a few thousand, aside).
func TestScanMemoryIsBounded(t *testing.T) {
	if testing.Short() {
		t.Skip("scans an hour of audio")
	}
	const rate = 16000
	run := func(seconds int) uint64 {
		runtime.GC()
		r := newEndless(rate, seconds)
		s, err := Detector{}.Scan(context.Background(), r, rate)
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Silences) < seconds/2 || len(s.Envelope.Min) > maxEnvelope {
			t.Fatalf("%d s: %d silences, envelope of %d", seconds, len(s.Silences), len(s.Envelope.Min))
		}
		return r.peak
	}
	minute, hour := run(120), run(3600)
	if hour > minute+8<<20 {
		t.Errorf("heap in use peaked at %d MB over an hour, %d MB over two minutes", hour>>20, minute>>20)
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
	// a chunk that begins inside a word (token chunking) is a place too
	bs, _ = boundaries("Sure, I can. Yes", tts.DefaultVoice(), 2, 8)
	if len(bs) != 4 || bs[0].off != 2 || bs[0].place != InWord || bs[2].off != 8 || bs[2].place != AtWord {
		t.Errorf("with chunks at 2 and 8: %+v", bs)
	}
}

// A long silence the rate puts as near a clause end as the word before it
// is placed at the clause end, where a silence costs nothing; when the
// engine predicts an underrun before the word ahead of the clause end, or
// the silence ended just when that word's chunk was ready, it is placed
// there instead.
func TestAlignByPredictionAndTiming(t *testing.T) {
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
	for j := range bs {
		bs[j].opens, bs[j].chunk = true, j+1
	}
	runs := []run{{sound: (bs[noon].art + bs[clause].art) / 2, length: 770 * time.Millisecond, end: 3 * time.Second}}
	ao := alignOpts{}
	if got := align(runs, art, bs, art, ao); got[0] != clause {
		t.Errorf("nothing known: the silence at boundary %d, want the clause end %d", got[0], clause)
	}
	predicted := append([]boundary(nil), bs...)
	predicted[noon].gap = 760 * time.Millisecond
	if got := align(runs, art, predicted, art, ao); got[0] != noon {
		t.Errorf("a gap predicted before %q: the silence at boundary %d, want %d", "noon", got[0], noon)
	}
	timed := append([]boundary(nil), bs...)
	timed[noon].earliest = 3*time.Second - 20*time.Millisecond
	timed[clause].earliest = timed[noon].earliest + 200*time.Millisecond
	ao = alignOpts{timed: true, slack: readyTolerance, window: readyTolerance}
	if got := align(runs, art, timed, art, ao); got[0] != noon {
		t.Errorf("the silence ended as %q was ready: at boundary %d, want %d", "noon", got[0], noon)
	}
	// a word cannot be heard before its chunk's audio is there
	late := append([]boundary(nil), bs...)
	for j := noon; j < len(late); j++ {
		late[j].earliest = 5 * time.Second
	}
	if got := align(runs, art, late, art, ao); got[0] == noon || got[0] == clause {
		t.Errorf("the words after the silence not ready until 2 s after it: placed at %d", got[0])
	}
}

// At a chunk's start, a silence is a gap when its sound resumed just as
// the chunk's audio can have been ready and it is longer than the voice's
// own pause there; when the chunk's audio waited long, it is a pause
// however long; far longer than the pause, it is a gap whatever the
// timing. Inside a chunk only a silence far beyond the voice's pause is.
func TestClassifyByTiming(t *testing.T) {
	t.Parallel()
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	res := &Result{voice: voiceModel{stats: map[placeKey]PauseStats{
		{AtSentence, true}:  {N: 5, Median: ms(300), Spread: ms(20)},
		{AtSentence, false}: {N: 5, Median: ms(200), Spread: ms(20)},
	}}}
	for _, tc := range []struct {
		name   string
		length time.Duration
		opens  bool
		wait   time.Duration // from when the chunk's audio can have been ready to the silence's end
		want   Kind
	}{
		{"resumed when ready, 40 ms over", ms(340), true, ms(20), Gap},
		{"resumed when ready, 10 ms over", ms(310), true, ms(20), Pause},
		{"waited 300 ms, 60 ms over", ms(360), true, ms(300), Pause},
		{"waited 2 s, 900 ms over", ms(1200), true, 2 * time.Second, Pause},
		{"waited 300 ms, 200 ms over", ms(500), true, ms(300), Gap},
		{"inside a chunk, 150 ms over", ms(350), false, 0, Pause},
		{"inside a chunk, 400 ms over", ms(600), false, 0, Gap},
	} {
		h := &Heard{Silence: Silence{Start: 5 * time.Second, End: 5*time.Second + tc.length}, Place: AtSentence, ChunkStart: tc.opens}
		h.CoreStart, h.CoreEnd = h.Start, h.End
		h.earliest = h.End - tc.wait
		res.classify(h)
		if h.Kind != tc.want {
			t.Errorf("%s: %s (%.2f), want %s", tc.name, h.Kind, h.Confidence, tc.want)
		}
		if h.Kind == Gap && (h.GapLength <= 0 || h.GapStart < h.Start || h.GapStart+h.GapLength > h.End) {
			t.Errorf("%s: gap at %v for %v outside the silence %v-%v", tc.name, h.GapStart, h.GapLength, h.Start, h.End)
		}
	}
}

// The voice's pauses where chunks begin are learned where the chunk's
// audio waited long (no gap can be there), not from the silences that
// resumed as soon as the audio was ready, and the timing is set to the
// recording by those.
func TestLearnFromWhereNoGapCanBe(t *testing.T) {
	t.Parallel()
	ms := func(v int) time.Duration { return time.Duration(v) * time.Millisecond }
	var hs []*Heard
	at := time.Second
	add := func(length, wait time.Duration) {
		h := &Heard{Silence: Silence{Start: at, End: at + length}, Place: AtWord, ChunkStart: true}
		h.earliest = h.End - wait
		hs = append(hs, h)
		at += length + time.Second
	}
	for _, l := range []int{300, 320, 310, 290, 305} {
		add(ms(l), ms(900))
	}
	add(ms(900), ms(-80)) // gaps: sound resumed 80 ms before the engine's timing says
	add(ms(700), ms(-70))
	res := &Result{}
	res.learn([][]*Heard{hs}, tts.DefaultVoice())
	m := res.voice.stats[placeKey{AtWord, true}]
	if m.N != 5 || m.Median != ms(305) {
		t.Errorf("pause where chunks begin: %+v, want the median of the five that waited", m)
	}
	if res.voice.k > ms(-65) || res.voice.k < ms(-85) {
		t.Errorf("timing offset %v, want about -75 ms", res.voice.k)
	}
	for _, h := range hs {
		res.classify(h)
	}
	if hs[4].Kind != Pause || hs[5].Kind != Gap || hs[6].Kind != Gap {
		t.Errorf("kinds %s %s %s, want pause, underrun, underrun", hs[4].Kind, hs[5].Kind, hs[6].Kind)
	}
}

// Without a trace, a silence is an underrun when it is far longer than the
// recording's own pauses; it is measured as it lies.
func TestAnalyzeAlone(t *testing.T) {
	t.Parallel()
	const rate = 16000
	rng := rand.New(rand.NewPCG(9, 9))
	s := speechLike(rate, 0.4, []float64{0.1, 0.25, 0.2, 0.9, 0.3, 0.15}, -200, 0, rng)
	cfg := pipeline.DefaultConfig()
	res, err := Analyze(tts.Audio{Samples: s, Rate: rate}, nil, cfg, Options{})
	if err != nil {
		t.Fatal(err)
	}
	gaps := res.Gaps()
	if len(res.Silences) != 6 || len(gaps) != 1 {
		t.Fatalf("%d silences, %d gaps: %+v; want 6 and 1", len(res.Silences), len(gaps), res.Silences)
	}
	g := gaps[0]
	if absDur(g.GapStart-2*time.Second-150*time.Millisecond) > 10*time.Millisecond || absDur(g.GapLength-900*time.Millisecond) > 20*time.Millisecond || g.Underrun.Class != pipeline.Interruption {
		t.Errorf("gap at %v for %v (%s), want at 2.15 s for 900 ms, an interruption", g.GapStart, g.GapLength, g.Underrun.Class)
	}
	if _, err := Analyze(tts.Audio{}, nil, cfg, Options{}); err == nil {
		t.Error("a recording without a rate: no error")
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

func absDur(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}

// BenchmarkScan decodes and scans a minute of 48 kHz speech-like sound
// in noise from a 16-bit WAV, as heard reads a file.
func BenchmarkScan(b *testing.B) {
	const rate, seconds = 48000, 60
	e := newEndless(rate, seconds)
	var a tts.Audio
	a.Rate = rate
	buf := make([]float32, 4096)
	for {
		n, err := e.Read(buf)
		a.Samples = append(a.Samples, buf[:n]...)
		if err != nil {
			break
		}
	}
	f, err := os.CreateTemp(b.TempDir(), "scan-*.wav")
	if err != nil {
		b.Fatal(err)
	}
	if err := render.WriteWAV(f, a); err != nil {
		b.Fatal(err)
	}
	f.Close()
	wav, err := os.ReadFile(f.Name())
	if err != nil {
		b.Fatal(err)
	}
	b.SetBytes(int64(len(wav)))
	b.ReportAllocs()
	for b.Loop() {
		r, err := tts.OpenRecording(bytes.NewReader(wav), tts.MixChannels)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := (Detector{}).Scan(context.Background(), r, r.Rate()); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(seconds*b.N)/b.Elapsed().Seconds(), "audio-s/s")
}

// stereoWAV writes a 16-bit WAV of two channels.
func stereoWAV(t *testing.T, left, right []float32, rate int) []byte {
	t.Helper()
	n := min(len(left), len(right))
	var b bytes.Buffer
	b.WriteString("RIFF")
	binary.Write(&b, binary.LittleEndian, uint32(36+4*n))
	b.WriteString("WAVEfmt ")
	for _, v := range []any{uint32(16), uint16(1), uint16(2), uint32(rate), uint32(4 * rate), uint16(4), uint16(16)} {
		binary.Write(&b, binary.LittleEndian, v)
	}
	b.WriteString("data")
	binary.Write(&b, binary.LittleEndian, uint32(4*n))
	for i := range n {
		for _, v := range []float32{left[i], right[i]} {
			binary.Write(&b, binary.LittleEndian, int16(max(-32768, min(32767, math.Round(float64(v)*32767)))))
		}
	}
	return b.Bytes()
}

// With one channel of a call read, the other side's voice bleeding into
// it (at -30 and -20 dB, delayed by a sample or none) is taken out before
// the detector listens: the silences of the channel read are found whole.
// The bot's own voice echoed into the other side (at -20 dB) takes
// nothing out of it.
func TestDetectTakesOutTheOtherSidesBleed(t *testing.T) {
	t.Parallel()
	const rate = 16000
	silences := []float64{0.15, 0.6, 0.3, 0.25}
	for _, tc := range []struct {
		name          string
		bleedDB, echo float64
		delay         int
	}{
		{"bleed -30 dB", -30, 0, 0},
		{"bleed -20 dB, a sample late", -20, 0, 1},
		{"bleed -30 dB, the bot's echo at -20 dB on the other side", -30, -20, 0},
	} {
		rng := rand.New(rand.NewPCG(11, 12))
		ours := speechLike(rate, 0.5, silences, -200, 0, rng)
		// the other side talks on throughout, with pauses of its own
		var other []float32
		for len(other) < len(ours)+rate {
			other = append(other, voiced(0.3+0.4*rng.Float64(), rate, rng)...)
			other = append(other, make([]float32, int((0.05+0.2*rng.Float64())*rate))...)
		}
		other = other[:len(ours)]
		g := float32(math.Pow(10, tc.bleedDB/20))
		left := make([]float32, len(ours))
		right := make([]float32, len(ours))
		for i := range ours {
			left[i] = ours[i]
			if j := i - tc.delay; j >= 0 {
				left[i] += g * other[j]
			}
			right[i] = other[i]
			if tc.echo != 0 {
				right[i] += float32(math.Pow(10, tc.echo/20)) * ours[i]
			}
		}
		wav := stereoWAV(t, left, right, rate)
		r, err := tts.OpenRecording(bytes.NewReader(wav), 1)
		if err != nil {
			t.Fatal(err)
		}
		s, err := Detector{}.Scan(context.Background(), r, r.Rate())
		if err != nil {
			t.Fatal(err)
		}
		if len(s.Silences) != len(silences) {
			t.Errorf("%s: %d silences %+v, want %d", tc.name, len(s.Silences), s.Silences, len(silences))
			continue
		}
		at := 0.5
		for i, q := range silences {
			if d := s.Silences[i].Start.Seconds() - at; math.Abs(d) > 0.015 {
				t.Errorf("%s: silence %d starts at %v, want %.3fs", tc.name, i, s.Silences[i].Start, at)
			}
			if d := s.Silences[i].Length().Seconds() - q; math.Abs(d) > 0.03 {
				t.Errorf("%s: silence %d lasts %v, want %.3fs", tc.name, i, s.Silences[i].Length(), q)
			}
			at += q + 0.5
		}
	}
}
