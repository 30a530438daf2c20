package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"regexp"
	"slices"
	"strconv"
	"time"

	"github.com/rs/zerolog"
	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/cmd/underrun/internal/outfile"
	"github.com/speech-pipeline/underrun/pipeline"
)

// turnSink receives every turn a command plays, with its finished playout,
// and writes something from them (a WAV file, a plot). The playout is
// reused for the next turn: a sink copies what it keeps. Close runs once,
// after the last turn, before the report is printed; Abort, instead of
// Close, after an error: it leaves the sink's file as it was.
type turnSink interface {
	Add(t *pipeline.Turn, p *pipeline.Playout) error
	Close() error
	Abort()
}

// sinkFactory binds a sink's flags on a command's flag set and returns a
// constructor that makes the sink when its flags ask for one (nil sink,
// nil error when they don't); f.run, read when the sink is made, says
// what the run is.
type sinkFactory func(fs *pflag.FlagSet, f *reportFlags) func(e *env, cfg pipeline.Config) (turnSink, error)

// sinkFactories are registered by the files that define sinks (init).
var sinkFactories []sinkFactory

// configHook binds flags that change the engine configuration itself
// (--audio-engine: a real synthesizer's durations) and returns the
// function that applies them before the session plays anything.
type configHook func(fs *pflag.FlagSet) func(e *env, cfg *pipeline.Config) error

// configHooks are registered by the files that define them (init).
var configHooks []configHook

// reportFlags are the output flags of every command that reports on
// played turns (analyze, sim, replay).
type reportFlags struct {
	output  string
	perTurn bool
	events  string
	tpotSLO time.Duration
	ttftSLO time.Duration
	invert  bool
	list    int
	chunks  bool
	sinks   []func(e *env, cfg pipeline.Config) (turnSink, error)
	hooks   []func(e *env, cfg *pipeline.Config) error
	// live marks a command that runs until stopped (proxy): its event log
	// is a recording, written in place as it goes (see outputs.go).
	live bool
	// force is --force: an existing non-empty event log (and the
	// command's other recordings) may be replaced.
	force bool
	// goodput are the --goodput SLO pairs, slos what they say.
	goodput    []string
	goodputMin float64
	slos       []pipeline.SLO
	// timing says whose timing the gaps follow, where the engine's
	// configuration cannot tell (a real player, a recording).
	timing pipeline.GapTiming
	// run says what the run is, for the sinks that tell a backend (OTLP)
	run runInfo
}

// runInfo is what a command tells the sinks about its run.
type runInfo struct {
	// command names it (default: the flag set's name)
	command string
	// live runs until stopped and must never wait on a sink (proxy,
	// speak); the others are offline and deliver everything
	live bool
	// llm is the server the command called itself (capture, proxy, speak
	// --url)
	llm string
	// speed and origin: turns played speed times as fast as recorded
	// from origin on (replay --speed), their starts on that faster clock
	speed  float64
	origin time.Time
}

func (f *reportFlags) bind(fs *pflag.FlagSet) {
	fs.StringVar(&f.output, "report", "text", "the report's `FORMAT`: text or json")
	fs.BoolVar(&f.perTurn, "per-turn", false, "add a line per turn to the report")
	fs.StringVar(&f.events, "events", "", "write zerolog JSON events (speech chunks, underruns, turns) to `FILE` (- for stderr)")
	bindForce(fs, &f.force)
	fs.BoolVar(&f.chunks, "chunks", false, "list every speech chunk handed to the synthesizer, with what released it and its times")
	fs.DurationVar(&f.tpotSLO, "tpot-slo", 0, "fail a turn whose TPOT is over this (default: none; the verdict is what the listener hears)")
	fs.DurationVar(&f.ttftSLO, "ttft-slo", 0, "fail a turn whose TTFT is over this (default: none)")
	fs.BoolVar(&f.invert, "max-tpot", true, "find, per turn, the largest constant TPOT with no interruption")
	fs.IntVar(&f.list, "list", 20, "list up to `N` underruns in the text report (0: none)")
	fs.StringArrayVar(&f.goodput, "goodput", nil, "request goodput as vLLM bench serve counts it, for SLOs as `KEY:MS` pairs of ttft, tpot, e2el: --goodput ttft:200 tpot:50")
	fs.Float64Var(&f.goodputMin, "goodput-min", 1, "with --goodput: the fraction of requests that must meet every SLO to pass")
	for _, factory := range sinkFactories {
		f.sinks = append(f.sinks, factory(fs, f))
	}
	for _, hook := range configHooks {
		f.hooks = append(f.hooks, hook(fs))
	}
}

// bindWithout binds the report flags but those named, which mean nothing
// for the command (their sinks and hooks are then never asked for).
func (f *reportFlags) bindWithout(fs *pflag.FlagSet, omit ...string) {
	all := pflag.NewFlagSet(fs.Name(), pflag.ContinueOnError)
	f.bind(all)
	all.VisitAll(func(fl *pflag.Flag) {
		if !slices.Contains(omit, fl.Name) {
			fs.AddFlag(fl)
		}
	})
}

// listKept is how many underruns the report keeps: those the text report
// lists (--list), every one for JSON (0).
func (f *reportFlags) listKept() int {
	if f.output == "json" {
		return 0
	}
	return f.list
}

// sloArg is an argument that continues --goodput's list, as vLLM writes
// it: --goodput ttft:200 tpot:50.
var sloArg = regexp.MustCompile(`^(ttft|tpot|e2el):[0-9.eE+-]+$`)

// takeSLOArgs moves the arguments that follow --goodput's pairs in vLLM's
// way (KEY:MS, not a file) from args to the SLO list.
func (f *reportFlags) takeSLOArgs(args []string) []string {
	if len(f.goodput) == 0 {
		return args
	}
	var rest []string
	for _, a := range args {
		if _, err := os.Stat(a); err != nil && sloArg.MatchString(a) {
			f.goodput = append(f.goodput, a)
			continue
		}
		rest = append(rest, a)
	}
	return rest
}

// session holds what one run writes to: the report, the event log and the
// sinks, and a Playout reused for every turn.
type session struct {
	env     *env
	flags   *reportFlags
	cfg     pipeline.Config
	report  *pipeline.Report
	playout *pipeline.Playout
	log     zerolog.Logger
	sinks   []turnSink
	events  *outfile.File // --events FILE of a finished run, put in place by finish
	// eventsWatch writes to events, and says its first failed write
	eventsWatch *watchedWriter
	closers     []func() error
	// writeReport, when set, renders the report instead of the text or
	// JSON report alone (speak adds its comparison).
	writeReport func(w io.Writer, r *pipeline.Report, json bool) error
}

// beginEngine starts a session with the engine configuration the speech
// flags build; the session's cfg holds it.
func (f *reportFlags) beginEngine(e *env, engine *engineFlags) (*session, error) {
	cfg, err := engine.config()
	if err != nil {
		return nil, err
	}
	return f.begin(e, cfg)
}

func (f *reportFlags) begin(e *env, cfg pipeline.Config) (*session, error) {
	if f.output != "text" && f.output != "json" {
		return nil, usagef("--report: want text or json, got %q", f.output)
	}
	if f.tpotSLO < 0 || f.ttftSLO < 0 {
		return nil, usagef("--tpot-slo and --ttft-slo must not be negative (0: none), got %v and %v", f.tpotSLO, f.ttftSLO)
	}
	slos, err := pipeline.ParseSLOs(f.goodput)
	if err != nil {
		return nil, usagef("--goodput: %w", err)
	}
	if len(f.goodput) > 0 && len(slos) == 0 {
		return nil, usagef("--goodput: no SLO given; want KEY:MS pairs such as ttft:200 tpot:50")
	}
	if f.goodputMin < 0 || f.goodputMin > 1 {
		return nil, usagef("--goodput-min must be a fraction from 0 to 1, got %v", f.goodputMin)
	}
	f.slos = slos
	if f.list < 0 {
		return nil, usagef("--list must not be negative (0 lists none), got %d", f.list)
	}
	for _, apply := range f.hooks {
		if err := apply(e, &cfg); err != nil {
			return nil, err
		}
	}
	p, err := pipeline.NewPlayout(cfg, "")
	if err != nil {
		return nil, usageError{err}
	}
	s := &session{env: e, flags: f, cfg: cfg, playout: p, log: zerolog.Nop()}
	s.report = pipeline.NewReport(cfg, pipeline.ReportOptions{
		TPOTSLO: f.tpotSLO, TTFTSLO: f.ttftSLO, PerTurn: f.perTurn, MaxTPOT: f.invert,
		// the JSON report lists every underrun, the text report --list
		KeepUnderruns: f.output == "json" || f.list > 0, MaxUnderruns: f.listKept(),
		KeepChunks: f.chunks, Goodput: slos, GoodputMin: f.goodputMin, Timing: f.timing,
	})
	switch f.events {
	case "":
	case "-":
		s.log = zerolog.New(e.stderr)
		e.noProgress = true // a bar would break the event lines
	default:
		if f.live {
			file, err := openRecording(e.stderr, "--events", f.events, f.force)
			if err != nil {
				return nil, err
			}
			s.log = zerolog.New(file)
			s.closers = append(s.closers, file.Close)
			break
		}
		if err := refuseExisting("--events", f.events, f.force); err != nil {
			return nil, err
		}
		file, err := createOutput("--events", f.events)
		if err != nil {
			return nil, err
		}
		s.events = file
		s.eventsWatch = &watchedWriter{w: file, flag: "--events", name: f.events, stderr: e.stderr}
		s.log = zerolog.New(s.eventsWatch)
	}
	for _, mk := range f.sinks {
		sink, err := mk(e, cfg)
		if err != nil {
			s.abort()
			return nil, err
		}
		if sink != nil {
			s.sinks = append(s.sinks, sink)
		}
	}
	return s, nil
}

// add plays one turn and accounts it.
func (s *session) add(t *pipeline.Turn) error {
	if err := t.Validate(); err != nil {
		return err
	}
	if pipeline.NotSpeech(t) {
		// text no voice could read (random benchmark data): per token
		pipeline.SpeakPerToken(t)
		s.report.NoteSpokenPerToken()
	}
	if err := s.playout.PlayTurn(t); err != nil {
		return err
	}
	return s.played(t, s.playout)
}

// played accounts a turn already played through p.
func (s *session) played(t *pipeline.Turn, p *pipeline.Playout) error {
	if s.flags.events != "" {
		for i := range p.Chunks {
			pipeline.LogChunk(s.log, pipeline.NewChunkReport(p, t.Session, i))
		}
	}
	for _, u := range p.Underruns {
		pipeline.LogUnderrun(s.log, u)
	}
	pipeline.LogTurn(s.log, t, p)
	s.report.Add(t, p)
	for _, sink := range s.sinks {
		if err := sink.Add(t, p); err != nil {
			return err
		}
	}
	return nil
}

// abort closes what the session opened, after an error, leaving the
// files it was to write as they were.
func (s *session) abort() {
	for _, sink := range s.sinks {
		sink.Abort()
	}
	if s.events != nil {
		s.events.Abort()
	}
	for _, c := range s.closers {
		c()
	}
}

// finish closes the sinks, renders the report and turns the verdict into
// the exit status.
func (s *session) finish() error {
	for i, sink := range s.sinks {
		if err := sink.Close(); err != nil {
			s.sinks = s.sinks[i+1:] // those closed are done
			s.abort()
			return err
		}
	}
	s.sinks = nil
	// a file that could not be written fails the run, after the report:
	// what was analysed is still worth reading
	var errs []error
	if s.events != nil {
		if err := s.eventsWatch.Err(); err != nil {
			s.events.Abort()
			errs = append(errs, err)
		} else if err := s.events.Commit(); err != nil {
			errs = append(errs, fmt.Errorf("--events: %w", err))
		}
		s.events = nil
	}
	for _, c := range s.closers {
		errs = append(errs, c())
	}
	s.report.Close()
	var err error
	switch {
	case s.writeReport != nil:
		err = s.writeReport(s.env.stdout, s.report, s.flags.output == "json")
	case s.flags.output == "json":
		err = s.report.WriteJSON(s.env.stdout)
	default:
		err = writeTextReport(s.env.stdout, s.report, s.flags.list)
	}
	if err := errors.Join(append(errs, err)...); err != nil {
		return err
	}
	if r := s.report.Verdict.Result; r != "pass" && r != pipeline.VerdictNone {
		return errFail
	}
	return nil
}

// writeTextReport writes the report and a list of the first underruns.
func writeTextReport(w io.Writer, r *pipeline.Report, list int) error {
	if err := r.WriteText(w); err != nil {
		return err
	}
	writeLists(w, r, list)
	return nil
}

// writeTextBody writes the report without its answer and verdict, and a
// list of the first underruns, for a command that writes those itself.
func writeTextBody(w io.Writer, r *pipeline.Report, list int) error {
	if err := r.WriteBody(w); err != nil {
		return err
	}
	writeLists(w, r, list)
	return nil
}

// writeLists writes the first list underruns and the speech chunks the
// report kept.
func writeLists(w io.Writer, r *pipeline.Report, list int) {
	if list > 0 && len(r.List) > 0 {
		writeUnderrunList(w, r, list)
	}
	if len(r.Chunks) > 0 {
		writeChunks(w, r.Chunks)
	}
}

// writeUnderrunList writes the first list underruns as a table.
func writeUnderrunList(w io.Writer, r *pipeline.Report, list int) {
	fmt.Fprintf(w, "\nunderruns (first %d of %d):\n", min(list, len(r.List)), r.Underruns.Count)
	fmt.Fprintf(w, "  %-12s %10s %10s  %-12s %-11s %-17s %6s %9s %9s\n", "turn", "start ms", "length ms", "class", "cause", "where", "token", "ITL ms", "tol ms")
	for i, u := range r.List {
		if i == list {
			break
		}
		fmt.Fprintf(w, "  %-12s %10.1f %10.1f  %-12s %-11s %-17s %6d %9.1f %9.1f\n",
			u.Turn, u.StartMs, u.DurationMs, u.Class, u.Cause, u.Position, u.Token, u.ITLMs, u.ToleranceMs)
	}
}

// writeChunks writes every speech chunk as a table, turn by turn (--chunks).
func writeChunks(w io.Writer, chunks []pipeline.ChunkReport) {
	for i, c := range chunks {
		if i == 0 || c.Turn != chunks[i-1].Turn || c.Session != chunks[i-1].Session {
			n := 0
			for _, d := range chunks[i:] {
				if d.Turn != c.Turn || d.Session != c.Session {
					break
				}
				n++
			}
			fmt.Fprintf(w, "\nspeech chunks of turn %s (%d; times in ms since the request):\n", c.Turn, n)
			fmt.Fprintf(w, "  %5s %9s  %-12s %11s %11s %10s %9s %8s  %s\n",
				"chunk", "release", "released by", "synth start", "first audio", "play start", "play end", "audio", "text")
		}
		by := c.ReleasedBy
		switch c.ReleasedBy {
		case pipeline.ReleasedByToken:
			by = fmt.Sprintf("token %d", c.Token)
		case pipeline.ReleasedByTimer:
			by = fmt.Sprintf("timer (%d)", c.Token)
		}
		text := strconv.Quote(c.Text)
		if c.Textless {
			text += " (stands in for tokens without text)"
		}
		fmt.Fprintf(w, "  %5d %9.1f  %-12s %11.1f %11.1f %10.1f %9.1f %8.1f  %s\n",
			c.Index, c.ReleaseMs, by, c.SynthStartMs, c.FirstAudioMs, c.PlayStartMs, c.PlayEndMs, c.AudioMs, text)
	}
}
