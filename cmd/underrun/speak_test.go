package main

import (
	"context"
	"encoding/json"
	"math"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/tts"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// speakJSON is what the tests read of speak's JSON report.
type speakJSON struct {
	Heard struct {
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
				Kind      string `json:"kind"`
				Heard     *gapJ  `json:"heard"`
				Predicted *gapJ  `json:"predicted"`
			} `json:"gaps"`
		} `json:"turns"`
	} `json:"comparison"`
}

// silentRuns returns the runs of silence in samples, at least min long:
// [start, end) sample pairs. A sample is silent when its magnitude is at
// most one 16-bit step.
func silentRuns(s []float32, min int) [][2]int {
	const quiet = 1.0 / 32768
	var runs [][2]int
	for i := 0; i < len(s); {
		if math.Abs(float64(s[i])) > quiet {
			i++
			continue
		}
		j := i
		for j < len(s) && math.Abs(float64(s[j])) <= quiet {
			j++
		}
		if j-i >= min {
			runs = append(runs, [2]int{i, j})
		}
		i = j
	}
	return runs
}

// detectGaps finds, by the energy of what was played, the silence the
// player added to the audio the synthesizer made: played, from the turn's
// first audio, is the reference (the chunks' audio one after another,
// chunk i from sample bounds[i]) with silence inserted, and a silent run
// of played longer than the run (if any) at the same place in the
// reference holds an inserted gap. The gap lies where a chunk begins
// inside the run (the player waited for that chunk), else at the run's
// start (it waited inside a chunk). The silence after the reference's last
// sound is the end of the speech, not a gap.
func detectGaps(played, reference []float32, bounds []int, rate int) (gaps [][2]time.Duration) {
	min := rate / 1000 // gaps of at least 1 ms
	pr, rr := silentRuns(played, 1), silentRuns(reference, 1)
	at := func(n int) time.Duration { return time.Duration(float64(n) * float64(time.Second) / float64(rate)) }
	inserted := 0 // samples of played that are not in the reference, so far
	k := 0
	for _, run := range pr {
		ref := run[0] - inserted // where the run starts in the reference
		for k < len(rr) && rr[k][1] <= ref {
			k++
		}
		refLen := 0
		if k < len(rr) && rr[k][0] <= ref {
			refLen = rr[k][1] - ref
		}
		extra := (run[1] - run[0]) - refLen
		if extra <= 0 {
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
			gaps = append(gaps, [2]time.Duration{at(run[0] + into), at(extra)})
		}
		inserted += extra
	}
	return gaps
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
		"--wav-out", wav, "--record", rec, "-o", "json", "--check", "--max-tpot=false")
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
	if len(heard) < 2 {
		t.Fatalf("%d gaps, want one at each stall at least; stderr:\n%s", len(heard), errOut)
	}
	for _, g := range heard {
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
	if code != exitFail || !got.Comparison.Agrees {
		// the stalls interrupt (exit 1) and --check passes
		t.Errorf("exit %d, agrees %v; want 1 (an interruption was heard), agreeing", code, got.Comparison.Agrees)
	}

	// the independent check: the energy of the WAV against the audio the
	// synthesizer makes of the recorded chunks, made again here
	f, err := os.Open(rec)
	if err != nil {
		t.Fatal(err)
	}
	recording, err := speak.ReadRecording(f, rec)
	f.Close()
	if err != nil {
		t.Fatal(err)
	}
	var reference []float32
	var bounds []int
	for _, c := range recording.Chunks["r1"] {
		a, err := e.Engine.Synthesize(context.Background(), c.Text)
		if err != nil {
			t.Fatal(err)
		}
		bounds = append(bounds, len(reference))
		reference = append(reference, a.Samples...)
	}
	b, err := os.ReadFile(wav)
	if err != nil {
		t.Fatal(err)
	}
	played, err := tts.DecodeWAV(b)
	if err != nil {
		t.Fatal(err)
	}
	h := recording.Heard["r1"]
	// the turn's audio starts in the WAV where the player says it played
	// its first sample
	found := detectGaps(played.Samples[h.FirstSample:], reference, bounds, played.Rate)
	t.Logf("heard gaps %+v; silence found in the WAV %v", h.Gaps, found)
	// The WAV is timed from the turn's first audio, the player's gaps from
	// the turn's beginning. Gaps that fall in one stretch of silence (one
	// ended by the first samples of a piece, which are silent, the next
	// begun before the piece's sound) are one silence to the ear and to
	// the detector: their lengths add up.
	used := make([]bool, len(h.Gaps))
	for _, f := range found {
		start, end := f[0]+h.Start, f[0]+f[1]+h.Start
		var sum time.Duration
		first := time.Duration(-1)
		for i, g := range h.Gaps {
			if g.Start >= start-10*time.Millisecond && g.Start < end && !used[i] {
				used[i] = true
				sum += g.Duration
				if first < 0 {
					first = g.Start
				}
			}
		}
		switch {
		case first < 0:
			t.Errorf("silence of %v at %v in the WAV that the player did not count", f[1], start)
		case absDuration(first-start) > 10*time.Millisecond || absDuration(sum-f[1]) > 10*time.Millisecond:
			t.Errorf("silence of %v at %v in the WAV; the player counted %v from %v", f[1], start, sum, first)
		}
	}
	for i, g := range h.Gaps {
		if !used[i] && g.Duration >= time.Millisecond {
			t.Errorf("the player counted %v at %v; the WAV has no silence there", g.Duration, g.Start)
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
	code, out, errOut := runCLI(t, "", "speak", "--scenario", "testdata/speak/late-end.yaml", "--tts-mode", "stream", "--speed", "320",
		"--record", rec, "-o", "json", "--check", "--max-tpot=false")
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
	var predicted []*gapJ
	for _, g := range got.Comparison.Turns[0].Gaps {
		predicted = append(predicted, g.Predicted)
	}
	code, out, errOut = runCLI(t, "", "analyze", "--measured", rec, "--tts-mode", "stream", "-o", "json", "--per-turn", rec)
	if code == exitUsage {
		t.Fatalf("analyze --measured: exit %d: %s", code, errOut)
	}
	var report struct {
		List []struct {
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
	tests := []struct {
		args []string
		has  string
	}{
		{[]string{"speak", "--scenario", "default", "x.jsonl"}, "one source"},
		{[]string{"speak", "--url", "http://127.0.0.1:1"}, "--model"},
		{[]string{"speak", "--tts-voice", "alloy"}, "--tts-url"},
		{[]string{"speak", "--tts-url", "ftp://x"}, "--tts-url"},
		{[]string{"speak", "--tts-url", "http://127.0.0.1:1", "--tts-format", "mp3"}, "pcm or wav"},
		{[]string{"speak", "--tolerance", "0"}, "--tolerance"},
		{[]string{"speak", "--chunking", "nonsense"}, "--chunking"},
		{[]string{"mock", "--tts-latency", "1s"}, "need --tts"},
		{[]string{"analyze", "--measured", "testdata/speak/missing.jsonl"}, "--measured"},
	}
	for _, tt := range tests {
		code, _, errOut := runCLI(t, "", tt.args...)
		if code != exitUsage || !strings.Contains(errOut, tt.has) {
			t.Errorf("%v: exit %d, %q; want %d mentioning %q", tt.args, code, errOut, exitUsage, tt.has)
		}
	}
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
	s := startServer(t, "mock", "--listen", "127.0.0.1:0", "--tts", "--tts-latency", "150ms", "--speed", "320")
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
// as --engine espeak-ng fits it, and at least the latency the mock adds.
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
	if code, _, errOut := runCLI(t, "", "voice", "calibrate", "--engine", "espeak-ng", "--runs", "1", "-o", local); code != exitOK {
		t.Fatalf("exit %d: %s", code, errOut)
	}
	read := func(path string) tts.Profile {
		f, err := os.Open(path)
		if err != nil {
			t.Fatal(err)
		}
		defer f.Close()
		p, err := tts.ReadProfile(f, path)
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	a, l := read(api), read(local)
	if a.Synth == nil || a.Synth.Mode != tts.ModeRequest || a.Synth.TTFA < 100*time.Millisecond || a.Synth.Continuation < 100*time.Millisecond {
		t.Errorf("speech API profile synth %+v, want request mode with the mock's 100 ms in both latencies", a.Synth)
	}
	// the same espeak-ng speaks the same texts: the same audio, the same fit
	if a.Voice.WPM != l.Voice.WPM || a.Voice.SentencePause != l.Voice.SentencePause {
		t.Errorf("voice over HTTP %+v, espeak-ng's own %+v", a.Voice, l.Voice)
	}
	if code, _, errOut := runCLI(t, "", "voice", "calibrate", "--tts-url", srv.URL, "--speed", "200"); code != exitUsage || !strings.Contains(errOut, "espeak-ng") {
		t.Errorf("--speed with --tts-url: exit %d, %s", code, errOut)
	}
}
