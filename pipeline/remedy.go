package pipeline

import (
	"fmt"
	"slices"
	"time"

	"github.com/speech-pipeline/underrun/tts"
)

// RemedyKind names a change that may remove a turn's interruptions.
type RemedyKind string

// The remedies Remedies tries, in the order they rank at equal cost.
const (
	// RemedyStallTimeout: no inter-token latency above a limit (a stall
	// timeout that hedges the request or falls back to another replica);
	// the deployment pays, not the listener.
	RemedyStallTimeout RemedyKind = "stall_timeout"
	// RemedyTPOT: tokens at a steady pace, no faster than the largest
	// constant TPOT with no interruption (MaxTPOT).
	RemedyTPOT RemedyKind = "max_tpot"
	// RemedySendAhead: the output transport sends audio ahead of the
	// listener's play (tts.Transport.Lead, Pipecat's open pull request
	// #4855, audio_out_send_lead_secs).
	RemedySendAhead RemedyKind = "send_ahead"
	// RemedyFiller: a keep-alive sound once the player has been dry for
	// less than the interruption threshold.
	RemedyFiller RemedyKind = "filler"
	// RemedyPreroll: the player starts on a buffer (Config.Preroll).
	RemedyPreroll RemedyKind = "preroll"
	// RemedyChunking: another chunking policy.
	RemedyChunking RemedyKind = "chunking"
)

// remedyOrder ranks remedies of equal cost.
var remedyOrder = []RemedyKind{RemedyStallTimeout, RemedyTPOT, RemedySendAhead, RemedyFiller, RemedyPreroll, RemedyChunking}

// RemedyPolicies are the chunking policies the chunking remedy tries.
var RemedyPolicies = []string{"token", "word", "sentence", "pipecat", "livekit", "livekit-basic", "elevenlabs-schedule", "cartesia", "timer:500ms"}

// maxLead is the longest send-ahead lead the send-ahead remedy tries.
const maxLead = time.Second

// Remedy is one change tried on a turn with interruptions: the turn played
// again with it (Apply) has none (Removes), at a cost to the listener.
type Remedy struct {
	Kind RemedyKind `json:"kind"`
	// Setting is the change, as a flag or a figure the deployment must
	// keep; Value is its figure (the stall limit, the TPOT, the lead,
	// the filler's delay, the pre-roll) and Policy the chunking policy.
	Setting string        `json:"setting"`
	Value   time.Duration `json:"-"`
	ValueMs float64       `json:"value_ms,omitempty"`
	Policy  string        `json:"policy,omitempty"`
	// Removes says that the turn, played again with the change, has no
	// interruption.
	Removes bool `json:"removes"`
	// CostMs is what the listener pays, in milliseconds: the wait added
	// before the first audio (pre-roll, chunking), or the gap still heard
	// with a sound in it (filler); 0 for a change the deployment pays for.
	CostMs float64 `json:"listener_cost_ms"`
	// FirstAudioMs is the turn's first audio before the change and
	// NewFirstAudioMs after it, for the changes that move it.
	FirstAudioMs    float64 `json:"first_audio_ms,omitempty"`
	NewFirstAudioMs float64 `json:"new_first_audio_ms,omitempty"`
	// Text says it in a line.
	Text string `json:"text"`
}

// Apply returns the configuration and turn with the change made: the
// stall limit (CapStalls) and the steady TPOT (Retime) change the turn,
// the others the configuration. The token timing and the chunking leave
// Config.Measured out, as MaxTPOT does; the filler is a keep-alive
// (Filler.Cover says what of each gap it covers).
func (rem Remedy) Apply(cfg Config, t *Turn) (Config, *Turn, error) {
	switch rem.Kind {
	case RemedyStallTimeout:
		cfg.Measured = nil
		t = CapStalls(t, rem.Value)
	case RemedyTPOT:
		cfg.Measured = nil
		if len(t.Chunks) > 0 {
			t = Retime(t, t.Chunks[0].At, rem.Value)
		}
	case RemedySendAhead:
		cfg.Transport.Lead = rem.Value
	case RemedyFiller:
		cfg.Filler = Filler{Kind: FillerKeepalive, Delay: rem.Value}
	case RemedyPreroll:
		cfg.Preroll = rem.Value
	case RemedyChunking:
		pol, err := tts.ParsePolicy(rem.Policy)
		if err != nil {
			return cfg, t, err
		}
		cfg.Measured, cfg.Policy = nil, pol
	default:
		return cfg, t, fmt.Errorf("remedy %q: unknown kind", rem.Kind)
	}
	return cfg, t, nil
}

// Interrupts reports whether the turn p played, with the remedy made,
// still has an interruption: one that is no tool-call silence, or, for the
// filler, one whose silence before its keep-alive sound is an
// interruption's length.
func (rem Remedy) Interrupts(p *Playout) bool {
	for _, u := range interruptions(p) {
		if rem.Kind != RemedyFiller || p.cfg.Filler.Cover(u.Duration, p.cfg).Silent >= p.cfg.Interruption {
			return true
		}
	}
	return false
}

// remedyRun plays one turn again with changed configurations.
type remedyRun struct {
	turn *Turn
	base *Playout // the turn as cfg plays it
	cfg  Config
	ttfa time.Duration
}

// check applies rem to the turn, plays it, and reports whether it has no
// interruption left, and when its first audio is heard.
func (r *remedyRun) check(rem Remedy) (clean bool, ttfa time.Duration, p *Playout, err error) {
	cfg, t, err := rem.Apply(r.cfg, r.turn)
	if err != nil {
		return false, 0, nil, err
	}
	if p, err = NewPlayout(cfg, t.ID); err != nil {
		return false, 0, nil, err
	}
	if err = p.PlayTurn(t); err != nil {
		return false, 0, nil, err
	}
	ttfa, _ = p.Started()
	return !rem.Interrupts(p), ttfa, p, nil
}

// Remedies tries, on turn t played with cfg, each change that may remove
// its interruptions, and plays the turn again with it (Remedy.Apply) to
// check it does: the largest stall limit (MaxStall), the largest constant
// TPOT (MaxTPOT), the smallest send-ahead lead of the output transport, a
// keep-alive filler, the smallest pre-roll (Playout.MinPreroll) and the
// chunking policies of RemedyPolicies. It returns those that remove them,
// the cheapest for the listener first, then those that do not, each
// saying why; nil when t plays with no interruption.
func Remedies(cfg Config, t *Turn) ([]Remedy, error) {
	r := &remedyRun{turn: t, cfg: cfg}
	base, err := NewPlayout(cfg, t.ID)
	if err != nil {
		return nil, err
	}
	if err := base.PlayTurn(t); err != nil {
		return nil, err
	}
	if !interrupts(base.Underruns) {
		return nil, nil
	}
	r.base = base
	r.ttfa, _ = base.Started()
	var out []Remedy
	for _, try := range []func() (Remedy, error){r.stallTimeout, r.steadyTPOT, r.sendAhead, r.filler, r.preroll, r.chunking} {
		rem, err := try()
		if err != nil {
			return nil, err
		}
		rem.ValueMs = Millis(rem.Value)
		out = append(out, rem)
	}
	slices.SortStableFunc(out, func(a, b Remedy) int {
		switch {
		case a.Removes != b.Removes:
			if a.Removes {
				return -1
			}
			return 1
		case a.Removes && a.CostMs != b.CostMs:
			if a.CostMs < b.CostMs {
				return -1
			}
			return 1
		}
		return slices.Index(remedyOrder, a.Kind) - slices.Index(remedyOrder, b.Kind)
	})
	return out, nil
}

// interruptions returns the interruptions of p (no tool-call silence).
func interruptions(p *Playout) []Underrun {
	var out []Underrun
	for _, u := range p.Underruns {
		if u.Class == Interruption && u.Cause != CauseTool {
			out = append(out, u)
		}
	}
	return out
}

// firstAudio describes a change of the first audio, and sets what the
// listener pays for it (no less than nothing).
func (r *remedyRun) firstAudio(rem *Remedy, ttfa time.Duration) string {
	rem.FirstAudioMs, rem.NewFirstAudioMs = Millis(r.ttfa), Millis(ttfa)
	rem.CostMs = max(0, Millis(ttfa-r.ttfa))
	return fmt.Sprintf("first audio %.0f -> %.0f ms (%+.0f ms)", rem.FirstAudioMs, rem.NewFirstAudioMs, Millis(ttfa-r.ttfa))
}

func (r *remedyRun) stallTimeout() (Remedy, error) {
	rem := Remedy{Kind: RemedyStallTimeout, Setting: "no stall limit"}
	limit, ok, err := MaxStall(r.cfg, r.turn)
	if err != nil || !ok {
		rem.Text = "no stall limit removes it: the turn is interrupted even with every token stall cut to nothing"
		return rem, err
	}
	rem.Value = limit
	if rem.Removes, _, _, err = r.check(rem); err != nil {
		return rem, err
	}
	rem.Setting = fmt.Sprintf("token stalls of at most %s", fmtDur(limit))
	rem.Text = fmt.Sprintf("no token stall over %s (a stall timeout: hedge the request, or fall back to another replica): no interruption; costs the listener nothing",
		fmtDur(limit))
	return rem, nil
}

func (r *remedyRun) steadyTPOT() (Remedy, error) {
	rem := Remedy{Kind: RemedyTPOT, Setting: "no steady TPOT"}
	tpot, ok, err := MaxTPOT(r.cfg, r.turn, nil)
	if err != nil || !ok {
		rem.Text = "no steady TPOT removes it: the synthesizer or the chunking interrupts the turn even with instant tokens"
		return rem, err
	}
	rem.Value = tpot
	if rem.Removes, _, _, err = r.check(rem); err != nil {
		return rem, err
	}
	rem.Setting = fmt.Sprintf("a steady TPOT of at most %s", fmtDur(tpot))
	rem.Text = fmt.Sprintf("a steady TPOT of %s or less, no stalls (the largest constant TPOT): no interruption; costs the listener nothing", fmtDur(tpot))
	return rem, nil
}

func (r *remedyRun) sendAhead() (Remedy, error) {
	rem := Remedy{Kind: RemedySendAhead, Setting: "no send-ahead lead"}
	why := "the transport held the audio for whole frames or its clock, which a lead does not change"
	for _, u := range interruptions(r.base) {
		if u.Cause != CauseTransport {
			why = fmt.Sprintf("the audio after the %s gap (cause %s) did not exist until it ended; a lead sends only audio that is ready",
				fmtDur(u.Duration), u.Cause)
			break
		}
	}
	if r.cfg.Transport.None() {
		rem.Text = "a send-ahead lead (Pipecat PR #4855, audio_out_send_lead_secs): " + why
		return rem, nil
	}
	var failed error
	clean := func(lead time.Duration) bool {
		ok, _, _, err := r.check(Remedy{Kind: RemedySendAhead, Value: lead})
		if err != nil {
			failed = err
		}
		return ok
	}
	if !clean(maxLead) {
		rem.Text = fmt.Sprintf("no send-ahead lead up to %s (Pipecat PR #4855, audio_out_send_lead_secs) removes it: %s", maxLead, why)
		return rem, failed
	}
	// the smallest lead that removes it, in whole milliseconds
	lo, hi := time.Duration(0), maxLead/time.Millisecond // lo does not, hi does
	for hi-lo > 1 {
		mid := (lo + hi) / 2
		if clean(mid * time.Millisecond) {
			hi = mid
		} else {
			lo = mid
		}
	}
	rem.Value = hi * time.Millisecond
	if rem.Removes, _, _, failed = r.check(rem); failed != nil {
		return rem, failed
	}
	rem.Setting = fmt.Sprintf("--transport %s,lead=%s", r.cfg.Transport.Name, rem.Value)
	rem.Text = fmt.Sprintf("the transport sending audio %s ahead of the listener (Pipecat PR #4855, audio_out_send_lead_secs; open): no interruption; costs the listener nothing", rem.Value)
	return rem, nil
}

func (r *remedyRun) filler() (Remedy, error) {
	rem := Remedy{Kind: RemedyFiller, Setting: "no filler", Value: r.cfg.Interruption - time.Millisecond}
	if rem.Value <= 0 {
		rem.Text = "no filler removes it: the interruption threshold leaves no time to start one"
		return rem, nil
	}
	clean, _, p, err := r.check(rem)
	if err != nil {
		return rem, err
	}
	rem.Removes = clean
	var covered, gaps time.Duration
	for _, u := range interruptions(p) {
		covered += p.cfg.Filler.Cover(u.Duration, p.cfg).Covered
		gaps += u.Duration
	}
	rem.CostMs = Millis(gaps)
	rem.Setting = "keepalive:" + rem.Value.String()
	rem.Text = fmt.Sprintf("a keep-alive sound after %s of a dry player: no silence of %s or more; the listener hears %s of sound in %s of gaps",
		fmtDur(rem.Value), fmtDur(r.cfg.Interruption), fmtDur(covered), fmtDur(gaps))
	return rem, nil
}

func (r *remedyRun) preroll() (Remedy, error) {
	rem := Remedy{Kind: RemedyPreroll, Value: r.base.MinPreroll}
	clean, ttfa, _, err := r.check(rem)
	if err != nil {
		return rem, err
	}
	rem.Removes = clean
	rem.Setting = "--preroll " + rem.Value.String()
	cost := r.firstAudio(&rem, ttfa)
	if !clean {
		rem.Text = fmt.Sprintf("the smallest pre-roll with no underrun of the player (%s) leaves an interruption", rem.Value)
		return rem, nil
	}
	rem.Text = fmt.Sprintf("--preroll %s (the smallest with no underrun): no interruption; %s", rem.Value, cost)
	return rem, nil
}

func (r *remedyRun) chunking() (Remedy, error) {
	rem := Remedy{Kind: RemedyChunking, Setting: "no chunking policy"}
	current := ""
	if r.cfg.Policy != nil {
		current = r.cfg.Policy.Name()
	}
	var bestTTFA time.Duration
	tried := 0
	for _, name := range RemedyPolicies {
		pol, err := tts.ParsePolicy(name)
		if err != nil {
			return rem, err
		}
		if pol.Name() == current {
			continue
		}
		tried++
		clean, ttfa, _, err := r.check(Remedy{Kind: RemedyChunking, Policy: name})
		if err != nil {
			return rem, err
		}
		if clean && (rem.Policy == "" || ttfa < bestTTFA) {
			rem.Policy, bestTTFA = name, ttfa
		}
	}
	if rem.Policy == "" {
		rem.Text = fmt.Sprintf("no chunking policy removes it (%d tried: %s)", tried, joinNames(RemedyPolicies, current))
		return rem, nil
	}
	rem.Removes = true
	rem.Setting = "--chunking " + rem.Policy
	rem.Text = fmt.Sprintf("--chunking %s: no interruption; %s", rem.Policy, r.firstAudio(&rem, bestTTFA))
	return rem, nil
}

// joinNames lists names but skip, comma separated.
func joinNames(names []string, skip string) string {
	out := ""
	for _, n := range names {
		if n == skip {
			continue
		}
		if out != "" {
			out += ", "
		}
		out += n
	}
	return out
}

// fmtDur writes a duration in milliseconds with one decimal at most.
func fmtDur(d time.Duration) string {
	return fmt.Sprintf("%.4g ms", float64(d.Round(100*time.Microsecond))/float64(time.Millisecond))
}

// CapStalls returns a copy of t in which no inter-token latency (less the
// tool calls' time, as Turn.ITLs counts it) is longer than limit: each
// chunk after a longer one, and each tool call after it, comes that much
// sooner, as if a stall timeout had cut it. The TTFT is kept.
func CapStalls(t *Turn, limit time.Duration) *Turn {
	out := *t
	out.Chunks = slices.Clone(t.Chunks)
	out.ToolCalls = slices.Clone(t.ToolCalls)
	tools := t.ToolPauses()
	var shift time.Duration
	j := 0
	for i := 1; i < len(t.Chunks); i++ {
		from, to := t.Chunks[i-1].At, t.Chunks[i].At
		for ; j < len(out.ToolCalls) && t.ToolCalls[j].At < to; j++ {
			out.ToolCalls[j].At -= shift
		}
		if itl := to - from - tools.Within(from, to); itl > limit {
			shift += itl - limit
		}
		out.Chunks[i].At = to - shift
	}
	for ; j < len(out.ToolCalls); j++ {
		out.ToolCalls[j].At -= shift
	}
	return &out
}

// MaxStall answers "how long may a token stall?" for one turn: the
// largest limit (to 10 µs) such that the turn, with every inter-token
// latency cut to it (CapStalls), plays with no interruption. ok is false
// when even a limit of nothing leaves an interruption (the stream's pace,
// the synthesizer or the policy alone cause it). A turn that plays clean
// as it is gives its longest ITL. Config.Measured is left out, as MaxTPOT
// does.
func MaxStall(cfg Config, t *Turn) (limit time.Duration, ok bool, err error) {
	cfg.Measured = nil
	p, err := NewPlayout(cfg, t.ID)
	if err != nil {
		return 0, false, err
	}
	var longest time.Duration
	for itl := range t.ITLs() {
		longest = max(longest, itl)
	}
	clean := func(limit time.Duration) bool {
		if p.PlayTurn(CapStalls(t, limit)) != nil {
			return false
		}
		return !interrupts(p.Underruns)
	}
	if clean(longest) {
		return longest, true, nil
	}
	if !clean(0) {
		return 0, false, nil
	}
	return largest(0, longest, maxTPOTResolution, clean), true, nil
}

// largest returns, to within resolution, the largest value in [lo, hi)
// for which clean holds, given that it holds at lo and not at hi and that
// it holds on an interval from lo.
func largest(lo, hi, resolution time.Duration, clean func(time.Duration) bool) time.Duration {
	for hi-lo > resolution {
		mid := lo + (hi-lo)/2
		if clean(mid) {
			lo = mid
		} else {
			hi = mid
		}
	}
	return lo
}
