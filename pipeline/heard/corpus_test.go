package heard_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"runtime"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/heard"
	"github.com/speech-pipeline/underrun/pipeline/heard/internal/corpus"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts"
)

// The evaluation corpus (package corpus) is set by environment variables,
// so that the same test is CI's quick check and the full evaluation:
//
//	UNDERRUN_HEARD_CORPUS     ci (the default: 1 recording a voice, and 1
//	                          of the held-out kinds), full (8 a voice, and
//	                          4: one of each kind), or a number a voice (and
//	                          half as many of the kinds)
//	UNDERRUN_HEARD_PART       tune (the default), held-out, or all
//	UNDERRUN_HEARD_CONDITION  a regular expression: only the conditions
//	                          whose name it matches
//	UNDERRUN_HEARD_SEED       the seed (default 1)
//	UNDERRUN_HEARD_KEEP       a directory to keep every file, trace and
//	                          truth in
//
// The detector is tuned on the tune part only; the held-out part is for
// reports. -short makes one recording of one voice a part.
const (
	envCorpus    = "UNDERRUN_HEARD_CORPUS"
	envPart      = "UNDERRUN_HEARD_PART"
	envCondition = "UNDERRUN_HEARD_CONDITION"
	envSeed      = "UNDERRUN_HEARD_SEED"
	envKeep      = "UNDERRUN_HEARD_KEEP"
)

// corpusSetup is the corpus the environment asks for.
type corpusSetup struct {
	perVoice, extra int
	parts           []corpus.Part
	seed            uint64
	keep            string
	voices          []corpus.Voice
	conds           []corpus.Condition
}

func newCorpusSetup(t *testing.T) corpusSetup {
	t.Helper()
	s := corpusSetup{perVoice: 1, extra: 1, seed: 1, keep: os.Getenv(envKeep), parts: []corpus.Part{corpus.Tune}}
	switch v := os.Getenv(envCorpus); v {
	case "", "ci":
	case "full":
		s.perVoice, s.extra = 8, len(corpus.Kinds)
	default:
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("%s=%q: want ci, full or a number of recordings a voice", envCorpus, v)
		}
		s.perVoice, s.extra = n, max(1, n/2)
	}
	switch v := os.Getenv(envPart); v {
	case "", "tune":
	case "held-out":
		s.parts = []corpus.Part{corpus.HeldOut}
	case "all":
		s.parts = []corpus.Part{corpus.Tune, corpus.HeldOut}
	default:
		t.Fatalf("%s=%q: want tune, held-out or all", envPart, v)
	}
	if v := os.Getenv(envSeed); v != "" {
		n, err := strconv.ParseUint(v, 10, 64)
		if err != nil {
			t.Fatalf("%s=%q: want a number", envSeed, v)
		}
		s.seed = n
	}
	inPart := func(p corpus.Part) bool { return slices.Contains(s.parts, p) }
	for _, v := range corpus.Voices {
		// a held-out report has every voice: the tuning voices in the
		// held-out conditions
		if inPart(v.Part) || inPart(corpus.HeldOut) {
			s.voices = append(s.voices, v)
		}
	}
	if testing.Short() {
		// one voice of each engine of the part
		var vs []corpus.Voice
		seen := map[string]bool{}
		for _, v := range s.voices {
			if !seen[v.Engine] {
				seen[v.Engine] = true
				vs = append(vs, v)
			}
		}
		s.voices = vs
	}
	if !inPart(corpus.HeldOut) {
		s.extra = 0 // the kinds are all held out
	}
	var only *regexp.Regexp
	if v := os.Getenv(envCondition); v != "" {
		var err error
		if only, err = regexp.Compile(v); err != nil {
			t.Fatalf("%s=%q: %v", envCondition, v, err)
		}
	}
	for _, c := range corpus.Conditions {
		// held-out voices are heard in the tuning conditions too
		if (c.Part == corpus.Tune || inPart(corpus.HeldOut)) && (only == nil || only.MatchString(c.Name)) {
			s.conds = append(s.conds, c)
		}
	}
	if len(s.conds) == 0 {
		t.Fatalf("%s=%q matches no condition of the part", envCondition, os.Getenv(envCondition))
	}
	return s
}

// part is the part recording r in condition c is in: held out when either
// is.
func part(r *corpus.Recording, c corpus.Condition) corpus.Part {
	if r.Part == corpus.HeldOut || c.Part == corpus.HeldOut {
		return corpus.HeldOut
	}
	return corpus.Tune
}

// evalCase is one recording in one condition, decoded as heard reads it.
type evalCase struct {
	rec   *corpus.Recording
	cond  corpus.Condition
	audio tts.Audio
	file  corpus.File
}

// buildCorpus makes the recordings, skipping the test when no voice can be
// spoken and logging the voices that cannot.
func buildCorpus(t *testing.T, s corpusSetup) *corpus.Corpus {
	t.Helper()
	c, err := corpus.Build(context.Background(), corpus.Options{Seed: s.seed, PerVoice: s.perVoice, Extra: s.extra, Voices: s.voices, Dir: t.TempDir()})
	if errors.Is(err, corpus.ErrMissing) {
		t.Skip("no speech engine of the corpus is installed:", err)
	}
	if err != nil {
		t.Fatal(err)
	}
	for _, m := range c.Missing {
		t.Logf("left out: %v", m)
	}
	return c
}

// babbleVoices is the most voices babble is made of.
const babbleVoices = 8

// eachCase calls f with every recording of c in every condition of s that
// is in one of s's parts, several at once; a condition whose program is
// missing is left out, said once.
func eachCase(t *testing.T, s corpusSetup, c *corpus.Corpus, f func(evalCase)) {
	t.Helper()
	var mu sync.Mutex
	said := map[string]bool{}
	sem := make(chan struct{}, runtime.GOMAXPROCS(0))
	var wg sync.WaitGroup
	// babble is made of each voice's first recording
	var firsts []*corpus.Recording
	for _, r := range c.Recordings {
		if !slices.ContainsFunc(firsts, func(f *corpus.Recording) bool { return f.Voice == r.Voice }) {
			firsts = append(firsts, r)
		}
	}
	for i, r := range c.Recordings {
		// the second speaker is the next recording of another voice
		other := c.Recordings[(i+1)%len(c.Recordings)]
		for k := 1; k < len(c.Recordings) && other.Voice == r.Voice; k++ {
			other = c.Recordings[(i+k)%len(c.Recordings)]
		}
		var babble []tts.Audio
		for _, f := range firsts {
			if f.Voice != r.Voice && len(babble) < babbleVoices {
				babble = append(babble, f.Audio)
			}
		}
		for ci, cond := range s.conds {
			if !slices.Contains(s.parts, part(r, cond)) {
				continue
			}
			wg.Add(1)
			sem <- struct{}{}
			go func() {
				defer wg.Done()
				defer func() { <-sem }()
				dir, err := os.MkdirTemp(t.TempDir(), "cond")
				if err != nil {
					t.Error(err)
					return
				}
				defer os.RemoveAll(dir)
				in := corpus.Input{Recording: r, Other: other.Audio, Babble: babble, Seed: s.seed*7919 + uint64(i)*101 + uint64(ci), Dir: dir}
				file, err := cond.Make(context.Background(), in)
				if errors.Is(err, corpus.ErrMissing) {
					mu.Lock()
					if !said[cond.Name] {
						said[cond.Name] = true
						t.Logf("left out: %v", err)
					}
					mu.Unlock()
					return
				}
				if err != nil {
					t.Errorf("%s: %v", r.Name, err)
					return
				}
				a, err := tts.DecodeRecording(file.Bytes, file.Channel)
				if err != nil {
					t.Errorf("%s, %s: heard cannot read it: %v", r.Name, cond.Name, err)
					return
				}
				if s.keep != "" {
					keepCase(t, s.keep, r, cond, file)
				}
				f(evalCase{rec: r, cond: cond, audio: a, file: file})
			}()
		}
	}
	wg.Wait()
}

// engineConfig is the engine configuration heard is given with the trace:
// the defaults, with the recording's chunking where heard has it (a user
// names the framework's), else the default.
func engineConfig(r *corpus.Recording) pipeline.Config {
	cfg := pipeline.DefaultConfig()
	if p, err := tts.ParsePolicy(r.Policy); err == nil {
		cfg.Policy = p
	}
	return cfg
}

// heardMode names heard's runs with the trace and without.
func heardMode(withTrace bool) string {
	if withTrace {
		return "heard with the trace"
	}
	return "heard without a trace"
}

// heardGaps runs heard on recording r's audio a (in a condition), with the
// trace or without, as `underrun heard FILE [TRACE]` runs it.
func heardGaps(r *corpus.Recording, a tts.Audio, withTrace bool) ([]corpus.Found, error) {
	return heardFile(r, a, nil, withTrace)
}

// heardFile runs heard on a case as heardGaps does, on the file f as
// `underrun heard` reads it (decoded as it is read, the channel named,
// with the file's other channels beside it) where f is given.
func heardFile(r *corpus.Recording, a tts.Audio, f *corpus.File, withTrace bool) ([]corpus.Found, error) {
	var turns []*pipeline.Turn
	cfg := pipeline.DefaultConfig()
	if withTrace {
		turns, cfg = r.Turns, engineConfig(r)
	}
	var res *heard.Result
	var err error
	if f != nil {
		var rec *tts.RecordingReader
		if rec, err = tts.OpenRecording(bytes.NewReader(f.Bytes), f.Channel); err != nil {
			return nil, err
		}
		res, err = heard.AnalyzeRecording(context.Background(), rec, rec.Rate(), turns, cfg, heard.Options{AutoOffset: true})
	} else {
		res, err = heard.Analyze(a, turns, cfg, heard.Options{AutoOffset: true})
	}
	if err != nil {
		return nil, err
	}
	var out []corpus.Found
	for _, h := range res.Gaps() {
		out = append(out, corpus.Found{Start: h.GapStart, Length: h.GapLength})
	}
	return out, nil
}

// tally is the scores of an evaluation by voice, condition and mode.
type tally struct {
	mu     sync.Mutex
	scores map[tallyKey]*corpus.Score
}

type tallyKey struct {
	voice, cond, kind string
	part              corpus.Part
	// mode names the detector and whether it had the trace
	mode string
}

func (ta *tally) add(k tallyKey, s corpus.Score) {
	ta.mu.Lock()
	defer ta.mu.Unlock()
	if ta.scores == nil {
		ta.scores = map[tallyKey]*corpus.Score{}
	}
	if ta.scores[k] == nil {
		ta.scores[k] = &corpus.Score{}
	}
	ta.scores[k].Add(s)
}

// sum adds up the scores whose key keep accepts, by the name by gives.
func (ta *tally) sum(keep func(tallyKey) bool, by func(tallyKey) string) (map[string]*corpus.Score, []string) {
	out := map[string]*corpus.Score{}
	var names []string
	for k, s := range ta.scores {
		if !keep(k) {
			continue
		}
		n := by(k)
		if out[n] == nil {
			out[n] = &corpus.Score{}
			names = append(names, n)
		}
		out[n].Add(*s)
	}
	return out, names
}

// order sorts names by their place in want, the others after.
func order(names []string, want []string) []string {
	slices.SortFunc(names, func(a, b string) int {
		ia, ib := slices.Index(want, a), slices.Index(want, b)
		if ia < 0 {
			ia = len(want)
		}
		if ib < 0 {
			ib = len(want)
		}
		if ia != ib {
			return ia - ib
		}
		return strings.Compare(a, b)
	})
	return names
}

func ms(d time.Duration) float64 { return float64(d.Microseconds()) / 1000 }

// scoreHeader and scoreRow are a markdown table's header and row of a
// score.
const scoreHeader = "| gaps | found | precision | recall | starts within 20 ms | start error p50 / p90 ms | length error p50 / p90 ms |"

// A share of nothing (the precision of no gap found, the starts of none
// matched) is shown as "-".
func scoreRow(s *corpus.Score) string {
	share := func(v float64, of int) string {
		if of == 0 {
			return "-"
		}
		return fmt.Sprintf("%.3f", v)
	}
	errs := "- | -"
	if s.Matched > 0 {
		errs = fmt.Sprintf("%.0f / %.0f | %.0f / %.0f", ms(s.StartError(0.5)), ms(s.StartError(0.9)), ms(s.LengthError(0.5)), ms(s.LengthError(0.9)))
	}
	return fmt.Sprintf("| %d | %d | %s | %s | %s | %s |", s.Truth, s.Found, share(s.Precision(), s.Found), share(s.Recall(), s.Truth), share(s.OnTimeShare(), s.Matched), errs)
}

// logTables logs the tables of an evaluation: by voice, by condition (each
// pooled over the other), by place and by length, for each part and mode,
// and every (voice, condition) with verbose.
func logTables(t *testing.T, title string, s corpusSetup, ta *tally, modes []string, verbose bool) {
	t.Helper()
	var voices, conds []string
	for _, v := range corpus.Voices {
		voices = append(voices, v.Label())
	}
	kinds := append([]string{corpus.OneTurn}, corpus.Kinds...)
	for _, c := range corpus.Conditions {
		conds = append(conds, c.Name)
	}
	for _, p := range s.parts {
		for _, mode := range modes {
			inPart := func(k tallyKey) bool { return k.part == p && k.mode == mode }
			t.Logf("%s, %s part, %s (seed %d, %d recordings a voice):", title, p, mode, s.seed, s.perVoice)
			for _, view := range []struct {
				name  string
				by    func(tallyKey) string
				order []string
			}{
				{"voice", func(k tallyKey) string { return k.voice }, voices},
				{"condition", func(k tallyKey) string { return k.cond }, conds},
				{"kind", func(k tallyKey) string { return k.kind }, kinds},
			} {
				sums, names := ta.sum(inPart, view.by)
				t.Logf("")
				t.Logf("| %s %s", view.name, scoreHeader)
				t.Logf("|---|---|---|---|---|---|---|---|")
				all := &corpus.Score{}
				for _, n := range order(names, view.order) {
					t.Logf("| %s %s", n, scoreRow(sums[n]))
					all.Add(*sums[n])
				}
				t.Logf("| all %s", scoreRow(all))
			}
			sums, _ := ta.sum(inPart, func(tallyKey) string { return "" })
			if all := sums[""]; all != nil {
				var places, lengths []string
				for _, pl := range corpus.Places {
					if v, ok := all.ByPlace[pl]; ok {
						places = append(places, fmt.Sprintf("%s %d of %d", pl, v[1], v[0]))
					}
				}
				for k, v := range all.ByLength {
					lengths = append(lengths, fmt.Sprintf("%s %d of %d", k, v[1], v[0]))
				}
				slices.Sort(lengths)
				t.Logf("")
				t.Logf("found by place: %s", strings.Join(places, ", "))
				t.Logf("found by length: %s", strings.Join(lengths, ", "))
			}
			if verbose {
				sums, names := ta.sum(inPart, func(k tallyKey) string { return k.voice + " | " + k.cond })
				slices.Sort(names)
				t.Logf("")
				t.Logf("| voice | condition %s", scoreHeader)
				t.Logf("|---|---|---|---|---|---|---|---|---|")
				for _, n := range names {
					t.Logf("| %s %s", n, scoreRow(sums[n]))
				}
			}
			t.Logf("")
		}
	}
}

// keepCase writes a case's file, trace and truth into dir, so that
// `underrun heard` can be run on it by hand.
func keepCase(t *testing.T, dir string, r *corpus.Recording, cond corpus.Condition, f corpus.File) {
	if err := os.MkdirAll(dir, 0o755); err != nil {
		t.Error(err)
		return
	}
	slug := strings.NewReplacer(" ", "-", ",", "", "/", "-", ".", "_").Replace(cond.Name)
	if err := os.WriteFile(filepath.Join(dir, r.Name+"."+slug+"."+f.Ext), f.Bytes, 0o644); err != nil {
		t.Error(err)
	}
	var b bytes.Buffer
	w := trace.NewWriter(&b, "heard-corpus")
	for _, turn := range r.Turns {
		if err := w.BeginTurn(turn); err != nil {
			t.Error(err)
		}
		for _, c := range turn.Chunks {
			if err := w.WriteChunk(turn.ID, c); err != nil {
				t.Error(err)
			}
		}
		if err := w.EndTurn(turn); err != nil {
			t.Error(err)
		}
	}
	truth, _ := json.MarshalIndent(struct {
		Spec  corpus.Spec
		Gaps  []corpus.Gap
		Plays []corpus.Play
		Cut   int `json:",omitempty"`
	}{r.Spec, r.Gaps, r.Plays, r.Cut}, "", "  ")
	for name, data := range map[string][]byte{r.Name + ".trace.jsonl": b.Bytes(), r.Name + ".truth.json": truth} {
		if err := os.WriteFile(filepath.Join(dir, name), data, 0o644); err != nil {
			t.Error(err)
		}
	}
}

// TestHeardCorpus runs heard on the corpus, with each recording's trace
// and without, and logs precision, recall and start and length error by
// voice and by condition (every pair with -v and UNDERRUN_HEARD_CORPUS not
// ci). It asserts only that heard reads and analyzes every recording: the
// figures are the yardstick, the targets are issue 47's.
//
//	UNDERRUN_HEARD_CORPUS=full go test -count=1 -run TestHeardCorpus -v ./pipeline/heard
func TestHeardCorpus(t *testing.T) {
	if testkit.Race {
		t.Skip("the evaluation takes minutes under the race detector; .ci/run runs it without")
	}
	s := newCorpusSetup(t)
	start := time.Now()
	c := buildCorpus(t, s)
	built := time.Since(start)
	var ta tally
	var n sync.Map
	eachCase(t, s, c, func(ec evalCase) {
		for _, withTrace := range []bool{true, false} {
			found, err := heardFile(ec.rec, ec.audio, &ec.file, withTrace)
			if err != nil {
				t.Errorf("%s, %s (trace %v): %v", ec.rec.Name, ec.cond.Name, withTrace, err)
				continue
			}
			ta.add(tallyKey{voice: ec.rec.Voice.Label(), cond: ec.cond.Name, kind: ec.rec.Kind, part: part(ec.rec, ec.cond), mode: heardMode(withTrace)}, corpus.Match(ec.rec.Gaps, found))
		}
		n.Store(ec.rec.Name+"|"+ec.cond.Name, true)
	})
	count := 0
	n.Range(func(any, any) bool { count++; return true })
	if count == 0 {
		t.Fatal("no recording was evaluated")
	}
	t.Logf("%d recordings made in %v; %d cases (a recording in a condition) heard in %v", len(c.Recordings), built.Round(time.Millisecond), count, (time.Since(start) - built).Round(time.Millisecond))
	logTables(t, "heard", s, &ta, []string{heardMode(true), heardMode(false)}, s.perVoice > 1)
}
