package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/player"
	"github.com/speech-pipeline/underrun/tts/stream"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// speakJSON is what the tests read of speak's JSON report.
type speakJSON struct {
	Answer pipeline.Answer `json:"answer"`
	Heard  struct {
		Underruns struct {
			Count int `json:"count"`
		} `json:"underruns"`
	} `json:"heard"`
	Comparison struct {
		Agrees bool `json:"agrees"`
		Turns  []struct {
			Turn   string `json:"turn"`
			Agrees bool   `json:"agrees"`
			Gaps   []struct {
				Kind      string         `json:"kind"`
				Heard     *speak.GapJSON `json:"heard"`
				Predicted *speak.GapJSON `json:"predicted"`
			} `json:"gaps"`
		} `json:"turns"`
	} `json:"comparison"`
}

// detector says what silence is: at most quiet in magnitude, for at least
// min samples, across sounds of at most blip samples (a conversion can
// lift a silent sample over quiet); and which silence is inserted: at
// least noise longer than the silence at the same place in the reference.
type detector struct {
	quiet float64
	min   int
	blip  int
	noise time.Duration
}

func (d detector) silent(v float32) bool { return math.Abs(float64(v)) <= d.quiet }

// silentFrom returns how long s is silent from sample i, a blip at the
// start or inside aside; 0 when it is not.
func (d detector) silentFrom(s []float32, i int) int {
	j := i
	for n := 0; j < len(s) && !d.silent(s[j]) && n < d.blip; n++ {
		j++
	}
	if j >= len(s) || !d.silent(s[j]) {
		return 0
	}
	for j < len(s) {
		if d.silent(s[j]) {
			j++
			continue
		}
		k := j
		for k < len(s) && !d.silent(s[k]) && k-j <= d.blip {
			k++
		}
		if k-j > d.blip || k >= len(s) {
			break
		}
		j = k
	}
	return j - i
}

// silentRuns returns the runs of silence in s, at least d.min long, as
// [start, end) sample pairs.
func (d detector) silentRuns(s []float32) [][2]int {
	var runs [][2]int
	for i := 0; i < len(s); {
		if !d.silent(s[i]) {
			i++
			continue
		}
		n := d.silentFrom(s, i)
		if n >= d.min {
			runs = append(runs, [2]int{i, i + n})
		}
		i += max(n, 1)
	}
	return runs
}

// exact is the detector for audio that went through nothing but 16-bit
// WAV: a sample is silent when it is at most one step from zero, and any
// silence more than the reference's was inserted.
var exact = detector{quiet: 1.0 / 32768, min: 1}

// detectGaps finds, by the energy of what was played, the silence the
// player added to the audio the synthesizer made: played, from the turn's
// first audio, is the reference (the chunks' audio one after another,
// chunk i from sample bounds[i]) with silence inserted, and a silent run
// of played longer than the run (if any) at the same place in the
// reference holds an inserted gap. The gap lies where a chunk begins
// inside the run (the player waited for that chunk), else at the run's
// start (it waited inside a chunk). The silence after the reference's last
// sound is the end of the speech, not a gap.
func (d detector) detectGaps(played, reference []float32, bounds []int, rate int) (gaps []silence) {
	min := rate / 1000 // gaps of at least 1 ms
	at := func(n int) time.Duration { return time.Duration(float64(n) * float64(time.Second) / float64(rate)) }
	inserted := 0 // samples of played that are not in the reference, so far
	for _, run := range d.silentRuns(played) {
		ref := run[0] - inserted // where the run starts in the reference
		if ref < 0 || ref >= len(reference) {
			break
		}
		refLen := d.silentFrom(reference, ref)
		extra := (run[1] - run[0]) - refLen
		if extra <= 0 || at(extra) < d.noise {
			continue
		}
		if ref+refLen >= len(reference) {
			break // the speech is over
		}
		into := 0
		for _, b := range bounds {
			if b > ref && b <= ref+refLen {
				into = b - ref
				break
			}
		}
		if extra >= min {
			gaps = append(gaps, silence{At: at(run[0] + into), Length: at(extra), Run: [2]time.Duration{at(run[0]), at(run[1])}})
		}
		inserted += extra
	}
	return gaps
}

// silence is silence a detector found inserted: At, Length long, in the
// silent run Run of what was played.
type silence struct {
	At, Length time.Duration
	Run        [2]time.Duration
}

// The check: speak runs a scenario with stalls against the mock
// (tokens and speech both from it, over HTTP); what the player counted
// is what the engine predicts from the token arrivals and measured
// timings, gap for gap within 20 ms; and the silence in the WAV the
// paced sink wrote is found, by its energy, in the same places within
// 10 ms.
func TestSpeakAgainstMock(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 320) // short tests
	turns, _, err := scenarioTurns(context.Background(), "testdata/speak/stalls.yaml", 0)
	if err != nil {
		t.Fatal(err)
	}
	srv := httptest.NewServer(&openai.Mock{Turns: turns, Speech: e})
	defer srv.Close()
	dir := t.TempDir()
	wav, rec := filepath.Join(dir, "heard.wav"), filepath.Join(dir, "run.jsonl")
	code, out, errOut := runCLI(t, "", "speak", "--url", srv.URL, "--model", "m", "--requests", "1", "--tts-url", srv.URL, "--tts-format", "wav",
		"--wav", wav, "--record", rec, "--report", "json", "--check", "--max-tpot=false")
	if code == exitUsage {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got speakJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if len(got.Comparison.Turns) != 1 {
		t.Fatalf("%d turns compared, want 1; stderr:\n%s", len(got.Comparison.Turns), errOut)
	}
	heard := got.Comparison.Turns[0].Gaps
	same := 0
	for _, g := range heard {
		if g.Kind == string(speak.Negligible) {
			continue // under a millisecond on one side only: the player counts whole samples (no difference)
		}
		same++
		if g.Kind != "same" || g.Heard == nil || g.Predicted == nil {
			t.Errorf("gap %+v: heard and predicted differ", g)
			continue
		}
		if d := g.Heard.StartMs - g.Predicted.StartMs; math.Abs(d) > 20 {
			t.Errorf("gap heard at %.1f ms, predicted at %.1f ms", g.Heard.StartMs, g.Predicted.StartMs)
		}
		if d := g.Heard.DurationMs - g.Predicted.DurationMs; math.Abs(d) > 20 {
			t.Errorf("gap heard for %.1f ms, predicted for %.1f ms", g.Heard.DurationMs, g.Predicted.DurationMs)
		}
	}
	if same < 2 {
		t.Fatalf("%d gaps, want one at each stall at least; stderr:\n%s", same, errOut)
	}
	if code != exitFail || !got.Comparison.Agrees {
		// the stalls interrupt (exit 1) and --check passes
		t.Errorf("exit %d, agrees %v; want 1 (an interruption was heard), agreeing", code, got.Comparison.Agrees)
	}
	// the answer says whose timing its gaps are: the real player's, with
	// the mock's speech API (espeak-ng), and where the voice model alone puts
	// the worst one
	a := got.Answer
	if a.Verdict != "fail" || a.Timing.Source != pipeline.TimingPlayer || !strings.HasPrefix(a.Timing.Synthesizer, "speech API at ") ||
		!strings.Contains(a.Timing.Text, "the real player's own count") || a.Worst == nil || a.Worst.ModelLengthMs == nil ||
		!strings.Contains(a.Timing.Text, "the voice model alone puts the") {
		t.Errorf("answer %+v", a)
	}

	// the independent check: the energy of the WAV against the audio the
	// synthesizer makes of the recorded chunks, made again here
	recording := readAs(t, rec, speak.ReadRecording)
	reference, bounds := chunkAudio(t, e, recording.Chunks["r1"])
	played := readWAV(t, wav)
	h := recording.Heard["r1"]
	// the turn's audio starts in the WAV where the player says it played
	// its first sample
	found := exact.detectGaps(played.Samples[h.FirstSample:], reference, bounds, played.Rate)
	t.Logf("heard gaps %+v; silence found in the WAV %v", h.Gaps, found)
	checkFound(t, found, h, played.Rate, "the WAV", time.Millisecond)
}

// chunkAudio synthesizes the recorded chunks again, one after another:
// the audio, and where each chunk's starts in it.
func chunkAudio(t *testing.T, e *stream.Espeak, chunks []speak.Timing) (reference []float32, bounds []int) {
	t.Helper()
	for _, c := range chunks {
		a, err := e.Engine.Synthesize(context.Background(), c.Text)
		if err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, len(reference))
		reference = append(reference, a.Samples...)
	}
	return reference, bounds
}

// checkFound checks the silence found in what was played (found: each
// inserted stretch, in time since the turn's first audio) against the gaps
// the player counted, where it says it played them. An energy detector
// sees how much silence was added to each stretch of silence, not where
// inside the stretch it went (a piece of audio can end in silence, and the
// player wait after it): the gaps the player played inside a stretch must
// add up to what was found there, within 10 ms, and every gap must lie in
// such a stretch.
func checkFound(t *testing.T, found []silence, h player.Heard, rate int, where string, shortest time.Duration) {
	t.Helper()
	used := make([]bool, len(h.Gaps))
	played := func(g player.Gap) time.Duration {
		return time.Duration(float64(g.Played) * float64(time.Second) / float64(rate))
	}
	for _, f := range found {
		var sum time.Duration
		n := 0
		for i, g := range h.Gaps {
			if at := played(g); at >= f.Run[0]-10*time.Millisecond && at <= f.Run[1] && !used[i] {
				used[i] = true
				sum += g.Duration
				n++
			}
		}
		switch {
		case n == 0:
			t.Errorf("silence of %v added at %v (in the silent stretch %v-%v) in %s that the player did not count", f.Length, f.At, f.Run[0], f.Run[1], where)
		case absDuration(sum-f.Length) > 10*time.Millisecond:
			t.Errorf("silence of %v added to the stretch %v-%v in %s; the player counted %v in %d gaps there", f.Length, f.Run[0], f.Run[1], where, sum, n)
		}
	}
	for i, g := range h.Gaps {
		if !used[i] && g.Duration >= shortest {
			t.Errorf("the player counted %v at %v (%v into the turn's audio); %s has no silence added there", g.Duration, g.Start, played(g), where)
		}
	}
}

// speak with espeak-ng as a process, one per turn (stream mode), on a
// scenario; the recording plays through analyze --measured to the same
// gaps the run predicted.
func TestSpeakStreamModeAndAnalyzeMeasured(t *testing.T) {
	t.Parallel()
	streamtest.Espeak(t, 320)
	rec := filepath.Join(t.TempDir(), "run.jsonl")
	code, out, errOut := runCLI(t, "", "speak", "--scenario", "testdata/speak/late-end.yaml", "--tts-mode", "stream", "--espeak-wpm", "320",
		"--record", rec, "--report", "json", "--check", "--max-tpot=false")
	if code == exitUsage {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	var got speakJSON
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	if !got.Comparison.Agrees || len(got.Comparison.Turns) != 1 || len(got.Comparison.Turns[0].Gaps) == 0 {
		t.Fatalf("comparison %+v, want gaps heard as predicted; stderr:\n%s", got.Comparison, errOut)
	}
	var predicted []*speak.GapJSON
	for _, g := range got.Comparison.Turns[0].Gaps {
		predicted = append(predicted, g.Predicted)
	}
	code, out, errOut = runCLI(t, "", "analyze", "--measured", rec, "--tts-mode", "stream", "--report", "json", "--per-turn", rec)
	if code == exitUsage {
		t.Fatalf("analyze --measured: exit %d: %s", code, errOut)
	}
	var report struct {
		Answer pipeline.Answer `json:"answer"`
		List   []struct {
			StartMs    float64 `json:"start_ms"`
			DurationMs float64 `json:"duration_ms"`
		} `json:"underrun_list"`
		Underruns struct {
			Count int `json:"count"`
		} `json:"underruns"`
	}
	if err := json.Unmarshal([]byte(out), &report); err != nil {
		t.Fatal(err)
	}
	if s := report.Answer.Timing.Source; s != pipeline.TimingRun {
		t.Errorf("analyze --measured: the answer's timing is %q, want %q", s, pipeline.TimingRun)
	}
	if report.Underruns.Count != len(predicted) {
		t.Fatalf("analyze --measured finds %d underruns, speak predicted %d: %s", report.Underruns.Count, len(predicted), out)
	}
	for i, u := range report.List {
		if math.Abs(u.StartMs-predicted[i].StartMs) > 0.001 || math.Abs(u.DurationMs-predicted[i].DurationMs) > 0.001 {
			t.Errorf("underrun %d at %.3f ms for %.3f ms; speak predicted %.3f for %.3f", i, u.StartMs, u.DurationMs, predicted[i].StartMs, predicted[i].DurationMs)
		}
	}
}

func TestSpeakUsage(t *testing.T) {
	t.Parallel()
	tests := []usageCase{
		{[]string{"speak", "--scenario", "default", "x.jsonl"}, "one source"},
		{[]string{"speak", "--url", "http://127.0.0.1:1"}, "--model"},
		{[]string{"speak", "--tts-voice", "alloy"}, "--tts-url"},
		{[]string{"speak", "--tts-url", "ftp://x"}, "--tts-url"},
		{[]string{"speak", "--tts-url", "http://127.0.0.1:1", "--tts-format", "mp3"}, "pcm or wav"},
		{[]string{"speak", "--match-within", "0"}, "--match-within"},
		{[]string{"speak", "--chunking", "nonsense"}, "--chunking"},
		{[]string{"mock", "--tts-latency", "1s"}, "need --tts"},
		{[]string{"analyze", "--measured", "testdata/speak/missing.jsonl"}, "--measured"},
	}
	checkUsage(t, tests)
}

// A speech API has no synthesis context: stream mode is refused, and
// says why.
func TestSpeakStreamModeNeedsContext(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 320) // short tests
	srv := httptest.NewServer(&openai.Mock{Speech: e})
	defer srv.Close()
	code, _, errOut := runCLI(t, "", "speak", "--tts-url", srv.URL, "--tts-mode", "stream")
	if code != exitUsage || !strings.Contains(errOut, "context") {
		t.Errorf("exit %d, %q; want 2 saying stream mode needs a context", code, errOut)
	}
}

// mock --tts serves speech over HTTP, with its latency before the first
// byte.
func TestMockTTSCommand(t *testing.T) {
	t.Parallel()
	streamtest.Espeak(t, 320)
	s := startServer(t, "mock", "--listen", "127.0.0.1:0", "--tts", "--tts-latency", "150ms", "--espeak-wpm", "320")
	defer s.stop(t)
	sent := time.Now()
	u, err := (&openai.Speech{BaseURL: s.url}).Synthesize(context.Background(), "Hello there.")
	if err != nil {
		t.Fatal(err)
	}
	defer u.Close()
	p, err := u.Next()
	if err != nil {
		t.Fatal(err)
	}
	if got := p.At.Sub(sent); got < 150*time.Millisecond || p.Rate != openai.DefaultSpeechRate {
		t.Errorf("first audio after %v at %d Hz, want at least 150ms at %d Hz", got, p.Rate, openai.DefaultSpeechRate)
	}
}

// voice calibrate --tts-url fits the mock's espeak-ng over HTTP: its rate
// as --audio-engine espeak-ng fits it, and at least the latency the mock adds.
func TestVoiceCalibrateSpeechAPI(t *testing.T) {
	t.Parallel()
	e := streamtest.Espeak(t, 0)
	srv := httptest.NewServer(&openai.Mock{Speech: e, SpeechLatency: 100 * time.Millisecond})
	defer srv.Close()
	dir := t.TempDir()
	api, local := filepath.Join(dir, "api.yaml"), filepath.Join(dir, "local.yaml")
	if code, _, errOut := runCLI(t, "", "voice", "calibrate", "--tts-url", srv.URL, "--tts-format", "wav", "--runs", "1", "--pause", "1ms", "-o", api); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	if code, _, errOut := runCLI(t, "", "voice", "calibrate", "--audio-engine", "espeak-ng", "--runs", "1", "-o", local); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	a, l := readAs(t, api, tts.ReadProfile), readAs(t, local, tts.ReadProfile)
	if a.Synth == nil || a.Synth.Mode != tts.ModeRequest || a.Synth.TTFA < 100*time.Millisecond || a.Synth.Continuation < 100*time.Millisecond {
		t.Errorf("speech API profile synth %+v, want request mode with the mock's 100 ms in both latencies", a.Synth)
	}
	// the same espeak-ng speaks the same texts: the same audio, the same fit
	if a.Voice.WPM != l.Voice.WPM || a.Voice.SentencePause != l.Voice.SentencePause {
		t.Errorf("voice over HTTP %+v, espeak-ng's own %+v", a.Voice, l.Voice)
	}
	if code, _, errOut := runCLI(t, "", "voice", "calibrate", "--tts-url", srv.URL, "--espeak-wpm", "200"); code != exitUsage || !strings.Contains(errOut, "espeak-ng") {
		t.Errorf("--speed with --tts-url: exit %d, %s", code, errOut)
	}
}

func absDuration(d time.Duration) time.Duration {
	if d < 0 {
		return -d
	}
	return d
}
