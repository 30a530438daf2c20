package heard_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"math"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline/heard/internal/corpus"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/tts"
)

// sileroPython is the virtual environment's Python that .ci/run installs
// silero-vad into (silero/requirements.txt).
const sileroPython = "silero/.venv/bin/python"

// sileroParams are the two settings of Silero VAD the evaluation runs:
// its defaults (get_speech_timestamps: threshold 0.5, speech of at least
// 250 ms, silence of at least 100 ms, speech padded by 30 ms a side), and
// its boundaries as they are (no padding, silences of 30 ms or more, as
// heard's detector reports them).
var sileroParams = []struct {
	name   string
	params map[string]any
}{
	{"Silero VAD defaults", map[string]any{}},
	{"Silero VAD unpadded, 30 ms silences", map[string]any{"speech_pad_ms": 0, "min_silence_duration_ms": 30, "min_speech_duration_ms": 30}},
}

// silero runs Silero VAD on the WAV files (16 kHz mono 16-bit) with
// params, and returns each file's speech segments in samples, and the
// versions it ran.
func silero(ctx context.Context, files []string, params map[string]any) (map[string][][2]int, map[string]string, error) {
	req, err := json.Marshal(map[string]any{"files": files, "params": params})
	if err != nil {
		return nil, nil, err
	}
	cmd := exec.CommandContext(ctx, sileroPython, filepath.Join("silero", "silero_segments.py"))
	cmd.Stdin = bytes.NewReader(req)
	var errOut bytes.Buffer
	cmd.Stderr = &errOut
	out, err := cmd.Output()
	if err != nil {
		return nil, nil, fmt.Errorf("silero_segments.py: %w: %s", err, errOut.String())
	}
	segs := map[string][][2]int{}
	versions := map[string]string{}
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(nil, 1<<24)
	for sc.Scan() {
		var line struct {
			File   string   `json:"file"`
			Speech [][2]int `json:"speech"`
			Silero string   `json:"silero_vad"`
			ORT    string   `json:"onnxruntime"`
		}
		if err := json.Unmarshal(sc.Bytes(), &line); err != nil {
			return nil, nil, fmt.Errorf("silero_segments.py wrote %q: %w", sc.Text(), err)
		}
		if line.Silero != "" {
			versions["silero-vad"], versions["onnxruntime"] = line.Silero, line.ORT
			continue
		}
		segs[line.File] = line.Speech
	}
	if len(segs) != len(files) {
		return nil, nil, fmt.Errorf("silero_segments.py: %d files segmented of %d", len(segs), len(files))
	}
	return segs, versions, sc.Err()
}

// speechMask renders speech segments (in samples at rate, n samples in
// all) as sound where they are and digital silence between: Silero's
// boundaries in a signal heard's level detector finds exactly (a 440 Hz
// tone, in the band of speech heard's detector analyzes).
func speechMask(segs [][2]int, n, rate int) tts.Audio {
	s := make([]float32, n)
	for _, seg := range segs {
		for i := max(0, seg[0]); i < min(n, seg[1]); i++ {
			s[i] = float32(0.1 * math.Sin(2*math.Pi*440*float64(i)/float64(rate)))
		}
	}
	return tts.Audio{Samples: s, Rate: rate}
}

// TestSileroCorpus measures Silero VAD's speech boundaries against heard's
// level detector on the corpus (as TestHeardCorpus, the same environment
// variables): each recording in each condition, read as heard reads it,
// at 16 kHz, is segmented by Silero VAD (silero/silero_segments.py, the
// package's own code and model), and its speech segments, rendered as a
// signal with digital silence between them, go through heard with and
// without the trace in place of the recording: the same classifier on
// Silero's silences. It skips where the virtual environment is missing.
//
//	UNDERRUN_HEARD_CORPUS=full go test -count=1 -run TestSileroCorpus -v ./pipeline/heard
func TestSileroCorpus(t *testing.T) {
	if testkit.Race {
		t.Skip("the evaluation takes minutes under the race detector; .ci/run runs it without")
	}
	if _, err := os.Stat(sileroPython); err != nil {
		t.Skipf("Silero VAD's virtual environment is missing (%v): python3 -m venv pipeline/heard/silero/.venv && pipeline/heard/silero/.venv/bin/pip install --require-hashes --no-deps -r pipeline/heard/silero/requirements.txt (.ci/run does)", err)
	}
	if _, err := exec.LookPath(corpus.Sox); err != nil {
		t.Skip("sox is not installed (apt-get install sox): Silero VAD reads 16 kHz:", err)
	}
	s := newCorpusSetup(t)
	c := buildCorpus(t, s)
	dir := t.TempDir()
	type item struct {
		rec  *corpus.Recording
		cond corpus.Condition
		n    int // samples at 16 kHz
	}
	var mu sync.Mutex
	items := map[string]item{}
	eachCase(t, s, c, func(ec evalCase) {
		wdir, err := os.MkdirTemp(dir, "rate")
		if err != nil {
			t.Error(err)
			return
		}
		defer os.RemoveAll(wdir)
		a, err := corpus.Resample(context.Background(), ec.audio, 16000, wdir)
		if err == nil {
			var b []byte
			if b, err = corpus.WAV([][]float32{a.Samples}, a.Rate, corpus.PCM16); err == nil {
				mu.Lock()
				name := filepath.Join(dir, fmt.Sprintf("case%05d.wav", len(items)))
				items[name] = item{rec: ec.rec, cond: ec.cond, n: len(a.Samples)}
				mu.Unlock()
				err = os.WriteFile(name, b, 0o644)
			}
		}
		if err != nil {
			t.Errorf("%s, %s: %v", ec.rec.Name, ec.cond.Name, err)
		}
	})
	if len(items) == 0 {
		t.Fatal("no recording was evaluated")
	}
	files := make([]string, 0, len(items))
	for f := range items {
		files = append(files, f)
	}
	var ta tally
	var modes []string
	for _, sp := range sileroParams {
		modes = append(modes, sp.name+", "+heardMode(true), sp.name+", "+heardMode(false))
	}
	for _, sp := range sileroParams {
		segs, versions, err := silero(context.Background(), files, sp.params)
		if err != nil {
			t.Fatal(err)
		}
		t.Logf("%s: silero-vad %s, onnxruntime %s, parameters %v", sp.name, versions["silero-vad"], versions["onnxruntime"], sp.params)
		for _, withTrace := range []bool{true, false} {
			mode := sp.name + ", " + heardMode(withTrace)
			for f, it := range items {
				found, err := heardGaps(it.rec, speechMask(segs[f], it.n, 16000), withTrace)
				if err != nil {
					t.Errorf("%s, %s: %v", it.rec.Name, it.cond.Name, err)
					continue
				}
				ta.add(tallyKey{voice: it.rec.Voice.Label(), cond: it.cond.Name, kind: it.rec.Kind, part: part(it.rec, it.cond), mode: mode}, corpus.Match(it.rec.Gaps, found))
			}
		}
	}
	logTables(t, "Silero VAD's silences through heard", s, &ta, modes, s.perVoice > 1)
}
