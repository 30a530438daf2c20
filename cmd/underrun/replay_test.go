package main

import (
	"encoding/binary"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/scenarios"
	"github.com/speech-pipeline/underrun/tts"
)

// defaultTrace writes the built-in default turn as a native trace.
func defaultTrace(t *testing.T) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "default.jsonl")
	f, err := os.Create(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := trace.NewWriter(f, "test").WriteTurn(scenarios.DefaultTurn()); err != nil {
		t.Fatal(err)
	}
	if err := f.Close(); err != nil {
		t.Fatal(err)
	}
	return path
}

func TestReplayMatchesAnalyze(t *testing.T) {
	t.Parallel()
	path := defaultTrace(t)
	code, live, errOut := runCLI(t, "", "replay", "--speed", "25", "--warn-tolerance", "100ms", "--report", "json", path)
	if code != exitFail {
		t.Fatalf("replay: exit %d, want %d; stderr %s", code, exitFail, errOut)
	}
	code, offline, errOut2 := runCLI(t, "", "analyze", "--report", "json", path)
	if code != exitFail {
		t.Fatalf("analyze: exit %d; stderr %s", code, errOut2)
	}
	var a, b map[string]any
	if err := json.Unmarshal([]byte(live), &a); err != nil {
		t.Fatalf("replay JSON: %v\n%s", err, live)
	}
	if err := json.Unmarshal([]byte(offline), &b); err != nil {
		t.Fatal(err)
	}
	ja, _ := json.Marshal(a)
	jb, _ := json.Marshal(b)
	if string(ja) != string(jb) {
		t.Errorf("replay report differs from analyze:\n%s\n%s", ja, jb)
	}
	for _, want := range []string{"replaying 1 turn", "stall warning", "underrun started", "underrun: ", "turn ended (ok)"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("live output (stderr with --report json) lacks %q:\n%s", want, errOut)
		}
	}
	// the drain is printed before the complete underrun
	if strings.Index(errOut, "underrun started") > strings.Index(errOut, "underrun: ") {
		t.Errorf("complete underrun printed before its start:\n%s", errOut)
	}
}

// TestReplayToolCall: a trace's tool call replays as one, its silence
// printed as the tool's and the report the same as analyze's.
func TestReplayToolCall(t *testing.T) {
	t.Parallel()
	const path = "../../pipeline/trace/testdata/native/tool-call.jsonl"
	code, live, errOut := runCLI(t, "", "replay", "--speed", "20", "--report", "json", path)
	if code != exitOK {
		t.Fatalf("replay: exit %d; stderr %s", code, errOut)
	}
	_, offline, _ := runCLI(t, "", "analyze", "--report", "json", path)
	if live != offline {
		t.Errorf("replay report differs from analyze:\n%s\n%s", live, offline)
	}
	for _, want := range []string{"while a tool call runs", "tool-call silence: 2612.1 ms before token 4 (no underrun)",
		"0 interruptions, 0 glitches, 0 ms of silence; 1 tool-call silence, 2612 ms"} {
		if !strings.Contains(errOut, want) {
			t.Errorf("live output lacks %q:\n%s", want, errOut)
		}
	}
}

func TestReplayUsage(t *testing.T) {
	t.Parallel()
	path := defaultTrace(t)
	cases := []usageCase{
		{[]string{"replay", "--speed", "0", path}, "--speed"},
		{[]string{"replay", "--warn-tolerance", "-1s", path}, "--warn-tolerance"},
		{[]string{"replay", "/nonexistent/trace.jsonl"}, "no such file"},
		{[]string{"replay", "--audio-engine", "synthetic", path}, "--audio-engine needs"},
	}
	if openSpeaker == nil {
		cases = append(cases, usageCase{[]string{"replay", "--play", path}, "-tags speaker"})
	}
	checkUsage(t, cases)
	code, _, errOut := runCLI(t, "", "replay")
	if code != exitUsage {
		t.Errorf("replay of empty stdin: exit %d (%s)", code, errOut)
	}
}

// wavInfo reads a WAV header: sample rate and number of samples.
func wavInfo(t *testing.T, path string) (rate, samples int) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if len(b) < 44 || string(b[:4]) != "RIFF" || string(b[8:12]) != "WAVE" {
		t.Fatalf("%s is not a WAV file", path)
	}
	return int(binary.LittleEndian.Uint32(b[24:])), int(binary.LittleEndian.Uint32(b[40:])) / 2
}

func TestWavSink(t *testing.T) {
	t.Parallel()
	path := defaultTrace(t)
	dir := t.TempDir()
	out := filepath.Join(dir, "default.wav")
	code, _, errOut := runCLI(t, "", "analyze", "--wav", out, "--mark-gaps", "--audio-engine", "synthetic", path)
	if code != exitFail {
		t.Fatalf("exit %d; stderr %s", code, errOut)
	}
	if !strings.Contains(errOut, "NOT speech") || !strings.Contains(errOut, "1 underrun (1 interruption, ") {
		t.Errorf("stderr should say what was written and that it is not speech:\n%s", errOut)
	}
	rate, n := wavInfo(t, out)
	if rate != tts.DefaultSampleRate || n < rate*20 {
		t.Errorf("WAV: %d samples at %d Hz", n, rate)
	}
	// the replay writes the same file
	out2 := filepath.Join(dir, "replay.wav")
	code, _, errOut = runCLI(t, "", "replay", "--speed", "25", "--wav", out2, "--mark-gaps", "--audio-engine", "synthetic", path)
	if code != exitFail {
		t.Fatalf("replay --wav: exit %d; stderr %s", code, errOut)
	}
	a, _ := os.ReadFile(out)
	b, _ := os.ReadFile(out2)
	if string(a) != string(b) {
		t.Error("replay --wav and analyze --wav wrote different audio")
	}
	checkUsage(t, []usageCase{
		{[]string{"analyze", "--mark-gaps", path}, "--mark-gaps needs --wav"},
		{[]string{"analyze", "--turn", "x", path}, "--turn needs --wav"},
		{[]string{"analyze", "--wav", filepath.Join(dir, "x.wav"), "--turn", "nope", "--audio-engine", "synthetic", path}, `no turn "nope"`},
		{[]string{"analyze", "--wav", filepath.Join(dir, "y.wav"), "--audio-engine", "festival", path}, "unknown engine"},
		{[]string{"analyze", "--wav", filepath.Join(dir, "no-such-dir", "z.wav"), "--audio-engine", "synthetic", path}, "--wav"},
	})
}

func TestWavEspeak(t *testing.T) {
	t.Parallel()
	if _, err := exec.LookPath(tts.EspeakProgram); err != nil {
		t.Skipf("espeak-ng is not installed (%v): skipping", err)
	}
	path := defaultTrace(t)
	out := filepath.Join(t.TempDir(), "speech.wav")
	code, stdout, errOut := runCLI(t, "", "analyze", "--wav", out, "--audio-engine", "espeak-ng", "--report", "json", path)
	if code != exitFail && code != exitOK {
		t.Fatalf("exit %d; stderr %s", code, errOut)
	}
	if !strings.Contains(errOut, "spoken by espeak-ng") || !strings.Contains(errOut, "measured durations replace") {
		t.Errorf("stderr should say espeak-ng spoke and timed the chunks:\n%s", errOut)
	}
	var r struct {
		SpeechMs float64 `json:"speech_ms"`
	}
	if err := json.Unmarshal([]byte(stdout), &r); err != nil {
		t.Fatal(err)
	}
	rate, n := wavInfo(t, out)
	// the WAV holds the whole speech (plus start-up and gaps)
	if secs := float64(n) / float64(rate); secs*1000 < r.SpeechMs {
		t.Errorf("WAV of %.2f s holds less than the %.0f ms of speech", secs, r.SpeechMs)
	}
}

func TestVoiceCalibrate(t *testing.T) {
	t.Parallel()
	code, _, errOut := runCLI(t, "", "voice", "calibrate", "--audio-engine", "festival")
	if code != exitUsage || !strings.Contains(errOut, "--audio-engine: can calibrate") {
		t.Errorf("unknown engine: exit %d, %s", code, errOut)
	}
	bad := filepath.Join(t.TempDir(), "bad.yaml")
	os.WriteFile(bad, []byte("format: underrun-voice\nversion: 1\nvoice:\n  wpm: 0\n"), 0o644)
	code, _, errOut = runCLI(t, "", "--voice", bad)
	if code != exitUsage || !strings.Contains(errOut, "bad.yaml") {
		t.Errorf("invalid profile: exit %d, %s", code, errOut)
	}
	if _, err := exec.LookPath(tts.EspeakProgram); err != nil {
		t.Skipf("espeak-ng is not installed (%v): skipping the calibration run", err)
	}
	prof := filepath.Join(t.TempDir(), "espeak.yaml")
	code, _, errOut = runCLI(t, "", "voice", "calibrate", "--runs", "1", "-o", prof)
	if code != exitOK {
		t.Fatalf("calibrate: exit %d; %s", code, errOut)
	}
	for _, want := range []string{"words per minute", "sentence pause", "real-time factor", "wrote " + prof} {
		if !strings.Contains(errOut, want) {
			t.Errorf("summary lacks %q:\n%s", want, errOut)
		}
	}
	p := readAs(t, prof, tts.ReadProfile)
	code, out, errOut := runCLI(t, "", "--voice", prof, "--rtf", "0.25", "--report", "json")
	if code == exitUsage {
		t.Fatalf("--voice: exit %d; %s", code, errOut)
	}
	var r struct {
		Config struct {
			WPM float64 `json:"wpm"`
			RTF float64 `json:"rtf"`
		} `json:"config"`
	}
	if err := json.Unmarshal([]byte(out), &r); err != nil {
		t.Fatal(err)
	}
	if r.Config.WPM != p.Voice.WPM || r.Config.RTF != 0.25 {
		t.Errorf("report runs at %v wpm, RTF %v; want the profile's %v wpm and the flag's RTF 0.25", r.Config.WPM, r.Config.RTF, p.Voice.WPM)
	}
}
