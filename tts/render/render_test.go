package render

import (
	"bytes"
	"context"
	"encoding/binary"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/tts"
)

const ms = time.Millisecond

const paragraph = `Sure, here is the plan for tomorrow. We meet at nine at the station, take the
early train to the coast, and walk the cliff path to the lighthouse. Lunch is at the harbour.
If it rains, we visit the museum instead, which opens at ten.`

// withMode returns cfg in the timing mode m.
func withMode(cfg pipeline.Config, m tts.Mode) pipeline.Config {
	cfg.Synth.Mode = m
	return cfg
}

// readPCM16 reads a 16-bit mono PCM WAV on its own, without beep: the
// check must not share the code it checks.
func readPCM16(t *testing.T, b []byte) (samples []int16, rate int) {
	t.Helper()
	if len(b) < 44 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		t.Fatalf("not a WAV file (%d bytes)", len(b))
	}
	off := 12
	for off+8 <= len(b) {
		id := string(b[off : off+4])
		size := int(binary.LittleEndian.Uint32(b[off+4:]))
		body := b[off+8:]
		switch id {
		case "fmt ":
			if ch := binary.LittleEndian.Uint16(body[2:]); ch != 1 {
				t.Fatalf("%d channels, want 1", ch)
			}
			if bits := binary.LittleEndian.Uint16(body[14:]); bits != 16 {
				t.Fatalf("%d bits, want 16", bits)
			}
			rate = int(binary.LittleEndian.Uint32(body[4:]))
		case "data":
			if size > len(body) {
				t.Fatalf("data chunk says %d bytes, file has %d", size, len(body))
			}
			samples = make([]int16, size/2)
			for i := range samples {
				samples[i] = int16(binary.LittleEndian.Uint16(body[2*i:]))
			}
			return samples, rate
		}
		off += 8 + size + size%2
	}
	t.Fatal("no data chunk")
	return nil, 0
}

// silence is a run of silent frames: [From, To) in frames.
type silence struct{ From, To int }

// detectSilence finds the runs of 10 ms frames whose energy is below
// -80 dBFS: the independent silence detector.
func detectSilence(s []int16, rate int) (frames []silence, frame int) {
	frame = rate / 100
	var cur *silence
	for f := 0; f*frame < len(s); f++ {
		var e float64
		seg := s[f*frame : min(len(s), (f+1)*frame)]
		for _, v := range seg {
			x := float64(v) / 32768
			e += x * x
		}
		quiet := e/float64(len(seg)) < 1e-8
		switch {
		case quiet && cur == nil:
			frames = append(frames, silence{f, f + 1})
			cur = &frames[len(frames)-1]
		case quiet:
			cur.To = f + 1
		default:
			cur = nil
		}
	}
	return frames, frame
}

func renderFile(t *testing.T, turn *pipeline.Turn, p *pipeline.Playout, opts Options) []byte {
	t.Helper()
	a, err := Turn(context.Background(), turn, p, opts)
	if err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(t.TempDir(), "turn.wav")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := WriteWAV(f, a); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// checkGapsExact checks that every underrun is digital silence of exactly
// its length, and that the file ends with the speech. With slack 0 the
// samples around each gap must be sound; else the silence around it may
// reach slack samples further (speech crosses zero); slack -1 skips the
// check (an engine's own pauses can end in digital silence).
func checkGapsExact(t *testing.T, s []int16, p *pipeline.Playout, slack int) {
	t.Helper()
	rate := p.Config().SampleRate
	end := 0
	for _, c := range p.Chunks {
		end = max(end, int(math.Round(c.PlayEnd.Seconds()*float64(rate))))
	}
	if len(s) != end {
		t.Errorf("WAV holds %d samples, want %d (the end of the speech)", len(s), end)
	}
	var total, zeros int64
	for _, u := range p.Underruns {
		from, to := int(u.StartSample), int(u.StartSample+u.Samples)
		total += u.Samples
		for j := from; j < to && j < len(s); j++ {
			if s[j] == 0 {
				zeros++
			}
		}
		if slack < 0 {
			continue
		}
		if from > 0 && silent(s[max(0, from-slack-1):from]) {
			t.Errorf("underrun at %v: the %d samples before it are silent: the gap starts early", u.Start, slack+1)
		}
		if to < len(s) && silent(s[to:min(len(s), to+slack+1)]) {
			t.Errorf("underrun at %v: the %d samples after it are silent: the gap ends late", u.Start, slack+1)
		}
	}
	if zeros != total {
		t.Errorf("underruns hold %d silent samples, want all %d", zeros, total)
	}
}

func silent(s []int16) bool {
	for _, v := range s {
		if v != 0 {
			return false
		}
	}
	return true
}

func TestRenderFindsUnderruns(t *testing.T) {
	t.Parallel()
	stalls := map[int]time.Duration{2: 2500 * ms, 14: 5000 * ms, 30: 5000 * ms, 31: 1500 * ms}
	cases := []struct {
		name string
		cfg  pipeline.Config
		turn *pipeline.Turn
	}{
		{"word", testkit.Config(t, "word", 120*ms, 0.1), testkit.WordTurn("w", paragraph, 300*ms, 40*ms, stalls)},
		{"sentence", testkit.Config(t, "sentence", 250*ms, 0.3), testkit.WordTurn("s", paragraph, 300*ms, 40*ms, map[int]time.Duration{8: 3000 * ms, 31: 6000 * ms, 37: 6000 * ms})},
		{"slow-pace", testkit.Config(t, "word", 80*ms, 0.1), testkit.WordTurn("p", paragraph, 200*ms, 420*ms, nil)},
		{"slow-synth", testkit.Config(t, "sentence", 100*ms, 1.7), testkit.WordTurn("r", paragraph, 200*ms, 30*ms, nil)},
		{"word-request", withMode(testkit.Config(t, "word", 250*ms, 0.5), tts.ModeRequest), testkit.WordTurn("q", paragraph, 300*ms, 40*ms, stalls)},
		{"token-parallel", withMode(testkit.Config(t, "token", 120*ms, 1.2), tts.ModeParallel), testkit.WordTurn("l", paragraph, 300*ms, 40*ms, stalls)},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			p, err := pipeline.Play(tc.cfg, tc.turn)
			if err != nil {
				t.Fatal(err)
			}
			if len(p.Underruns) < 2 {
				t.Fatalf("only %d underruns: the case needs some", len(p.Underruns))
			}
			// the rendered signal is exact to the sample; the WAV, whose
			// quantized speech crosses zero, to a few samples
			a, err := Turn(context.Background(), tc.turn, p, Options{})
			if err != nil {
				t.Fatal(err)
			}
			gap := gapMask(p, len(a.Samples))
			for i, v := range a.Samples {
				if (v == 0) != gap[i] {
					t.Fatalf("sample %d: silent %v, in a gap %v", i, v == 0, gap[i])
				}
			}
			s, rate := readPCM16(t, renderFile(t, tc.turn, p, Options{}))
			if rate != tc.cfg.SampleRate {
				t.Fatalf("rate %d, want %d", rate, tc.cfg.SampleRate)
			}
			checkGapsExact(t, s, p, 3)

			found, frame := detectSilence(s, rate)
			// the start-up silence comes first
			start, _ := p.Started()
			startFrames := int(math.Round(start.Seconds() * 100))
			if len(found) == 0 || found[0].From != 0 || abs(found[0].To-startFrames) > 1 {
				t.Fatalf("start-up silence of %v not found first: %v", start, found)
			}
			found = found[1:]
			// every underrun longer than two frames is found, within a
			// frame at both ends; shorter ones may hide between frames
			i := 0
			for _, u := range p.Underruns {
				from := float64(u.StartSample) / float64(frame)
				to := float64(u.StartSample+u.Samples) / float64(frame)
				if i < len(found) && math.Abs(float64(found[i].From)-from) <= 1 && math.Abs(float64(found[i].To)-to) <= 1 {
					i++
					continue
				}
				if u.Duration >= 20*ms {
					t.Errorf("underrun %v long at %v not found in the WAV near frames %.1f..%.1f: %v", u.Duration, u.Start, from, to, found[i:min(len(found), i+3)])
				}
			}
			if i < len(found) {
				t.Errorf("silences in the WAV that are no underrun: %v", found[i:])
			}
		})
	}
}

// gapMask marks the samples of the start-up silence and the underruns.
func gapMask(p *pipeline.Playout, n int) []bool {
	m := make([]bool, n)
	start, _ := p.Started()
	for i := range min(n, int(math.Round(start.Seconds()*float64(p.Config().SampleRate)))) {
		m[i] = true
	}
	for _, u := range p.Underruns {
		for i := u.StartSample; i < u.StartSample+u.Samples && i < int64(n); i++ {
			m[i] = true
		}
	}
	return m
}

func abs(x int) int { return max(x, -x) }

func TestRenderMarksGaps(t *testing.T) {
	t.Parallel()
	cfg := testkit.Config(t, "word", 100*ms, 0.1)
	turn := testkit.WordTurn("m", paragraph, 300*ms, 40*ms, map[int]time.Duration{3: 1000 * ms})
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Underruns) == 0 {
		t.Fatal("no underrun to mark")
	}
	s, _ := readPCM16(t, renderFile(t, turn, p, Options{MarkGaps: true}))
	for _, u := range p.Underruns {
		from := int(u.StartSample)
		n := min(int(u.Samples), MarkLength*cfg.SampleRate/1000)
		var peak int16
		for _, v := range s[from : from+n] {
			peak = max(peak, v, -v)
		}
		want := int16(math.Floor(MarkLevel * 32767))
		if peak < want*8/10 || peak > want+1 {
			t.Errorf("gap at %v: tone peak %d, want about %d", u.Start, peak, want)
		}
		for j := from + n; j < from+int(u.Samples); j++ {
			if s[j] != 0 {
				t.Fatalf("gap at %v: sound at sample %d after the mark", u.Start, j)
			}
		}
	}
}

func TestRenderEmptyAndMismatch(t *testing.T) {
	t.Parallel()
	cfg := testkit.Config(t, "word", 100*ms, 0.1)
	empty := &pipeline.Turn{ID: "e"}
	p, err := pipeline.Play(cfg, empty)
	if err != nil {
		t.Fatal(err)
	}
	a, err := Turn(context.Background(), empty, p, Options{})
	if err != nil || len(a.Samples) != 0 {
		t.Errorf("empty turn: %d samples, %v", len(a.Samples), err)
	}
	long := testkit.WordTurn("l", paragraph, 100*ms, 40*ms, nil)
	if p, err = pipeline.Play(cfg, long); err != nil {
		t.Fatal(err)
	}
	short := testkit.WordTurn("l", "Just this.", 100*ms, 40*ms, nil)
	if _, err := Turn(context.Background(), short, p, Options{}); err == nil {
		t.Error("rendering a playout with another turn's text: no error")
	}
	if err := WriteWAV(nil, tts.Audio{}); err == nil {
		t.Error("WriteWAV with rate 0: no error")
	}
}

func TestRenderEspeak(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath(tts.EspeakProgram); err != nil {
		t.Skipf("espeak-ng is not installed (%v): skipping the real-speech rendering test", err)
	}
	e, err := tts.NewEspeak()
	if err != nil {
		t.Fatal(err)
	}
	ctx := context.Background()
	cfg := testkit.Config(t, "sentence", 150*ms, 0.2)
	cache := tts.NewCache(ctx, e)
	cfg.Durations = cache
	turn := testkit.WordTurn("e", paragraph, 300*ms, 40*ms, map[int]time.Duration{9: 2500 * ms, 30: 4000 * ms})
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	if len(p.Underruns) == 0 {
		t.Fatal("no underrun with espeak-ng durations")
	}
	spoken := pipeline.SpokenText(turn)
	for i, c := range p.Chunks {
		d, err := cache.Duration(spoken[c.From:c.To])
		if err != nil {
			t.Fatal(err)
		}
		if c.Audio != d {
			t.Errorf("chunk %d: playout audio %v, espeak-ng says %v", i, c.Audio, d)
		}
	}
	b := renderFile(t, turn, p, Options{Engine: e})
	s, _ := readPCM16(t, b)
	// espeak-ng's own pauses end in digital silence too
	checkGapsExact(t, s, p, -1)
	// real speech, not the stand-in: espeak-ng's audio is in the file
	var loud int
	for _, v := range s {
		if v > 3000 || v < -3000 {
			loud++
		}
	}
	if loud < len(s)/50 {
		t.Errorf("only %d loud samples of %d: no speech?", loud, len(s))
	}
	if !bytes.HasPrefix(b, []byte("RIFF")) {
		t.Error("not a RIFF file")
	}
}

func BenchmarkRenderTurn(b *testing.B) {
	cfg := testkit.Config(b, "word", 100*ms, 0.1)
	turn := testkit.WordTurn("b", paragraph, 300*ms, 40*ms, map[int]time.Duration{3: 1000 * ms})
	p, err := pipeline.Play(cfg, turn)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportAllocs()
	for b.Loop() {
		if _, err := Turn(context.Background(), turn, p, Options{MarkGaps: true}); err != nil {
			b.Fatal(err)
		}
	}
}
