package pipeline

import (
	"fmt"
	"io"
	"slices"
	"strings"
	"time"
	"unicode"

	"github.com/speech-pipeline/underrun/tts"
)

// Answer is what a report says first, in the listener's terms: how many
// gaps they hear, how long, in which turns, caused by what and after
// which words; which turns got no reply; what else the figures show
// (Findings); whose timing the gaps follow (Timing); and what would remove
// the gaps, cheapest for the listener first (Remedies).
type Answer struct {
	// Verdict is the report's (Verdict.Result); DecidedBy says what
	// decided it when that is not what the listener hears alone (the
	// expectations of Report.Expect: DecidedByExpectations), "" otherwise.
	Verdict   string `json:"verdict"`
	DecidedBy string `json:"decided_by,omitempty"`
	// Text is the answer in one line.
	Text string `json:"text"`
	// Turns is the number of turns judged; Gaps the interruptions heard
	// in them (GapMs long in all, the longest LongestGapMs), in
	// TurnsWithGaps turns; Glitches the shorter underruns.
	Turns         int     `json:"turns"`
	Gaps          int     `json:"gaps"`
	GapMs         float64 `json:"gap_ms"`
	LongestGapMs  float64 `json:"longest_gap_ms"`
	TurnsWithGaps int     `json:"turns_with_gaps"`
	Glitches      int     `json:"glitches"`
	GlitchMs      float64 `json:"glitch_ms"`
	// NoReply counts the turns whose request failed before any speech:
	// the listener got no reply at all; CutOff those whose request failed
	// after some: the listener hears the reply stop.
	NoReply int `json:"turns_without_reply"`
	CutOff  int `json:"turns_cut_off"`
	// Worst is the longest gap of the worst turn.
	Worst *GapStory `json:"worst,omitempty"`
	// Findings are what the figures show beside the verdict.
	Findings []string `json:"findings"`
	// Timing says whose timing the gaps follow.
	Timing GapTiming `json:"timing"`
	// RemediesFor is the turn the remedies were tried on (the worst);
	// Remedies are what removes its interruptions, cheapest for the
	// listener first, then what does not, and why (Remedies).
	RemediesFor string   `json:"remedies_for,omitempty"`
	Remedies    []Remedy `json:"remedies"`
}

// DecidedByExpectations is Answer.DecidedBy for a verdict its caller's
// expectations decided (Report.Expect).
const DecidedByExpectations = "expectations"

// GapStory is one gap as the listener hears it.
type GapStory struct {
	Turn     string   `json:"turn"`
	Session  string   `json:"session,omitempty"`
	StartMs  float64  `json:"start_ms"`
	LengthMs float64  `json:"length_ms"`
	Cause    Cause    `json:"cause"`
	Position Position `json:"position"`
	// Token is the streamed chunk that came late, ITLMs the latency
	// before it and ToleranceMs the longest it could have been with no
	// gap (Underrun).
	Token       int     `json:"token"`
	ITLMs       float64 `json:"itl_ms"`
	ToleranceMs float64 `json:"tolerance_ms"`
	// Chunk is the speech chunk that came late.
	Chunk int `json:"chunk"`
	// Before is the last words the listener heard before the gap ("" for
	// tokens without text).
	Before string `json:"words_before"`
	// ModelLengthMs is, when the gaps follow a real synthesizer's timing,
	// the voice model's length of the same gap (nil: the model has none
	// there, or the gaps are the model's).
	ModelLengthMs *float64 `json:"model_length_ms,omitempty"`
}

// TimingSource says whose timing a report's gaps follow.
type TimingSource string

// The timings a report's gaps may follow.
const (
	// TimingModel: the voice model's speech durations and the synthesizer
	// model's latencies (Config.Voice, Config.Synth).
	TimingModel TimingSource = "model"
	// TimingMeasured: a real synthesizer's measured speech durations
	// (Config.Durations), with the model's latencies.
	TimingMeasured TimingSource = "measured"
	// TimingRun: the synthesizer timings an `underrun speak` run measured
	// (Config.Measured).
	TimingRun TimingSource = "measured_run"
	// TimingPlayer: a real player's own count of the silence it played
	// (`underrun speak`).
	TimingPlayer TimingSource = "player"
	// TimingRecording: the silences found in a recording (`underrun
	// heard`).
	TimingRecording TimingSource = "recording"
)

// GapTiming says whose timing a report's gaps follow and, where it is
// not the model's, why its figures differ from the model's.
type GapTiming struct {
	Source TimingSource `json:"source"`
	// Synthesizer names the real synthesizer, if any (espeak-ng).
	Synthesizer string `json:"synthesizer,omitempty"`
	// Text says it in a line.
	Text string `json:"text"`
}

// maxGapTurns is how many turns with gaps the answer names.
const maxGapTurns = 3

// listener is what a Report keeps for its Answer, turn by turn.
type listener struct {
	cfg           Config
	turnsWithGaps []string // the first maxGapTurns of them
	gapTurns      int
	longest       time.Duration
	noReply       int
	noReplyTurn   string // the first turn without a reply, and its error
	noReplyErr    string
	cutOff        int    // failed after some speech
	cutOffTurn    string // the first of them, and its error
	cutOffErr     string
	cancelled     int // cancelled, or cut off while it streamed
	nothingToSay  int // ok, and nothing to speak
	cleanSlow     int // TPOT over the reference with no interruption
	cleanSlowMax  float64
	slowTurns     int // TPOT over the reference
	worst         *GapStory
	worstSev      Severity
	worstTurn     *Turn  // a copy, for Remedies
	worstCfg      Config // the configuration it played with
	words         int
	wordSpeech    time.Duration
	spoke         int // turns with speech
}

// listen accounts one turn for the answer.
func (l *listener) listen(r *Report, t *Turn, p *Playout, tr *TurnReport, interrupted, failed, spoke bool) {
	switch {
	case t.Status == StatusError && !spoke:
		l.noReply++
		if l.noReplyTurn == "" {
			l.noReplyTurn, l.noReplyErr = t.ID, t.Error
		}
	case t.Status == StatusError:
		l.cutOff++
		if l.cutOffTurn == "" {
			l.cutOffTurn, l.cutOffErr = t.ID, t.Error
		}
	case failed:
		l.cancelled++
	case !spoke:
		l.nothingToSay++
	}
	if tr.TPOTMs != nil && *tr.TPOTMs > r.TPOTSLOMs {
		l.slowTurns++
		if !interrupted {
			l.cleanSlow++
			l.cleanSlowMax = max(l.cleanSlowMax, *tr.TPOTMs)
		}
	}
	if spoke {
		l.spoke++
	}
	if p == nil {
		return
	}
	if n, ok := countWords(t); ok && p.Speech() > 0 {
		l.words += n
		l.wordSpeech += p.Speech()
	}
	if !interrupted {
		return
	}
	l.gapTurns++
	if len(l.turnsWithGaps) < maxGapTurns {
		l.turnsWithGaps = append(l.turnsWithGaps, t.ID)
	}
	var worst *Underrun
	for i := range p.Underruns {
		u := &p.Underruns[i]
		if u.Class != Interruption || u.Cause == CauseTool {
			continue
		}
		l.longest = max(l.longest, u.Duration)
		if worst == nil || u.Duration > worst.Duration {
			worst = u
		}
	}
	sev := SeverityOf(t.ID, t.Session, p.Underruns)
	if l.worst != nil && !sev.Worse(l.worstSev) {
		return
	}
	l.worstSev = sev
	l.worst = &GapStory{
		Turn: t.ID, Session: t.Session, StartMs: Millis(worst.Start), LengthMs: Millis(worst.Duration),
		Cause: worst.Cause, Position: worst.Position, Token: worst.Token,
		ITLMs: Millis(worst.ITL), ToleranceMs: Millis(worst.Tolerance), Chunk: worst.Chunk,
		Before: p.WordsBefore(*worst, 4),
	}
	c := *t
	c.Chunks, c.ToolCalls = slices.Clone(t.Chunks), slices.Clone(t.ToolCalls)
	l.worstTurn, l.worstCfg = &c, p.Config()
}

// countWords counts the words of t's spoken text; ok is false when some
// token has no text (its speech is no words).
func countWords(t *Turn) (int, bool) {
	n, in := 0, false
	for i := range t.Chunks {
		c := &t.Chunks[i]
		if c.Reasoning {
			continue
		}
		if c.Textless {
			return 0, false
		}
		for _, r := range c.Text {
			space := unicode.IsSpace(r)
			if !space && !in {
				n++
			}
			in = !space
		}
	}
	return n, n > 0
}

// answer builds the report's Answer once its verdict is known.
func (r *Report) answer() *Answer {
	l := &r.listener
	a := &Answer{
		Verdict: r.Verdict.Result, Turns: r.Turns,
		Gaps: r.Interruptions.Count, GapMs: r.Interruptions.TotalMs, LongestGapMs: Millis(l.longest),
		TurnsWithGaps: l.gapTurns, Glitches: r.Glitches.Count, GlitchMs: r.Glitches.TotalMs,
		NoReply: l.noReply, CutOff: l.cutOff, Worst: l.worst, Findings: []string{}, Remedies: []Remedy{},
	}
	var b strings.Builder
	switch {
	case r.Turns == 0:
		b.WriteString("no turns: nothing was heard")
	case l.spoke == 0:
		fmt.Fprintf(&b, "listeners hear nothing: none of the %s has speech", plural(r.Turns, "turn"))
	case a.Gaps == 0:
		fmt.Fprintf(&b, "listeners hear no gap in the %s", r.spokenTurns(plural(l.spoke, "turn")))
		if a.Glitches > 0 {
			fmt.Fprintf(&b, "; %s under %.0f ms (%.0f ms in all)", glitches(a.Glitches), r.Config.InterruptionMs, a.GlitchMs)
		}
	default:
		w := l.worst
		if a.Gaps == 1 {
			fmt.Fprintf(&b, "listeners hear 1 gap of %.0f ms in %s: %s", a.GapMs, r.turnsOf(l.gapTurns), w.phrase())
		} else {
			fmt.Fprintf(&b, "listeners hear %d gaps (%.0f ms in all, the longest %.0f ms) in %s; the worst turn's longest: %s",
				a.Gaps, a.GapMs, a.LongestGapMs, r.turnsOf(l.gapTurns), w.phrase())
		}
		if r.Turns > 1 {
			fmt.Fprintf(&b, " (turn %s)", w.Turn)
		}
		if a.Glitches > 0 {
			fmt.Fprintf(&b, "; and %s under %.0f ms", glitches(a.Glitches), r.Config.InterruptionMs)
		}
	}
	if l.noReply > 0 {
		fmt.Fprintf(&b, "; %d of %s got no reply: the request failed (%s)", l.noReply, plural(r.Turns, "turn"), turnError(l.noReplyTurn, l.noReplyErr))
	}
	if l.cutOff > 0 {
		fmt.Fprintf(&b, "; in %d of %s the reply stops: the request failed mid-reply (%s)", l.cutOff, plural(r.Turns, "turn"), turnError(l.cutOffTurn, l.cutOffErr))
	}
	a.Text = b.String()
	a.Findings = r.findings()
	a.Timing = r.timing()
	if l.worstTurn != nil {
		// a turn the report played plays again; should it not, the
		// report says so rather than lose the rest
		rs, err := Remedies(l.worstCfg, l.worstTurn)
		if err == nil {
			err = r.compareModel(a)
		}
		if err != nil {
			a.Findings = append(a.Findings, fmt.Sprintf("the remedies could not be tried on turn %s: %v", l.worstTurn.ID, err))
		}
		if rs != nil {
			a.RemediesFor, a.Remedies = l.worstTurn.ID, rs
		}
	}
	return a
}

// turnError names a failed turn and its error, if it has one.
func turnError(turn, err string) string {
	if err == "" {
		return "turn " + turn
	}
	return "turn " + turn + ": " + err
}

// glitches writes a count of glitches.
func glitches(n int) string { return fmt.Sprintf("%d %s", n, pick(n, "glitch", "glitches")) }

// turnsOf writes "n of N turns", of the turns with speech.
func (r *Report) turnsOf(n int) string {
	return fmt.Sprintf("%d of %s", n, r.spokenTurns(fmt.Sprintf("%d turns", r.listener.spoke)))
}

// spokenTurns adds to a count of the turns with speech how many there are
// in all, where some have none.
func (r *Report) spokenTurns(count string) string {
	if r.listener.spoke == r.Turns {
		return count
	}
	return fmt.Sprintf("%s with speech (%d in all)", count, r.Turns)
}

// phrase says what caused the gap, and after which words.
func (g *GapStory) phrase() string {
	var s string
	switch g.Cause {
	case CauseStall:
		s = fmt.Sprintf("a %.0f ms token stall", g.ITLMs)
	case CausePace:
		s = fmt.Sprintf("tokens slower than speech (%.0f ms apart)", g.ITLMs)
	case CauseStartup:
		s = "a start on too thin a buffer"
	case CauseHeld:
		s = "the chunking policy holding text back"
	case CauseSynthesizer:
		s = "a synthesizer running late"
	case CauseTransport:
		s = "the output transport holding audio back"
	default:
		s = "a gap of no known cause"
	}
	if g.Before != "" {
		return fmt.Sprintf("%s after %q", s, g.Before)
	}
	return fmt.Sprintf("%s %.0f ms into the turn", s, g.StartMs)
}

// findings says what the figures show beside the verdict.
func (r *Report) findings() []string {
	l := &r.listener
	out := []string{}
	if l.cleanSlow > 0 {
		out = append(out, fmt.Sprintf("TPOT %.1f ms > %.0f ms in %d of %d turns, yet no listener hears a gap in %s: the buffer absorbed it",
			l.cleanSlowMax, r.TPOTSLOMs, l.cleanSlow, r.TPOT.Count, pick(l.cleanSlow, "it", "them")))
	}
	if l.cancelled > 0 {
		out = append(out, fmt.Sprintf("%s cancelled or cut off while streaming (not judged: the client ended %s)",
			plural(l.cancelled, "request"), pick(l.cancelled, "it", "them")))
	}
	if l.nothingToSay > 0 {
		out = append(out, fmt.Sprintf("%s ended with nothing to speak (reasoning only, or no words)", plural(l.nothingToSay, "turn")))
	}
	return out
}

// timing says whose timing the gaps follow.
func (r *Report) timing() GapTiming {
	t := r.opts.Timing
	cfg := r.listener.cfg
	if t.Source == "" {
		switch {
		case cfg.Measured != nil:
			t.Source = TimingRun
		case cfg.Durations != nil:
			t.Source = TimingMeasured
		default:
			t.Source = TimingModel
		}
	}
	if t.Synthesizer == "" {
		if e, ok := cfg.Durations.(interface{ Engine() tts.Engine }); ok {
			t.Synthesizer = e.Engine().Name()
		}
	}
	if t.Text != "" {
		return t
	}
	voice := fmt.Sprintf("%.0f wpm articulation", cfg.Voice.WPM)
	if l := &r.listener; l.words > 0 && l.wordSpeech > 0 {
		voice += fmt.Sprintf(", %.0f wpm with its pauses on this text", float64(l.words)/l.wordSpeech.Minutes())
	}
	switch t.Source {
	case TimingModel:
		t.Text = "the voice model's (" + voice + "), no real synthesizer"
	case TimingMeasured:
		name := t.Synthesizer
		if name == "" {
			name = "a real synthesizer"
		}
		how := ""
		if _, ok := cfg.Durations.(ContextDurations); ok {
			how = " (each sentence spoken whole, its length shared out to the chunks that hold it)"
		}
		t.Text = name + " measured" + how + ": its speech durations replace the voice model's; latency and RTF are the model's"
	case TimingRun:
		t.Text = "the synthesizer as an underrun speak run measured it (--measured); chunks it did not measure follow the voice model (" + voice + ")"
	case TimingPlayer:
		t.Text = "a real player's own count of the silence it played"
	case TimingRecording:
		t.Text = "the silences found in a recording"
	}
	return t
}

// compareModel sets, for gaps that do not follow the model's timing, the
// voice model's length of the worst gap, and says why they differ.
func (r *Report) compareModel(a *Answer) error {
	if a.Timing.Source == TimingModel || a.Worst == nil {
		return nil
	}
	real, model := r.listener.worstCfg, r.listener.worstCfg
	model.Durations, model.Measured = nil, nil
	var ps [2]*Playout
	for i, c := range []Config{real, model} {
		p, err := NewPlayout(c, r.listener.worstTurn.ID)
		if err != nil {
			return err
		}
		if err := p.PlayTurn(r.listener.worstTurn); err != nil {
			return err
		}
		ps[i] = p
	}
	w := a.Worst
	var mu *Underrun
	for i := range ps[1].Underruns {
		if u := &ps[1].Underruns[i]; u.Token == w.Token && u.Cause != CauseTool {
			mu = u
			break
		}
	}
	before := func(p *Playout) time.Duration {
		var d time.Duration
		for _, c := range p.Chunks {
			if c.Last < w.Token {
				d += c.Audio
			}
		}
		return d
	}
	realBefore, modelBefore := before(ps[0]), before(ps[1])
	// and how long the synthesizer took to the late chunk's first audio
	latency := func(p *Playout, c int) (time.Duration, bool) {
		if c < 0 || c >= len(p.Chunks) {
			return 0, false
		}
		return p.Chunks[c].Ready - p.Chunks[c].Release, true
	}
	why := ""
	if name := a.Timing.Synthesizer; name != "" && realBefore != modelBefore {
		why = fmt.Sprintf(": %s speaks the text before it in %.0f ms, the voice model in %.0f ms", name, Millis(realBefore), Millis(modelBefore))
		rl, ok1 := latency(ps[0], w.Chunk)
		ml, ok2 := 0*time.Second, false
		if mu != nil {
			ml, ok2 = latency(ps[1], mu.Chunk)
		}
		if ok1 && ok2 && (rl-ml > time.Millisecond || ml-rl > time.Millisecond) {
			why += fmt.Sprintf(", and has the audio after it %.0f ms after its text, the model %.0f ms", Millis(rl), Millis(ml))
		}
	}
	if mu == nil {
		a.Timing.Text += fmt.Sprintf("; the voice model alone has no gap at token %d%s", w.Token, why)
		return nil
	}
	w.ModelLengthMs = ptr(Millis(mu.Duration))
	a.Timing.Text += fmt.Sprintf("; the voice model alone puts the %.0f ms gap at %.0f ms%s", w.LengthMs, Millis(mu.Duration), why)
	return nil
}

// WordsBefore returns the last n words the listener heard before the gap
// u of the turn p played ("" when they are tokens without text): the
// spoken text up to the speech chunk that came late.
func (p *Playout) WordsBefore(u Underrun, n int) string {
	if u.Chunk < 0 || u.Chunk >= len(p.Chunks) || p.Textless(p.Chunks[u.Chunk]) || u.Chunk > 0 && p.Textless(p.Chunks[u.Chunk-1]) {
		return ""
	}
	words := strings.Fields(string(p.text[:p.Chunks[u.Chunk].From]))
	return strings.Join(words[max(0, len(words)-n):], " ")
}

// writeText writes the answer as the text report opens: the verdict and
// the answer, the findings, whose timing it is and the remedies.
func (a *Answer) writeText(b *strings.Builder) {
	by := ""
	if a.DecidedBy != "" {
		by = " by the " + a.DecidedBy
	}
	fmt.Fprintf(b, "%s%s: %s\n", strings.ToUpper(a.Verdict), by, a.Text)
	for _, f := range a.Findings {
		fmt.Fprintf(b, "  - %s\n", f)
	}
	fmt.Fprintf(b, "timing: %s\n", a.Timing.Text)
	if len(a.Remedies) == 0 {
		return
	}
	fmt.Fprintf(b, "what removes it in turn %s, cheapest for the listener first (each played again in the engine):\n", a.RemediesFor)
	for _, rem := range a.Remedies {
		if rem.Removes {
			fmt.Fprintf(b, "  - %s\n", rem.Text)
		}
	}
	for _, rem := range a.Remedies {
		if !rem.Removes {
			fmt.Fprintf(b, "  not: %s\n", rem.Text)
		}
	}
}

// RecordingAnswer is the answer for gaps found in a recording that has no
// turns to explain them (no trace): how many the listener hears and how
// long; the causes and remedies need the trace. The verdict fails on an
// interruption.
func RecordingAnswer(recording string, us []Underrun) *Answer {
	t := TallyUnderruns(us)
	a := &Answer{Verdict: "pass", Gaps: t.Interruptions, GapMs: Millis(t.Interrupted), Glitches: t.Glitches,
		GlitchMs: Millis(t.Silence - t.Interrupted), Findings: []string{}, Remedies: []Remedy{},
		Timing: GapTiming{Source: TimingRecording, Text: "the silences found in the recording " + recording}}
	var longest time.Duration
	for _, u := range us {
		if u.Class == Interruption && u.Cause != CauseTool {
			longest = max(longest, u.Duration)
		}
	}
	a.LongestGapMs = Millis(longest)
	switch t.Interruptions {
	case 0:
		a.Text = "listeners hear no gap in " + recording
	case 1:
		a.Text = fmt.Sprintf("listeners hear 1 gap of %.0f ms in %s", a.GapMs, recording)
	default:
		a.Text = fmt.Sprintf("listeners hear %d gaps (%.0f ms in all, the longest %.0f ms) in %s", a.Gaps, a.GapMs, a.LongestGapMs, recording)
	}
	if t.Glitches > 0 {
		a.Text += fmt.Sprintf("; and %s (%.0f ms)", glitches(t.Glitches), a.GlitchMs)
	}
	if t.Interruptions > 0 {
		a.Verdict = "fail"
		a.Text += "; their causes and remedies need the trace of the turns"
	}
	return a
}

// WriteText writes the answer as a text report opens, and a blank line.
func (a *Answer) WriteText(w io.Writer) error {
	var b strings.Builder
	a.writeText(&b)
	b.WriteString("\n")
	_, err := io.WriteString(w, b.String())
	return err
}
