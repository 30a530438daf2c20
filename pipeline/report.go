package pipeline

import (
	"encoding/json"
	"fmt"
	"io"
	"math"
	"slices"
	"sort"
	"strings"
	"text/tabwriter"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// DefaultTPOTSLO is the usual TPOT target (50 ms): a report says of the
// turns over it whether a listener heard anything (Answer.Findings). It
// gates the verdict only when set (ReportOptions.TPOTSLO).
const DefaultTPOTSLO = 50 * time.Millisecond

// Counter counts events and their total length.
type Counter struct {
	Count   int     `json:"count"`
	TotalMs float64 `json:"total_ms"`
}

func (c *Counter) add(d time.Duration) {
	c.Count++
	c.TotalMs += Millis(d)
}

// Verdict is the pass/fail answer of a report, with its reasons.
type Verdict struct {
	Result  string   `json:"result"`
	Reasons []string `json:"reasons"`
}

// Pass reports whether the verdict passed.
func (v Verdict) Pass() bool { return v.Result == "pass" }

// TurnReport is the per-turn line of a report.
type TurnReport struct {
	Turn          string   `json:"turn"`
	Session       string   `json:"session,omitempty"`
	Status        Status   `json:"status"`
	Error         string   `json:"error,omitempty"`
	Tokens        int      `json:"tokens"`
	Chunks        int      `json:"chunks"`
	TTFTMs        float64  `json:"ttft_ms"`
	TTFSTMs       *float64 `json:"ttfst_ms"`
	TPOTMs        *float64 `json:"tpot_ms"`
	E2ELMs        float64  `json:"e2el_ms"`
	TTFAMs        *float64 `json:"ttfa_ms"`
	SpeechMs      float64  `json:"speech_ms"`
	Underruns     Counter  `json:"underruns"`
	Glitches      Counter  `json:"glitches"`
	Interruptions Counter  `json:"interruptions"`
	MinPrerollMs  float64  `json:"min_preroll_ms"`
	MaxSafeTPOTMs *float64 `json:"max_safe_tpot_ms,omitempty"`
	// MinToleranceMs is the smallest finite stall tolerance after the
	// player started: the tightest point of the turn.
	MinToleranceMs *float64 `json:"min_tolerance_ms"`
}

// ReportOptions choose what a Report computes.
type ReportOptions struct {
	// TPOTSLO, when positive, is the TPOT every turn must stay within to
	// pass; zero leaves the verdict to what the listener hears, and the
	// report compares TPOT with DefaultTPOTSLO only to say whether a
	// listener heard it (Answer.Findings).
	TPOTSLO time.Duration
	// TTFTSLO, when positive, is the TTFT every turn must stay within to
	// pass.
	TTFTSLO time.Duration
	// Timing says whose timing the gaps follow, where the report cannot
	// tell it from the configuration (a real player's count, a
	// recording); zero: the configuration's (Answer.Timing).
	Timing GapTiming
	// PerTurn keeps a TurnReport for every turn.
	PerTurn bool
	// KeepUnderruns keeps every underrun (the List field), or the first
	// MaxUnderruns of them when that is positive.
	KeepUnderruns bool
	MaxUnderruns  int
	// MaxTPOT runs the largest-safe-TPOT inversion for every turn.
	MaxTPOT bool
	// KeepChunks keeps every speech chunk of every turn (Chunks field).
	KeepChunks bool
	// Goodput counts request goodput for these SLOs, as vLLM does
	// (RequestGoodput); the verdict fails when the fraction of requests
	// meeting every SLO is below GoodputMin.
	Goodput    []SLO
	GoodputMin float64
}

// Report accumulates turns and their playouts (Add), is finalized by Close,
// and renders as JSON or text. Its JSON keys are stable.
type Report struct {
	// Answer is what the report says first: the gaps in the listener's
	// terms, whose timing they follow and what would remove them (set by
	// Close).
	Answer         *Answer           `json:"answer"`
	Turns          int               `json:"turns"`
	TurnsOK        int               `json:"turns_ok"`
	TurnsFailed    int               `json:"turns_failed"`
	TurnsSilent    int               `json:"turns_silent"`
	TurnsNotSpeech int               `json:"turns_not_speech"` // text no voice could read, spoken per token (NotSpeech)
	TTFT           Summary           `json:"ttft_ms"`
	TTFST          Summary           `json:"ttfst_ms"`
	TPOT           Summary           `json:"tpot_ms"`
	ITL            Summary           `json:"itl_ms"`
	E2EL           Summary           `json:"e2el_ms"`
	TTFA           Summary           `json:"ttfa_ms"`
	SpeechMs       float64           `json:"speech_ms"`
	Underruns      Counter           `json:"underruns"`
	Glitches       Counter           `json:"glitches"`
	Interruptions  Counter           `json:"interruptions"`
	Causes         map[Cause]Counter `json:"causes"`
	Positions      map[Position]int  `json:"positions"`
	// Stopped counts the underruns in which the output transport
	// signalled that the bot stopped speaking, mid-reply (Underrun.Stopped).
	Stopped                int      `json:"stopped"`
	InterruptionsPerMinute float64  `json:"interruptions_per_minute"`
	SpeechGoodput          float64  `json:"speech_goodput"`
	MinPrerollMs           float64  `json:"min_preroll_ms"`
	MaxSafeTPOTMs          *float64 `json:"max_safe_tpot_ms"`
	// TPOTSLOMs is the TPOT SLO set (ReportOptions.TPOTSLO), or else
	// DefaultTPOTSLO; TPOTSLOGates says it was set and gates the verdict.
	// TurnsOverSLO counts the turns over it.
	TPOTSLOMs    float64 `json:"tpot_slo_ms"`
	TPOTSLOGates bool    `json:"tpot_slo_gates"`
	TurnsOverSLO int     `json:"turns_over_tpot_slo"`
	// TTFTSLOMs is the TTFT SLO set (0: none), TurnsOverTTFTSLO the turns
	// over it.
	TTFTSLOMs        float64          `json:"ttft_slo_ms,omitempty"`
	TurnsOverTTFTSLO int              `json:"turns_over_ttft_slo,omitempty"`
	Verdict          Verdict          `json:"verdict"`
	Config           *ConfigReport    `json:"config,omitempty"`
	PerTurn          []TurnReport     `json:"per_turn,omitempty"`
	List             []UnderrunReport `json:"underrun_list,omitempty"`
	Chunks           []ChunkReport    `json:"chunks,omitempty"`
	// ToolSilences are the gaps a tool call explains (CauseTool), kept
	// out of the underrun tallies, the verdict and speech goodput;
	// ToolList has each, with what the filler would have covered.
	ToolSilences Counter `json:"tool_silences,omitzero"`
	FillerCover  Counter `json:"filler_covered,omitzero"`
	// FillerLate counts the silences whose filler phrase outlasts them,
	// by how long each holds back the speech after it (Coverage.Late).
	FillerLate Counter             `json:"filler_late,omitzero"`
	ToolList   []ToolSilenceReport `json:"tool_silence_list,omitempty"`
	// Tools are the file's figures under the conventions of the benchmark
	// tool that wrote it, compared with the summary it saved (set by the
	// reader of a tool's file; see trace.Parity).
	Tools []ToolFigures `json:"tool_figures,omitempty"`
	// RequestGoodput counts the requests meeting every --goodput SLO, as
	// vLLM bench serve does, beside speech goodput.
	RequestGoodput *Goodput `json:"request_goodput,omitempty"`

	opts                         ReportOptions
	filler                       Filler       // the config's (Config.Filler): what each tool-call silence's report says it covers
	ttft, ttfst, itl, e2el, ttfa DurationPool // released by Close
	tpot                         Pool
	good                         int
	minPreroll                   time.Duration
	maxSafe                      time.Duration
	maxSafeSet, maxSafeNone      bool
	worst                        Severity   // the worst turn so far
	severities                   []Severity // of PerTurn, in order
	closed                       bool
	maxTPOT                      *maxTPOTMemo // the MaxTPOT inversion, one search per kind of turn
	goodputElsewhere             bool
	itlShared                    []*SharedITLs // ITLs pooled elsewhere
	itlElsewhere                 bool          // the next turn's ITLs are in itlShared
	textless                     int           // tokens spoken without text
	listener                     listener      // what the Answer says
}

// ConfigReport records the engine settings a report was made with.
type ConfigReport struct {
	// Stack is the named stack the speech settings came from, if any;
	// StackOverridden the figures of it that flags or keys replaced.
	Stack           string   `json:"stack,omitempty"`
	StackOverridden []string `json:"stack_overridden,omitempty"`
	// Transport is the output transport the underruns were heard
	// through, if any (tts.Transport.String).
	Transport      string  `json:"transport,omitempty"`
	Chunking       string  `json:"chunking"`
	WPM            float64 `json:"wpm"`
	TokenAudioMs   float64 `json:"token_audio_ms"`
	TTSMode        string  `json:"tts_mode"`
	TTSLatencyMs   float64 `json:"tts_latency_ms"`
	ContinuationMs float64 `json:"tts_continuation_ms"`
	RTF            float64 `json:"rtf"`
	PrerollMs      float64 `json:"preroll_ms"`
	InterruptionMs float64 `json:"interruption_ms"`
	// Filler is the app's filler policy for tool-call silences
	// (Config.Filler, in --filler form), if it plays any: the report says
	// what it covers of each (ToolSilenceReport).
	Filler string `json:"filler,omitempty"`
}

// UnderrunReport is an underrun as reports and event logs show it.
type UnderrunReport struct {
	Turn        string   `json:"turn"`
	StartMs     float64  `json:"start_ms"`
	DurationMs  float64  `json:"duration_ms"`
	StartSample int64    `json:"start_sample"`
	Samples     int64    `json:"samples"`
	Class       Class    `json:"class"`
	Cause       Cause    `json:"cause"`
	Position    Position `json:"position"`
	Token       int      `json:"token"`
	Chunk       int      `json:"chunk"`
	ITLMs       float64  `json:"itl_ms"`
	ToleranceMs float64  `json:"tolerance_ms"`
	Stopped     bool     `json:"stopped,omitempty"`
}

// How a speech chunk came to be released (ChunkReport.ReleasedBy).
const (
	ReleasedByToken = "token" // the arrival of token ChunkReport.Token
	ReleasedByTimer = "timer" // the policy's timer, started by token ChunkReport.Token
	ReleasedByEnd   = "end"   // the end of the turn (the last token is ChunkReport.Token)
)

// ChunkReport is one speech chunk handed to the synthesizer, as --events,
// `analyze --chunks` and the monitor's subscribers show it: what it said,
// when it was released and by what, and its life through the synthesizer
// and the player. Times count from the turn's request.
type ChunkReport struct {
	Turn    string `json:"turn"`
	Session string `json:"session,omitempty"`
	// Index is the chunk's place in the turn, from 0.
	Index int `json:"index"`
	// Text is what it says; Textless marks tokens without text, each
	// standing in as tts.TextlessToken.
	Text     string `json:"text"`
	Textless bool   `json:"textless,omitempty"`
	// ReleaseMs is when the chunking policy handed it over; ReleasedBy
	// says what did (ReleasedByToken, ReleasedByTimer, ReleasedByEnd) and
	// Token which streamed chunk (from 0): the one whose arrival released
	// it, the one that started the timer, or the turn's last.
	ReleaseMs  float64 `json:"release_ms"`
	ReleasedBy string  `json:"released_by"`
	Token      int     `json:"token"`
	// SynthStartMs is when the synthesizer took it (a request's start;
	// its release in stream and parallel mode), FirstAudioMs when its
	// first audio was ready, PlayStartMs and PlayEndMs when the player
	// played it (gaps inside it included), AudioMs its length of speech.
	SynthStartMs float64 `json:"synth_start_ms"`
	FirstAudioMs float64 `json:"first_audio_ms"`
	PlayStartMs  float64 `json:"play_start_ms"`
	PlayEndMs    float64 `json:"play_end_ms"`
	AudioMs      float64 `json:"audio_ms"`
}

// NewChunkReport describes speech chunk i of the turn p played (p.Chunks).
func NewChunkReport(p *Playout, session string, i int) ChunkReport {
	c := p.Chunks[i]
	return chunkReport(p.turn, session, i, c, p.Text(c), p.Textless(c))
}

// ChunkReport describes the speech chunk of an EventSpeech.
func (e Event) ChunkReport() ChunkReport {
	return chunkReport(e.Turn, e.Session, e.Index, e.Speech, e.Text, e.Textless)
}

func chunkReport(turn, session string, i int, c SpeechChunk, text string, textless bool) ChunkReport {
	by := ReleasedByToken
	switch {
	case c.End:
		by = ReleasedByEnd
	case c.Timer:
		by = ReleasedByTimer
	}
	return ChunkReport{
		Turn: turn, Session: session, Index: i,
		Text: text, Textless: textless,
		ReleaseMs: Millis(c.Release), ReleasedBy: by, Token: c.Trigger,
		SynthStartMs: Millis(c.Start), FirstAudioMs: Millis(c.Ready),
		PlayStartMs: Millis(c.PlayStart), PlayEndMs: Millis(c.PlayEnd), AudioMs: Millis(c.Audio),
	}
}

// NewUnderrunReport converts an underrun to its report form.
func NewUnderrunReport(u Underrun) UnderrunReport {
	return UnderrunReport{
		Turn: u.Turn, StartMs: Millis(u.Start), DurationMs: Millis(u.Duration),
		StartSample: u.StartSample, Samples: u.Samples,
		Class: u.Class, Cause: u.Cause, Position: u.Position,
		Token: u.Token, Chunk: u.Chunk,
		ITLMs: Millis(u.ITL), ToleranceMs: Millis(u.Tolerance),
		Stopped: u.Stopped,
	}
}

// transportName is how the report's config names a transport: nothing
// for none.
func transportName(t tts.Transport) string {
	if t.None() {
		return ""
	}
	return t.String()
}

// NewReport returns an empty report.
func NewReport(cfg Config, opts ReportOptions) *Report {
	slo := opts.TPOTSLO
	if slo <= 0 {
		slo = DefaultTPOTSLO
	}
	r := &Report{
		opts:         opts,
		Causes:       map[Cause]Counter{},
		Positions:    map[Position]int{},
		TPOTSLOMs:    Millis(slo),
		TPOTSLOGates: opts.TPOTSLO > 0,
		TTFTSLOMs:    Millis(max(0, opts.TTFTSLO)),
		listener:     listener{cfg: cfg},
	}
	if len(opts.Goodput) > 0 {
		r.RequestGoodput = NewGoodput(opts.Goodput)
	}
	name := ""
	if cfg.Policy != nil {
		name = cfg.Policy.Name()
	}
	r.Config = &ConfigReport{
		Stack:          cfg.Stack,
		Transport:      transportName(cfg.Transport),
		ContinuationMs: Millis(cfg.Synth.Continuation),
		Chunking:       name, WPM: cfg.Voice.WPM, TokenAudioMs: Millis(cfg.Voice.TokenTime()),
		TTSMode: string(cfg.Synth.Timing()), TTSLatencyMs: Millis(cfg.Synth.TTFA), RTF: cfg.Synth.RTF,
		PrerollMs: Millis(cfg.Preroll), InterruptionMs: Millis(cfg.Interruption),
	}
	if r.filler = cfg.Filler; r.filler.Plays() {
		r.Config.Filler = r.filler.String()
	}
	if st, err := tts.LookupStack(cfg.Stack); err == nil && cfg.Stack != "" {
		r.Config.StackOverridden = st.Overridden(name, cfg.Synth)
	}
	return r
}

func ptr(v float64) *float64 { return &v }

// Add accounts one turn and its finished playout (p may be nil for a turn
// that was not played). p is only read: the MaxTPOT inversion, when
// enabled, runs on a scratch Playout of the report's own.
func (r *Report) Add(t *Turn, p *Playout) {
	r.Turns++
	if r.RequestGoodput != nil && !r.goodputElsewhere {
		r.RequestGoodput.AddTurn(t)
	}
	tr := TurnReport{Turn: t.ID, Session: t.Session, Status: t.Status, Error: t.Error, Chunks: len(t.Chunks)}
	if t.Status == StatusOK || t.Status == "" {
		r.TurnsOK++
	} else {
		r.TurnsFailed++
	}
	tm, has := t.Timing()
	tr.Tokens = t.Tokens()
	if has {
		r.ttft.AddDuration(tm.TTFT)
		if r.opts.TTFTSLO > 0 && tm.TTFT > r.opts.TTFTSLO {
			r.TurnsOverTTFTSLO++
		}
		r.e2el.AddDuration(tm.E2E)
		tr.TTFTMs, tr.E2ELMs = Millis(tm.TTFT), Millis(tm.E2E)
		if tm.HasSpeech {
			r.ttfst.AddDuration(tm.TTFST)
			tr.TTFSTMs = ptr(Millis(tm.TTFST))
		}
		if s, ok := t.TPOTSeconds(); ok {
			ms := s * 1000
			r.tpot.Add(ms)
			tr.TPOTMs = ptr(ms)
			if ms > r.TPOTSLOMs {
				r.TurnsOverSLO++
			}
		}
		if !r.itlElsewhere {
			for itl := range t.ITLs() {
				r.itl.AddDuration(itl)
			}
		}
	}
	for _, c := range t.Chunks {
		if c.Textless && !c.Reasoning {
			r.textless += c.TokenCount()
		}
	}
	// a turn without speech: nothing spoken, or text that makes no audio
	// (only spaces and punctuation)
	if !has || !tm.HasSpeech || p != nil && p.Speech() == 0 {
		r.TurnsSilent++
	}
	interrupted := false
	if p != nil {
		if at, ok := p.Started(); ok {
			r.ttfa.AddDuration(at)
			tr.TTFAMs = ptr(Millis(at))
		}
		tr.SpeechMs = Millis(p.Speech())
		r.SpeechMs += tr.SpeechMs
		for _, u := range p.Underruns {
			if tc, ok := p.ToolCallOf(&u); ok {
				r.addToolSilence(p, u, tc)
				continue
			}
			r.Underruns.add(u.Duration)
			tr.Underruns.add(u.Duration)
			if u.Class == Interruption {
				r.Interruptions.add(u.Duration)
				tr.Interruptions.add(u.Duration)
				interrupted = true
			} else {
				r.Glitches.add(u.Duration)
				tr.Glitches.add(u.Duration)
			}
			c := r.Causes[u.Cause]
			c.add(u.Duration)
			r.Causes[u.Cause] = c
			r.Positions[u.Position]++
			if u.Stopped {
				r.Stopped++
			}
			if r.opts.KeepUnderruns && (r.opts.MaxUnderruns <= 0 || len(r.List) < r.opts.MaxUnderruns) {
				r.List = append(r.List, NewUnderrunReport(u))
			}
		}
		if r.opts.KeepChunks {
			for i := range p.Chunks {
				r.Chunks = append(r.Chunks, NewChunkReport(p, t.Session, i))
			}
		}
		r.minPreroll = max(r.minPreroll, p.MinPreroll)
		tr.MinPrerollMs = Millis(p.MinPreroll)
		if start, ok := p.Started(); ok {
			for k, tol := range p.Tolerance {
				if tol != Unbounded && t.Chunks[k].At >= start {
					if tr.MinToleranceMs == nil || Millis(tol) < *tr.MinToleranceMs {
						tr.MinToleranceMs = ptr(Millis(tol))
					}
				}
			}
		}
		if r.opts.MaxTPOT && tm.HasSpeech {
			if r.maxTPOT == nil {
				r.maxTPOT, _ = newMaxTPOTMemo(p.Config()) // p's config is valid
			}
			if v, ok := r.maxTPOT.MaxTPOT(t); ok {
				tr.MaxSafeTPOTMs = ptr(Millis(v))
				if !r.maxSafeSet || v < r.maxSafe {
					r.maxSafe, r.maxSafeSet = v, true
				}
			} else {
				r.maxSafeNone = true
			}
		}
	}
	failed := !(t.Status == StatusOK || t.Status == "")
	if !interrupted && !failed {
		r.good++
	}
	r.listener.listen(r, t, p, &tr, interrupted, failed, has && tm.HasSpeech && (p == nil || p.Speech() > 0))
	sev := Severity{Turn: t.ID, Session: t.Session}
	if p != nil {
		sev.Tally = TallyUnderruns(p.Underruns)
	}
	if r.Turns == 1 || sev.Worse(r.worst) {
		r.worst = sev
	}
	if r.opts.PerTurn {
		r.PerTurn = append(r.PerTurn, tr)
		r.severities = append(r.severities, sev)
	}
}

// addToolSilence accounts a tool-call silence apart from the underruns.
func (r *Report) addToolSilence(p *Playout, u Underrun, tc ToolCall) {
	r.ToolSilences.add(u.Duration)
	cov := r.filler.Cover(u.Duration, p.Config())
	if cov.Covered > 0 {
		r.FillerCover.add(cov.Covered)
	}
	if cov.Late > 0 {
		r.FillerLate.add(cov.Late)
	}
	r.ToolList = append(r.ToolList, ToolSilenceReport{
		Turn: u.Turn, Tool: tc.Name, ToolMs: Millis(tc.Duration),
		StartMs: Millis(u.Start), SilenceMs: Millis(u.Duration),
		Filler: r.filler.String(), CoveredMs: Millis(cov.Covered), SilentMs: Millis(cov.Silent),
		LateMs: Millis(cov.Late),
	})
}

// WorstTurn returns the turn that sounded worst (CompareSeverity); ok is
// false before the first turn.
func (r *Report) WorstTurn() (s Severity, ok bool) {
	return r.worst, r.Turns > 0
}

// WorstFirst returns the per-turn lines (ReportOptions.PerTurn) ranked
// worst first by CompareSeverity, the ranking every view of the report
// shares.
func (r *Report) WorstFirst() []TurnReport {
	idx := make([]int, len(r.PerTurn))
	for i := range idx {
		idx[i] = i
	}
	if len(r.severities) == len(r.PerTurn) {
		slices.SortStableFunc(idx, func(a, b int) int { return CompareSeverity(r.severities[a], r.severities[b]) })
	}
	out := make([]TurnReport, len(idx))
	for i, k := range idx {
		out[i] = r.PerTurn[k]
	}
	return out
}

// Close computes the summaries and the verdict. Add must not be called
// after Close.
func (r *Report) Close() {
	if r.closed {
		return
	}
	r.closed = true
	r.TTFT, r.TTFST, r.TPOT = r.ttft.Summary(), r.ttfst.Summary(), r.tpot.Summary()
	r.E2EL, r.TTFA = r.e2el.Summary(), r.ttfa.Summary()
	itls, without := []sortedSource{r.itl.source()}, []float64(nil)
	for _, s := range r.itlShared {
		src, w := s.sources()
		itls, without = append(itls, src...), append(without, w...)
	}
	slices.Sort(without)
	r.ITL = summaryWithout(without, itls...)
	r.itlShared = nil
	for _, p := range []*DurationPool{&r.ttft, &r.ttfst, &r.itl, &r.e2el, &r.ttfa} {
		p.Release()
	}
	r.tpot.Release()
	if r.Turns > 0 {
		r.SpeechGoodput = float64(r.good) / float64(r.Turns)
	}
	if r.SpeechMs > 0 {
		r.InterruptionsPerMinute = float64(r.Interruptions.Count) / (r.SpeechMs / 60000)
	}
	r.MinPrerollMs = Millis(r.minPreroll)
	if r.maxSafeSet && !r.maxSafeNone {
		r.MaxSafeTPOTMs = ptr(Millis(r.maxSafe))
	} else if r.maxSafeNone {
		r.MaxSafeTPOTMs = ptr(0)
	}
	v := Verdict{Result: "pass", Reasons: []string{}}
	if r.Turns == 0 && r.summariesOnly() {
		// nothing to judge: the files hold the tools' summaries only
		r.Verdict = Verdict{Result: VerdictNone, Reasons: []string{"the files hold no per-request timings, only the tools' summaries: no speech analysis"}}
		r.Answer = &Answer{Verdict: VerdictNone, Text: "nothing to hear: the files hold only the tools' summaries, no per-request timings",
			Findings: []string{}, Remedies: []Remedy{}, Timing: r.timing()}
		return
	}
	if r.Turns == 0 {
		v.Reasons = append(v.Reasons, "no turns")
		v.Result = "fail"
	}
	if g := r.RequestGoodput; g != nil {
		g.Close(0)
		if g.Fraction < r.opts.GoodputMin {
			v.Reasons = append(v.Reasons, fmt.Sprintf("request goodput: %d of %s (%.1f%%) met every SLO (%s); want at least %.1f%%",
				g.Good, plural(g.Requests, "request"), 100*g.Fraction, FormatSLOs(g.SLOs), 100*r.opts.GoodputMin))
		}
	}
	if r.Interruptions.Count > 0 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%s (%.0f ms of silence) in %s; worst turn %s",
			plural(r.Interruptions.Count, "interruption"), r.Interruptions.TotalMs, plural(r.listener.gapTurns, "turn"), r.worst.Turn))
	}
	if n := r.listener.noReply; n > 0 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d of %s got no reply: the request failed", n, plural(r.Turns, "turn")))
	}
	if n := r.listener.cutOff; n > 0 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("in %d of %s the reply stops: the request failed mid-reply", n, plural(r.Turns, "turn")))
	}
	if r.TPOTSLOGates && r.TurnsOverSLO > 0 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d of %s %s TPOT above the %s SLO (worst %.1f ms)",
			r.TurnsOverSLO, plural(r.TPOT.Count, "turn"), pick(r.TurnsOverSLO, "has", "have"), fmtMs(r.TPOTSLOMs), r.TPOT.Max))
	}
	if r.TurnsOverTTFTSLO > 0 {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%d of %s %s TTFT above the %s SLO (worst %.1f ms)",
			r.TurnsOverTTFTSLO, plural(r.TTFT.Count, "turn"), pick(r.TurnsOverTTFTSLO, "has", "have"), fmtMs(r.TTFTSLOMs), r.TTFT.Max))
	}
	if len(v.Reasons) > 0 {
		v.Result = "fail"
	}
	r.Verdict = v
	r.Answer = r.answer()
}

// Expectation is one check its caller made of a closed report (a
// scenario's expect line), for Expect.
type Expectation struct {
	// Text says what was expected and what was got.
	Text string
	Held bool
}

// Expect folds its caller's expectations into the verdict of the report,
// which it closes first: with any, they decide it, so that a run has one
// verdict. It passes when every one held; each that did not is a reason.
// What the listener heard stays in the answer, and, where the
// expectations hold despite it, among the reasons.
func (r *Report) Expect(results []Expectation) {
	r.Close()
	if len(results) == 0 || r.Verdict.Result == VerdictNone {
		return
	}
	heard := r.Verdict
	v := Verdict{Result: "pass", Reasons: []string{}}
	for _, e := range results {
		if !e.Held {
			v.Result = "fail"
			v.Reasons = append(v.Reasons, "expectation failed: "+e.Text)
		}
	}
	if v.Pass() {
		v.Reasons = append(v.Reasons, fmt.Sprintf("%s held", pick(len(results), "the one expectation", fmt.Sprintf("all %d expectations", len(results)))))
		for _, reason := range heard.Reasons {
			v.Reasons = append(v.Reasons, "heard, and within the expectations: "+reason)
		}
	}
	r.Verdict = v
	r.Answer.Verdict = v.Result
	r.Answer.DecidedBy = DecidedByExpectations
}

// Note adds a finding to the closed report's answer (Answer.Findings): what
// its caller learned beside the turns, such as a simulation's Monte Carlo
// run.
func (r *Report) Note(finding string) {
	r.Close()
	r.Answer.Findings = append(r.Answer.Findings, finding)
}

// CountGoodputElsewhere stops (true) or resumes (false) counting request
// goodput from the turns Add is given: a caller that counts it at the
// precision of a tool's file (trace.Parity) adds its count with
// MergeGoodput instead.
func (r *Report) CountGoodputElsewhere(on bool) { r.goodputElsewhere = on }

// MergeGoodput adds a request goodput counted elsewhere for the report's
// SLOs; it does nothing when the report counts none.
func (r *Report) MergeGoodput(g *Goodput) {
	if r.RequestGoodput != nil && g != nil {
		r.RequestGoodput.Merge(g)
	}
}

// ITLsElsewhere says that the ITLs between the chunks of the turns Add is
// given next are in shared (read at Close), and are not to be pooled
// again; nil pools them again. A benchmark file's times are pooled at the
// file's precision (trace.Parity), and the report's ITL figures take them
// from there: one pool, not two.
func (r *Report) ITLsElsewhere(shared *SharedITLs) {
	r.itlElsewhere = shared != nil
	if shared != nil && !slices.Contains(r.itlShared, shared) {
		r.itlShared = append(r.itlShared, shared)
	}
}

// NoteSpokenPerToken counts a turn whose text could not be speech and
// that was spoken per token instead (SpeakPerToken), before Add.
func (r *Report) NoteSpokenPerToken() { r.TurnsNotSpeech++ }

// VerdictNone is the verdict's result when there is nothing to judge: the
// input held benchmark summaries and no turns. It is neither a pass nor a
// failure (exit status 0).
const VerdictNone = "none"

// summariesOnly reports whether every tool file read held a summary only.
func (r *Report) summariesOnly() bool {
	for _, f := range r.Tools {
		if !f.SavedOnly {
			return false
		}
	}
	return len(r.Tools) > 0
}

func fmtMs(ms float64) string {
	return (time.Duration(ms * float64(time.Millisecond))).String()
}

// WriteJSON renders the closed report as indented JSON.
func (r *Report) WriteJSON(w io.Writer) error {
	r.Close()
	enc := json.NewEncoder(w)
	enc.SetIndent("", "  ")
	return enc.Encode(r)
}

// MarshalJSON keeps NaN out of the JSON (an empty summary is all zero).
func (s Summary) MarshalJSON() ([]byte, error) {
	type plain Summary
	c := plain(s)
	for _, f := range []*float64{&c.Mean, &c.Median, &c.Std, &c.Min, &c.Max, &c.P50, &c.P90, &c.P95, &c.P99, &c.P999} {
		if math.IsNaN(*f) || math.IsInf(*f, 0) {
			*f = 0
		}
	}
	return json.Marshal(c)
}

// WriteText renders the closed report for people.
// It opens with the answer (WriteAnswer), then the figures (WriteBody),
// and ends with the verdict (WriteVerdict).
func (r *Report) WriteText(w io.Writer) error {
	for _, write := range []func(io.Writer) error{r.WriteAnswer, r.WriteBody, r.WriteVerdict} {
		if err := write(w); err != nil {
			return err
		}
	}
	return nil
}

// WriteAnswer writes the closed report's answer, in the listener's terms,
// and a blank line: what the text report opens with.
func (r *Report) WriteAnswer(w io.Writer) error {
	r.Close()
	return r.Answer.WriteText(w)
}

// WriteVerdict writes the closed report's verdict with its reasons, as the
// text report ends.
func (r *Report) WriteVerdict(w io.Writer) error {
	r.Close()
	if r.Verdict.Result == VerdictNone {
		_, err := io.WriteString(w, "\nverdict: NONE (nothing to judge without per-request timings)\n")
		return err
	}
	var b strings.Builder
	fmt.Fprintf(&b, "\nverdict: %s\n", strings.ToUpper(r.Verdict.Result))
	for _, reason := range r.Verdict.Reasons {
		fmt.Fprintf(&b, "  - %s\n", reason)
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// WriteBody writes the closed report's figures: the speech settings, the
// timing metrics, the underrun tallies and the inversions, and the
// per-turn lines (the text report between the answer and the verdict).
func (r *Report) WriteBody(w io.Writer) error {
	r.Close()
	var b strings.Builder
	if r.Verdict.Result == VerdictNone {
		// summaries only: their figures, and what the rest needs
		b.WriteString("underrun report: no per-request timings, so no speech analysis; the tools' saved figures:\n")
		for _, f := range r.Tools {
			f.writeText(&b)
		}
		_, err := io.WriteString(w, b.String())
		return err
	}
	fmt.Fprintf(&b, "underrun report: %s (%d ok, %d failed, %d without speech)\n", plural(r.Turns, "turn"), r.TurnsOK, r.TurnsFailed, r.TurnsSilent)
	if c := r.Config; c != nil {
		if c.Stack != "" {
			fmt.Fprintf(&b, "stack: %s", c.Stack)
			if st, err := tts.LookupStack(c.Stack); err == nil {
				fmt.Fprintf(&b, ": %s (sources: `underrun stacks %s`)", st.Summary, st.Name)
			}
			if len(c.StackOverridden) > 0 {
				fmt.Fprintf(&b, "; overridden: %s", strings.Join(c.StackOverridden, ", "))
			}
			b.WriteString("\n")
		}
		if c.Transport != "" {
			fmt.Fprintf(&b, "transport: %s (underruns as the listener hears them)\n", c.Transport)
		}
		synth := fmt.Sprintf("TTS %s, first audio %s", c.TTSMode, fmtMs(c.TTSLatencyMs))
		if c.TTSMode == string(tts.ModeStream) {
			synth += ", continuation " + fmtMs(c.ContinuationMs)
		} else {
			synth += " per chunk"
		}
		perToken := ""
		if r.textless > 0 { // only where some token had no text
			perToken = fmt.Sprintf(" (%.0f ms per text-less token)", c.TokenAudioMs)
		}
		fmt.Fprintf(&b, "speech: %s chunking, %.0f wpm%s, %s, RTF %.2g, pre-roll %s, interruption >= %s\n",
			c.Chunking, c.WPM, perToken, synth, c.RTF, fmtMs(c.PrerollMs), fmtMs(c.InterruptionMs))
	}
	b.WriteString("\n")
	tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
	fmt.Fprintln(tw, "metric (ms)\tcount\tmean\tmedian\tstd\tmin\tp90\tp95\tp99\tp99.9\tmax\t")
	row := func(name string, s Summary) {
		fmt.Fprintf(tw, "%s\t%d\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t%.1f\t\n", name, s.Count, s.Mean, s.Median, s.Std, s.Min, s.P90, s.P95, s.P99, s.P999, s.Max)
	}
	row("TTFT", r.TTFT)
	if r.TTFST.Count != r.TTFT.Count || r.TTFST.Mean != r.TTFT.Mean {
		row("first spoken token", r.TTFST)
	}
	row("TPOT", r.TPOT)
	row("ITL", r.ITL)
	row("E2E latency", r.E2EL)
	row("first audio (TTFA)", r.TTFA)
	if err := tw.Flush(); err != nil {
		return err
	}
	for _, f := range r.Tools {
		f.writeText(&b)
	}
	fmt.Fprintf(&b, "\nspeech: %.1f s; underruns: %d (%.0f ms); glitches: %d (%.0f ms); interruptions: %d (%.0f ms, %.2f per minute of speech)\n",
		r.SpeechMs/1000, r.Underruns.Count, r.Underruns.TotalMs, r.Glitches.Count, r.Glitches.TotalMs,
		r.Interruptions.Count, r.Interruptions.TotalMs, r.InterruptionsPerMinute)
	if len(r.Causes) > 0 {
		causes := make([]string, 0, len(r.Causes))
		for c := range r.Causes {
			causes = append(causes, string(c))
		}
		sort.Strings(causes)
		b.WriteString("causes:")
		for _, c := range causes {
			v := r.Causes[Cause(c)]
			fmt.Fprintf(&b, " %s %d (%.0f ms)", c, v.Count, v.TotalMs)
		}
		b.WriteString("\nwhere:")
		positions := make([]string, 0, len(r.Positions))
		for p := range r.Positions {
			positions = append(positions, string(p))
		}
		sort.Strings(positions)
		for _, p := range positions {
			fmt.Fprintf(&b, " %s %d", p, r.Positions[Position(p)])
		}
		b.WriteString("\n")
	}
	if r.Stopped > 0 {
		fmt.Fprintf(&b, "the transport signalled that the bot stopped speaking in %s, in the middle of a reply\n", plural(r.Stopped, "underrun"))
	}
	if r.ToolSilences.Count > 0 {
		fmt.Fprintf(&b, "tool-call silences (not underruns): %d (%.0f ms)", r.ToolSilences.Count, r.ToolSilences.TotalMs)
		if r.filler.Plays() {
			fmt.Fprintf(&b, "; filler %s covers %.0f ms, %.0f ms stay silent", r.filler, r.FillerCover.TotalMs, r.ToolSilences.TotalMs-r.FillerCover.TotalMs)
		}
		b.WriteString("\n")
		if r.FillerLate.Count > 0 {
			after := "it"
			if r.FillerLate.Count > 1 {
				after = "each"
			}
			fmt.Fprintf(&b, "the phrase outlasts %s and holds back the reply after %s until it ends: %.0f ms in all\n",
				plural(r.FillerLate.Count, "silence"), after, r.FillerLate.TotalMs)
		}
	}
	if r.TurnsNotSpeech > 0 {
		tokenMs := 0.0
		if r.Config != nil {
			tokenMs = r.Config.TokenAudioMs
		}
		fmt.Fprintf(&b, "note: the text of %s is not speech (fewer than one word per %d tokens, as random benchmark data): spoken per token, %.0f ms each\n",
			plural(r.TurnsNotSpeech, "turn"), TokensPerWordNotSpeech, tokenMs)
	}
	fmt.Fprintf(&b, "speech goodput: %.1f%% of turns with no interruption\n", 100*r.SpeechGoodput)
	if g := r.RequestGoodput; g != nil {
		fmt.Fprintf(&b, "request goodput, counted as vLLM does: %s\n", g)
	}
	fmt.Fprintf(&b, "smallest pre-roll with no underrun: %.0f ms\n", r.MinPrerollMs)
	if r.MaxSafeTPOTMs != nil {
		slo := fmt.Sprintf("the usual target %.0f ms", r.TPOTSLOMs)
		if r.TPOTSLOGates {
			slo = fmt.Sprintf("SLO %s", fmtMs(r.TPOTSLOMs))
		}
		switch {
		case *r.MaxSafeTPOTMs >= Millis(MaxTPOTLimit):
			fmt.Fprintf(&b, "largest constant TPOT with no interruption (every turn): at least %s, the most the search tries (%s)\n", MaxTPOTLimit, slo)
		case *r.MaxSafeTPOTMs > 0:
			fmt.Fprintf(&b, "largest constant TPOT with no interruption (every turn): %.1f ms (%s)\n", *r.MaxSafeTPOTMs, slo)
		default:
			b.WriteString("largest constant TPOT with no interruption: none; the TTS interrupts even with instant tokens\n")
		}
	}
	if len(r.PerTurn) > 0 {
		b.WriteString("\n")
		tw := tabwriter.NewWriter(&b, 0, 0, 2, ' ', tabwriter.AlignRight)
		fmt.Fprintln(tw, "turn\tstatus\ttokens\tTTFT\tTPOT\tTTFA\tspeech\tglitches\tinterruptions\tsilence\tmin tolerance\tmin pre-roll\t")
		for _, t := range r.PerTurn {
			fmt.Fprintf(tw, "%s\t%s\t%d\t%.0f\t%s\t%s\t%.0f\t%d\t%d\t%.0f\t%s\t%.0f\t\n", t.Turn, t.Status, t.Tokens, t.TTFTMs,
				optMs(t.TPOTMs, 1), optMs(t.TTFAMs, 0), t.SpeechMs, t.Glitches.Count, t.Interruptions.Count, t.Underruns.TotalMs,
				optMs(t.MinToleranceMs, 0), t.MinPrerollMs)
		}
		if err := tw.Flush(); err != nil {
			return err
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// plural writes a count with its noun, adding an s unless it is one.
func plural(n int, noun string) string {
	return fmt.Sprintf("%d %s", n, pick(n, noun, noun+"s"))
}

func pick(n int, one, many string) string {
	if n == 1 {
		return one
	}
	return many
}

func optMs(v *float64, prec int) string {
	if v == nil {
		return "-"
	}
	return fmt.Sprintf("%.*f", prec, *v)
}
