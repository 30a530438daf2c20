package main

import (
	"context"
	"encoding/binary"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/speak"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// soundServer is a PulseAudio daemon of the test's own, with one null
// sink (a sound card that plays into nothing) whose monitor is recorded.
type soundServer struct {
	dir    string
	env    []string
	daemon *exec.Cmd
}

// startSoundServer starts PulseAudio in dir with a null sink at rate, or
// skips the test saying what is missing.
func startSoundServer(t *testing.T, dir string, rate int) *soundServer {
	t.Helper()
	for _, prog := range []string{"pulseaudio", "parec", "pactl", "pkg-config"} {
		if _, err := exec.LookPath(prog); err != nil {
			t.Skipf("%s is not installed (apt-get install pulseaudio pulseaudio-utils libasound2-plugins pkg-config): %v", prog, err)
		}
	}
	if err := exec.Command("pkg-config", "--exists", "alsa").Run(); err != nil {
		t.Skip("ALSA's development files are missing (apt-get install libasound2-dev): the speaker build needs them")
	}
	if _, err := os.Stat("/usr/share/alsa/alsa.conf.d/50-pulseaudio.conf"); err != nil {
		t.Skip("ALSA's PulseAudio plugin is missing (apt-get install libasound2-plugins)")
	}
	socket := filepath.Join(dir, "native")
	s := &soundServer{dir: dir, env: append(os.Environ(), "HOME="+dir, "XDG_RUNTIME_DIR="+dir, "PULSE_SERVER=unix:"+socket)}
	s.daemon = exec.Command("pulseaudio", "-n", "--daemonize=no", "--exit-idle-time=-1", "--disallow-exit", "--use-pid-file=no",
		"--log-target=stderr", "--load=module-native-protocol-unix socket="+socket+" auth-anonymous=1",
		"--load=module-null-sink sink_name=underrun rate="+strconv.Itoa(rate)+" channels=1")
	s.daemon.Env = s.env
	log, err := os.Create(filepath.Join(dir, "pulseaudio.log"))
	if err != nil {
		t.Fatal(err)
	}
	s.daemon.Stdout, s.daemon.Stderr = log, log
	if err := s.daemon.Start(); err != nil {
		t.Skipf("pulseaudio does not start: %v", err)
	}
	t.Cleanup(func() {
		s.daemon.Process.Kill()
		s.daemon.Wait()
		log.Close()
	})
	// ready when it answers on its socket
	deadline := time.Now().Add(20 * time.Second)
	for {
		info := exec.Command("pactl", "info")
		info.Env = s.env
		if err := info.Run(); err == nil {
			return s
		}
		if time.Now().After(deadline) {
			b, _ := os.ReadFile(log.Name())
			t.Skipf("pulseaudio never answered on %s:\n%s", socket, b)
		}
		time.Sleep(20 * time.Millisecond)
	}
}

// record starts recording the null sink's monitor into file, raw 16-bit
// mono at rate; the returned function stops it and returns the samples.
func (s *soundServer) record(t *testing.T, file string, rate int) func() []float32 {
	t.Helper()
	f, err := os.Create(file)
	if err != nil {
		t.Fatal(err)
	}
	rec := exec.Command("parec", "--device=underrun.monitor", "--format=s16le", "--rate="+strconv.Itoa(rate), "--channels=1", "--latency-msec=5")
	rec.Env, rec.Stdout = s.env, f
	if err := rec.Start(); err != nil {
		t.Fatal(err)
	}
	return func() []float32 {
		rec.Process.Signal(os.Interrupt)
		rec.Wait()
		f.Close()
		b, err := os.ReadFile(file)
		if err != nil {
			t.Fatal(err)
		}
		out := make([]float32, len(b)/2)
		for i := range out {
			out[i] = float32(int16(binary.LittleEndian.Uint16(b[2*i:]))) / 32768
		}
		return out
	}
}

// firstSound returns the first sample louder than quiet.
func firstSound(s []float32, quiet float64) int {
	for i, v := range s {
		if math.Abs(float64(v)) > quiet {
			return i
		}
	}
	return len(s)
}

// speakerSetup starts a sound server at rate in a folder of the test's
// (the one environment variable keep names, to look at the files
// afterwards) and builds the speaker binary there; it skips the test when
// the go command is missing.
func speakerSetup(t *testing.T, keep string, rate int) (srv *soundServer, bin, dir string) {
	t.Helper()
	goTool, err := exec.LookPath("go")
	if err != nil {
		t.Skip("go command not found:", err)
	}
	dir = t.TempDir()
	if d := os.Getenv(keep); d != "" {
		dir = d
	}
	srv = startSoundServer(t, dir, rate)
	bin = filepath.Join(dir, "underrun")
	if out, err := exec.Command(goTool, "build", "-tags", "speaker", "-o", bin, ".").CombinedOutput(); err != nil {
		t.Fatalf("go build -tags speaker: %v\n%s", err, out)
	}
	return srv, bin, dir
}

// speakPlay runs the speaker build's speak --play on the stalls scenario
// through the sound server, with args added, and returns its JSON report,
// what stop recorded of the sink once speak ended, and its stderr (a
// verdict's exit 1 is a run; any other failure ends the test).
func (s *soundServer) speakPlay(t *testing.T, bin string, stop func() []float32, args ...string) (stdout, stderr string, recorded []float32) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, append([]string{"speak", "--scenario", "testdata/speak/stalls.yaml", "--espeak-wpm", "320", "--tts-mode", "request",
		"--play", "--report", "json", "--max-tpot=false"}, args...)...)
	cmd.Env = s.env
	var out, errOut strings.Builder
	cmd.Stdout, cmd.Stderr = &out, &errOut
	err := cmd.Run()
	recorded = stop()
	if code := cmd.ProcessState.ExitCode(); code != exitOK && code != exitFail {
		t.Fatalf("speak --play: %v\n%s", err, errOut.String())
	}
	return out.String(), errOut.String(), recorded
}

// The speaker build against a real sound server: PulseAudio with a null
// sink, played into through ALSA's PulseAudio plugin by beep's speaker,
// its monitor recorded. The silence in the recording is the silence the
// player counted, within 10 ms, and what was heard is what the engine
// predicts within the card's buffer. Silence the sound server adds on its
// own (the card ran dry: a busy machine did not feed it in time) is found
// by the recording against what the player gave the card; the test then
// says so and skips, as the recording is not what the player played.
func TestSpeakSpeakerBuild(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the speaker binary and runs a sound server")
	}
	t.Parallel()
	e := streamtest.Espeak(t, 320)
	const rate = 22050 // espeak-ng's: no resampling anywhere
	srv, bin, dir := speakerSetup(t, "UNDERRUN_KEEP_SPEAKER_TEST", rate)
	stop := srv.record(t, filepath.Join(dir, "monitor.raw"), rate)
	wav, rec := filepath.Join(dir, "played.wav"), filepath.Join(dir, "run.jsonl")
	stdout, stderr, recorded := srv.speakPlay(t, bin, stop, "--play-buffer", "50ms", "--match-within", "50ms", "--wav", wav, "--record", rec)
	var got speakJSON
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("%v: %s", err, stdout)
	}
	recording := readAs(t, rec, speak.ReadRecording)
	h := recording.Heard["t1"]
	if !h.Started || len(h.Gaps) == 0 {
		t.Fatalf("heard %+v: want the stalls heard; stderr:\n%s", h, stderr)
	}
	given := readWAV(t, wav)
	reference, bounds := chunkAudio(t, e, recording.Chunks["t1"])
	// the recording and what the player gave the card start at moments of
	// their own, before the turn's first sound: align them by it
	const quiet = 4.0 / 32768
	offset := firstSound(recorded, quiet) - firstSound(given.Samples, quiet)
	from := int(h.FirstSample) + offset
	if from < 0 || from >= len(recorded) {
		t.Fatalf("the recording (%d samples) does not hold the turn (the card's audio starts at %d, offset %d)", len(recorded), h.FirstSample, offset)
	}
	// 1. The recording is what the player gave the card, sample for
	// sample (within the sound server's conversion, two 16-bit steps),
	// but for silence the sound server played on its own where the card
	// ran dry (a busy machine did not feed it in time).
	drops, err := serverSilence(recorded[from:], given.Samples[h.FirstSample:], quiet, 3.0/32768)
	alike := err == nil
	if !alike {
		// a busy machine makes the sound server rewind and refill its
		// buffers; where it did, the recording cannot be set beside what it
		// was given, sample for sample
		t.Logf("the recording cannot be set beside what the player gave the card: %v", err)
	}
	// 2. What the player gave the card holds the gaps it counted: its
	// silence against the audio the synthesizer makes of the chunks, made
	// again here.
	found := exact.detectGaps(given.Samples[h.FirstSample:], reference, bounds, rate)
	t.Logf("heard gaps %+v", h.Gaps)
	t.Logf("silence added to what the card was given %+v", found)
	checkFound(t, found, h, rate, "what the card was given", time.Millisecond)
	var lost time.Duration
	for _, d := range drops {
		lost += absDuration(d[1])
	}
	if len(drops) > 0 {
		t.Logf("the sound server played silence of its own, or skipped audio (negative), in %d places, %v in all: %v", len(drops), lost, drops)
	}
	// the card asks for audio in pulls (25 ms each with a 50 ms buffer):
	// a gap's end is known to a pull, and a late pull moves what follows;
	// the prediction holds within the buffer (--tolerance 50ms)
	for _, turn := range got.Comparison.Turns {
		for _, g := range turn.Gaps {
			if g.Heard != nil && g.Predicted != nil {
				t.Logf("heard %.1f ms for %.1f ms, predicted %.1f ms for %.1f ms (%s)", g.Heard.StartMs, g.Heard.DurationMs, g.Predicted.StartMs, g.Predicted.DurationMs, g.Kind)
			} else {
				t.Logf("gap %s: heard %+v predicted %+v", g.Kind, g.Heard, g.Predicted)
			}
		}
	}
	// 3. Where the card never ran dry, what was heard is what the engine
	// predicts, within the card's buffer; where it did, what follows was
	// played that much later, and the listener heard silence the player
	// did not have to play
	if !alike {
		t.Skipf("the sound server changed the audio on its way (%v): the recording is not what the player gave the card, so it cannot be held against the player's count this time", err)
	}
	if !got.Comparison.Agrees && lost == 0 {
		t.Errorf("the sound card took every sample in time, yet what was heard differs from the prediction beyond the card's 50 ms buffer")
	}
}

// serverSilence compares a recording with what was played into the sound
// server: each sample of the recording is the played one (within close),
// or silence (within quiet) that the server played of its own, or the
// server skipped some of the played samples. It returns those stretches
// ([start in the recording, length: negative for samples skipped], in time
// at 22,050 Hz) and an error where the two cannot be put side by side.
func serverSilence(recording, played []float32, quiet, close float64) ([][2]time.Duration, error) {
	const rate = 22050
	const window = 32        // samples that must match again after a stretch of the server's
	const longest = rate * 2 // the longest stretch looked for
	at := func(n int) time.Duration { return time.Duration(float64(n) * float64(time.Second) / rate) }
	same := func(a, b float32) bool { return math.Abs(float64(a-b)) <= close }
	// matches reports whether the recording from k plays what was played
	// from j, for a window
	matches := func(k, j int) bool {
		for n := range window {
			if k+n >= len(recording) || j+n >= len(played) {
				return k+n >= len(recording) || j+n >= len(played)
			}
			if !same(recording[k+n], played[j+n]) {
				return false
			}
		}
		return true
	}
	var drops [][2]time.Duration
	i, j := 0, 0
	for i < len(recording) && j < len(played) {
		if same(recording[i], played[j]) {
			i++
			j++
			continue
		}
		// the server played something the player did not give (silence of
		// its own), or skipped some of what it was given: find where the
		// two go on alike, the nearest first
		found := false
		for delta := 1; delta <= longest && !found; delta++ {
			switch {
			case i+delta < len(recording) && quietUpTo(recording[i:i+delta], quiet) && matches(i+delta, j):
				drops = append(drops, [2]time.Duration{at(i), at(delta)})
				i += delta
				found = true
			case j+delta < len(played) && matches(i, j+delta):
				drops = append(drops, [2]time.Duration{at(i), -at(delta)}) // skipped: a negative length
				j += delta
				found = true
			}
		}
		if !found {
			return drops, fmt.Errorf("sample %d (%v into the turn's audio) is %v in the recording, %v as played, and the two never go on alike within %v", i, at(i), recording[i], played[j], at(longest))
		}
	}
	return drops, nil
}

// quietUpTo reports whether every sample of s is within quiet of zero.
func quietUpTo(s []float32, quiet float64) bool {
	for _, v := range s {
		if math.Abs(float64(v)) > quiet {
			return false
		}
	}
	return true
}
