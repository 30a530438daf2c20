package main

import (
	"encoding/json"
	"math"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// heard on speak played through a real sound server: PulseAudio's null
// sink, played into by the speaker build, its monitor recorded with
// parec, noise and a level drop added. Every gap the player counted (80
// ms or more) is found within 20 ms of where the recording holds it (and
// of the voice's pause, where the gap fell at punctuation), with speak's
// cause where speak names one, and no voice pause is an underrun.
func TestHeardThroughSoundServer(t *testing.T) {
	if testing.Short() {
		t.Skip("builds the speaker binary and runs a sound server")
	}
	speakHeardSetup(t)
	const rate = 22050
	srv, bin, dir := speakerSetup(t, "UNDERRUN_KEEP_HEARD_TEST", rate)
	stop := srv.record(t, filepath.Join(dir, "monitor.raw"), rate)
	r := heardRun{name: "sound-server", wav: filepath.Join(dir, "played.wav"), rec: filepath.Join(dir, "run.jsonl")}
	stdout, stderr, recorded := srv.speakPlay(t, bin, stop, "--play-buffer", "250ms", "--wav", r.wav, "--record", r.rec)
	h := readTruth(t, &r, stdout)
	if len(r.gaps) == 0 {
		t.Fatalf("speak heard no gap; stderr:\n%s", stderr)
	}
	// where the sound server played silence of its own (the card ran dry
	// on a busy machine), the recording holds gaps the player never
	// counted: then it cannot be held against the player's count
	b, err := os.ReadFile(r.wav)
	if err != nil {
		t.Fatal(err)
	}
	given, err := tts.DecodeWAV(b)
	if err != nil {
		t.Fatal(err)
	}
	const quiet = 4.0 / 32768
	offset := firstSound(recorded, quiet) - firstSound(given.Samples, quiet)
	from := int(h.FirstSample) + offset
	if from < 0 || from >= len(recorded) {
		t.Fatalf("the recording (%d samples) does not hold the turn", len(recorded))
	}
	drops, err := serverSilence(recorded[from:], given.Samples[h.FirstSample:], quiet, 3.0/32768)
	// what the server did after the last gap (and 50 ms past it) moves none
	var lastGap time.Duration
	for _, g := range h.Gaps {
		lastGap = max(lastGap, time.Duration(float64(g.Played+g.Samples)*float64(time.Second)/rate))
	}
	var lost time.Duration
	for _, d := range drops {
		if d[0] < lastGap+50*time.Millisecond {
			lost += absDuration(d[1])
		}
	}
	// a few ms here and there move what follows by as much, and make no
	// gap of their own
	if err != nil || lost > 10*time.Millisecond {
		t.Skipf("the sound server changed the audio on its way (%v; silence of its own or audio skipped in %d places, %v in all: %v): the recording is not what the player played", err, len(drops), lost, drops)
	}
	t.Logf("the sound server played silence of its own, or skipped audio, in %d places (%v before the last gap): %v", len(drops), lost, drops)
	degradeSamples(recorded, -50, 10, 3)
	noisy := filepath.Join(dir, "monitor-noisy.wav")
	writeWAVFile(t, noisy, tts.Audio{Samples: recorded, Rate: rate})
	code, out, errOut := runCLI(t, "", "heard", "--report", "json", "--max-tpot=false", "--tts-mode", "request", noisy, r.rec)
	if code == exitUsage {
		t.Fatalf("heard: exit %d: %s", code, errOut)
	}
	var got heardOut
	if err := json.Unmarshal([]byte(out), &got); err != nil {
		t.Fatalf("%v: %s", err, out)
	}
	// each gap where the recording holds it: the card plays by its own
	// clock, so the player's times since the request drift from it
	for i, g := range h.Gaps {
		r.gaps[i].atMs = float64(from+int(g.Played)) * 1000 / rate
	}
	used := map[int]bool{}
	for _, g := range r.gaps {
		if g.lengthMs < shortestGap {
			continue
		}
		found := false
		for i, s := range got.Recording.Silences {
			u := s.Underrun
			if s.Kind != "underrun" || u == nil || used[i] || math.Abs(*s.GapStartMs-g.atMs) > 20+s.ExpectedMs {
				continue
			}
			used[i], found = true, true
			t.Logf("gap heard at %.1f ms of the recording for %.1f ms (%s); found at %.1f ms for %.1f ms (%s, %s)", g.atMs, g.lengthMs, g.cause, *s.GapStartMs, *s.GapLengthMs, u.Class, u.Cause)
			if g.cause != "" && u.Cause != g.cause { // speak names no cause for a gap the engine did not predict
				t.Errorf("gap at %.1f ms: cause %q, speak's %q", g.atMs, u.Cause, g.cause)
			}
			break
		}
		if !found {
			t.Errorf("the gap the player counted at %.1f ms of the recording for %.1f ms was not found: %s", g.atMs, g.lengthMs, out)
		}
	}
	// silence the server played of its own after the last gap is no
	// voice pause, nor is a gap the player counted under shortestGap
	byServer := func(startMs, lengthMs float64) bool {
		for _, d := range drops {
			at := float64(from)*1000/rate + float64(d[0])/1e6
			if at >= startMs-20 && at <= startMs+lengthMs+20 {
				return true
			}
		}
		return false
	}
	for i, s := range got.Recording.Silences {
		if s.Kind == "underrun" && !used[i] && *s.GapLengthMs >= shortestGap && !byServer(s.StartMs, s.LengthMs) && !r.shortGapIn(s.StartMs, s.LengthMs) {
			t.Errorf("a voice pause taken for an underrun: %.1f ms for %.1f ms at a %s place", s.StartMs, s.LengthMs, s.Place)
		}
	}
}
