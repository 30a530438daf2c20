package sim

import (
	"context"
	"errors"
	"fmt"
	"math"
	"strconv"
	"strings"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

// Param names a quantity a sweep varies or an inversion solves for.
type Param string

// The parameters. Durations are carried as float64 nanoseconds.
const (
	// ParamTPOT is the decode pace (constant TPOT, or the mean ITL of a
	// sampled or empirical timing).
	ParamTPOT Param = "tpot"
	// ParamBatch is the roofline batch size.
	ParamBatch Param = "batch"
	// ParamRate is the roofline prefill arrival rate (requests/s).
	ParamRate Param = "rate"
	// ParamPrompt is the mean prompt length of the interfering prefills.
	ParamPrompt Param = "prompt"
	// ParamTTFA is the synthesizer's time to first audio.
	ParamTTFA Param = "ttfa"
	// ParamPreroll is the player's pre-roll.
	ParamPreroll Param = "preroll"
	// ParamSessions is the number of sessions sharing the TTS server.
	ParamSessions Param = "sessions"
)

// Params lists the parameters in help order.
var Params = []Param{ParamTPOT, ParamBatch, ParamRate, ParamPrompt, ParamTTFA, ParamPreroll, ParamSessions}

// ErrParam reports a parameter that does not exist or does not apply.
var ErrParam = errors.New("invalid parameter")

func paramError(p Param, timing string) error {
	return fmt.Errorf("%w: %q does not apply to a %s timing", ErrParam, p, timing)
}

// ParseParam parses a parameter name.
func ParseParam(s string) (Param, error) {
	for _, p := range Params {
		if string(p) == strings.ToLower(strings.TrimSpace(s)) {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w %q: want one of %s", ErrParam, s, paramNames())
}

func paramNames() string {
	s := make([]string, len(Params))
	for i, p := range Params {
		s[i] = string(p)
	}
	return strings.Join(s, ", ")
}

// IsDuration reports whether the parameter is a time.
func (p Param) IsDuration() bool {
	return p == ParamTPOT || p == ParamTTFA || p == ParamPreroll
}

// Increasing reports whether more of the parameter helps speech (only the
// pre-roll does; more TPOT, batch, load, TTS latency or sessions on the
// TTS server hurts).
func (p Param) Increasing() bool { return p == ParamPreroll }

// integer reports whether the parameter takes whole values only.
func (p Param) integer() bool { return p == ParamBatch || p == ParamSessions }

// Format writes a value of the parameter as people read it.
func (p Param) Format(v float64) string {
	switch {
	case p.IsDuration():
		return time.Duration(v).Round(10 * time.Microsecond).String()
	case p == ParamRate:
		return strconv.FormatFloat(v, 'g', 4, 64)
	}
	return strconv.FormatFloat(math.Round(v), 'f', 0, 64)
}

// parseValue parses one value of the parameter.
func (p Param) parseValue(s string) (float64, error) {
	s = strings.TrimSpace(s)
	if p.IsDuration() {
		d, err := time.ParseDuration(s)
		if err != nil {
			return 0, fmt.Errorf("%w: %s wants a duration such as 50ms, got %q", ErrParam, p, s)
		}
		return float64(d), nil
	}
	v, err := strconv.ParseFloat(s, 64)
	if err != nil || math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, fmt.Errorf("%w: %s wants a number, got %q", ErrParam, p, s)
	}
	return v, nil
}

// Setup is what a simulation runs: a generator and a speech model, and
// optionally the TTS server the synthesizer shares with other sessions.
type Setup struct {
	Gen    Generator
	Config pipeline.Config
	// Server, when set, sets each Monte Carlo turn's time to first audio
	// and RTF from the streams it holds at once (Config.Synth's are those
	// of its typical load, for single turns); nil: Config.Synth alone.
	Server *TTSServer
	// ToolCalls pause every turn for a tool call (InsertToolCalls).
	ToolCalls []ToolCall
}

// WithServer returns a copy with the TTS server srv (nil: none), its
// typical load's time to first audio and RTF set in Config.Synth.
func (s Setup) WithServer(srv *TTSServer) Setup {
	s.Server = srv
	if srv != nil {
		s.Config.Synth.TTFA, s.Config.Synth.RTF = srv.At(srv.Typical())
	}
	return s
}

// With returns a copy with one parameter set.
func (s Setup) With(p Param, v float64) (Setup, error) {
	switch p {
	case ParamSessions:
		if s.Server == nil {
			return s, fmt.Errorf("%w: %s needs a tts server", ErrParam, p)
		}
		srv := *s.Server
		srv.Sessions = int(math.Round(v))
		s = s.WithServer(&srv)
	case ParamTTFA:
		if s.Server != nil {
			return s, fmt.Errorf("%w: %s is set by the tts server's load curve (vary sessions instead)", ErrParam, p)
		}
		s.Config.Synth.TTFA = time.Duration(v)
	case ParamPreroll:
		s.Config.Preroll = time.Duration(v)
	default:
		g, err := s.Gen.With(p, v)
		if err != nil {
			return s, err
		}
		s.Gen = g
	}
	return s, nil
}

// Run simulates the setup.
func (s Setup) Run(ctx context.Context, opts Options) (*Result, error) {
	return run(ctx, &s, opts)
}

// Sweep varies one parameter from From to To in steps of Step.
type Sweep struct {
	Param          Param
	From, To, Step float64
}

// maxSweepPoints bounds a sweep's length.
const maxSweepPoints = 1000

// ParseSweep parses PARAM=FROM:TO:STEP, e.g. tpot=20ms:120ms:10ms or
// batch=8:128:8.
func ParseSweep(s string) (Sweep, error) {
	name, spec, ok := strings.Cut(s, "=")
	if !ok {
		return Sweep{}, fmt.Errorf("%w: sweep %q: want PARAM=FROM:TO:STEP, e.g. tpot=20ms:120ms:10ms", ErrParam, s)
	}
	p, err := ParseParam(name)
	if err != nil {
		return Sweep{}, err
	}
	parts := strings.Split(spec, ":")
	if len(parts) != 3 {
		return Sweep{}, fmt.Errorf("%w: sweep %q: want FROM:TO:STEP after %s=", ErrParam, s, p)
	}
	var v [3]float64
	for i, part := range parts {
		if v[i], err = p.parseValue(part); err != nil {
			return Sweep{}, fmt.Errorf("sweep %q: %w", s, err)
		}
	}
	sw := Sweep{Param: p, From: v[0], To: v[1], Step: v[2]}
	switch {
	case sw.From < 0 || sw.To < sw.From:
		return sw, fmt.Errorf("%w: sweep %q: want 0 <= FROM <= TO", ErrParam, s)
	case !(sw.Step > 0):
		return sw, fmt.Errorf("%w: sweep %q: STEP must be positive", ErrParam, s)
	case (sw.To-sw.From)/sw.Step >= maxSweepPoints:
		return sw, fmt.Errorf("%w: sweep %q has more than %d points", ErrParam, s, maxSweepPoints)
	}
	return sw, nil
}

// Values returns the swept values, From and To included.
func (sw Sweep) Values() []float64 {
	n := int(math.Floor((sw.To-sw.From)/sw.Step+1e-9)) + 1
	v := make([]float64, n)
	for i := range v {
		v[i] = sw.From + float64(i)*sw.Step
	}
	return v
}

// String writes the sweep as ParseSweep reads it.
func (sw Sweep) String() string {
	return fmt.Sprintf("%s=%s:%s:%s", sw.Param, sw.Param.Format(sw.From), sw.Param.Format(sw.To), sw.Param.Format(sw.Step))
}

// Point is one value of a sweep and its result.
type Point struct {
	Value  float64
	Result *Result
}

// RunSweep simulates the setup at every value of the sweep, each with the
// same turns (the same seed: common random numbers, so differences come
// from the parameter, not from chance).
func RunSweep(ctx context.Context, s Setup, sw Sweep, opts Options) ([]Point, error) {
	var out []Point
	for _, v := range sw.Values() {
		set, err := s.With(sw.Param, v)
		if err != nil {
			return nil, err
		}
		r, err := set.Run(ctx, opts)
		if err != nil {
			return nil, fmt.Errorf("%s = %s: %w", sw.Param, sw.Param.Format(v), err)
		}
		out = append(out, Point{Value: v, Result: r})
	}
	return out, nil
}

// Answer is the result of an inversion.
type Answer struct {
	Param Param
	// Value is the largest (smallest, for the pre-roll) value whose
	// goodput meets Target; Found is false when none in [Lo, Hi] does.
	Value float64
	Found bool
	// AtBound is true when the whole range meets the target, so the true
	// answer lies beyond Hi (or below Lo for the pre-roll).
	AtBound bool
	Target  float64
	Lo, Hi  float64
	// Goodput is the goodput at Value.
	Goodput float64
	// Limit, when set, says why nothing lies beyond the range's edge
	// ("the most that fits in memory"): an answer at that edge is the
	// answer, not a lower bound of it. Find sets it.
	Limit string
}

// String says the answer in one sentence, in the listener's terms: the
// value that keeps the target share of turns free of interruptions
// (speech goodput), e.g. "TPOT up to 56.12ms keeps 99% of turns free of
// interruptions (speech goodput 1.0000 there, target 0.99)".
func (a Answer) String() string {
	name, keeps := a.Param.Title(), fmt.Sprintf("keeps %s of turns free of interruptions", percent(a.Target))
	within := fmt.Sprintf("%s..%s", a.Param.Format(a.Lo), a.Param.Format(a.Hi))
	switch {
	case !a.Found:
		return fmt.Sprintf("no %s in %s %s (speech goodput target %g)", name, within, keeps, a.Target)
	case a.AtBound:
		edge, beyond := a.Hi, "more may too"
		if a.Param.Increasing() {
			edge, beyond = a.Lo, "less may too"
		}
		if a.Limit != "" {
			beyond = a.Param.Format(edge) + " is " + a.Limit
		}
		return fmt.Sprintf("every %s in %s %s; %s (speech goodput target %g)", name, within, keeps, beyond, a.Target)
	}
	bound := "up to"
	if a.Param.Increasing() {
		bound = "of at least"
	}
	return fmt.Sprintf("%s %s %s %s (speech goodput %.4f there, target %g)", name, bound, a.Param.Format(a.Value), keeps, a.Goodput, a.Target)
}

// Title names the parameter as people say it.
func (p Param) Title() string {
	switch p {
	case ParamTPOT:
		return "TPOT"
	case ParamBatch:
		return "batch"
	case ParamRate:
		return "prefill arrival rate"
	case ParamPrompt:
		return "interfering prompt length"
	case ParamTTFA:
		return "time to first audio"
	case ParamPreroll:
		return "pre-roll"
	case ParamSessions:
		return "sessions per TTS server"
	}
	return string(p)
}

// percent writes a fraction as a percentage without needless digits.
func percent(f float64) string {
	return strconv.FormatFloat(100*f, 'g', 5, 64) + "%"
}

// Resolution is the precision an inversion stops at.
func (p Param) Resolution() float64 {
	switch p {
	case ParamTPOT:
		return float64(100 * time.Microsecond)
	case ParamTTFA, ParamPreroll:
		return float64(time.Millisecond)
	case ParamRate:
		return 0.001
	case ParamPrompt:
		return 8
	}
	return 1
}

// Solve finds by bisection the largest value of p in [lo, hi] (the
// smallest, for the pre-roll) at which speech goodput stays at or above
// target. Each probe simulates the same turns, so goodput moves with the
// parameter alone; it is assumed to move one way.
func Solve(ctx context.Context, s Setup, p Param, lo, hi, target float64, opts Options) (Answer, error) {
	a := Answer{Param: p, Target: target, Lo: lo, Hi: hi}
	if hi < lo {
		return a, fmt.Errorf("%w: %s range %s..%s is empty", ErrParam, p, p.Format(lo), p.Format(hi))
	}
	goodput := func(v float64) (float64, error) {
		set, err := s.With(p, v)
		if err != nil {
			return 0, err
		}
		r, err := set.Run(ctx, opts)
		if err != nil {
			return 0, fmt.Errorf("%s = %s: %w", p, p.Format(v), err)
		}
		return r.Goodput, nil
	}
	integer := p.integer()
	// good is the end that meets the target, bad the end that does not.
	good, bad := lo, hi
	if p.Increasing() {
		good, bad = hi, lo
	}
	g, err := goodput(good)
	if err != nil {
		return a, err
	}
	if g < target {
		return a, nil
	}
	a.Found, a.Value, a.Goodput = true, good, g
	b, err := goodput(bad)
	if err != nil {
		return a, err
	}
	if b >= target {
		a.Value, a.Goodput, a.AtBound = bad, b, true
		return a, nil
	}
	for math.Abs(bad-good) > p.Resolution() {
		mid := good + (bad-good)/2
		if integer {
			mid = math.Floor(mid)
			if mid == good {
				break
			}
		}
		m, err := goodput(mid)
		if err != nil {
			return a, err
		}
		if m >= target {
			good, a.Value, a.Goodput = mid, mid, m
		} else {
			bad = mid
		}
	}
	return a, nil
}

// Find answers the inverse question for p over its default Range, naming
// the range's edge when nothing lies beyond it (the largest batch that
// fits in memory, no pre-roll at all, a prefill load of 0.99).
func Find(ctx context.Context, s Setup, p Param, target float64, opts Options) (Answer, error) {
	lo, hi, err := s.Range(p)
	if err != nil {
		return Answer{Param: p, Target: target}, err
	}
	a, err := Solve(ctx, s, p, lo, hi, target, opts)
	switch p {
	case ParamBatch:
		a.Limit = "the most that fits in memory"
	case ParamPreroll:
		a.Limit = "no pre-roll at all"
	case ParamRate, ParamPrompt:
		a.Limit = "the most the range allows (a prefill load of 0.99; past 1 the queue grows without end)"
	}
	return a, err
}

// Range returns the span an inversion of p searches by default: TPOT 1 ms
// to 1 s; batch 1 to the largest that fits in memory; request rate and
// prompt length up to a prefill load of 0.99; TTS latency 0 to 5 s;
// pre-roll 0 to 20 s; sessions on the TTS server 1 to MaxSessions.
func (s Setup) Range(p Param) (lo, hi float64, err error) {
	r, roofline := s.Gen.Timing.(Roofline)
	switch p {
	case ParamSessions:
		if s.Server == nil {
			return 0, 0, fmt.Errorf("%w: %s needs a tts server", ErrParam, p)
		}
		return 1, MaxSessions, nil
	case ParamTPOT:
		if roofline {
			return 0, 0, paramError(p, "roofline")
		}
		return float64(time.Millisecond), float64(time.Second), nil
	case ParamTTFA:
		if s.Server != nil {
			return 0, 0, fmt.Errorf("%w: %s is set by the tts server's load curve (find sessions instead)", ErrParam, p)
		}
		return 0, float64(5 * time.Second), nil
	case ParamPreroll:
		return 0, float64(20 * time.Second), nil
	}
	if !roofline {
		return 0, 0, paramError(p, "non-roofline")
	}
	switch p {
	case ParamBatch:
		mb := r.MaxBatch()
		if mb < 1 {
			return 0, 0, fmt.Errorf("%w: %s does not fit in %d x %s", ErrParam, r.Model.Name, r.gpus(), r.GPU.Name)
		}
		return 1, float64(mb), nil
	case ParamRate:
		mean := r.Prefill.Prompt.Mean
		if !(mean > 0) {
			return 0, 0, fmt.Errorf("%w: rate needs a prefill prompt length", ErrParam)
		}
		return 0, 0.99 / r.prefillTime(mean), nil
	case ParamPrompt:
		if !(r.Prefill.Rate > 0) {
			return 0, 0, fmt.Errorf("%w: prompt needs a prefill arrival rate", ErrParam)
		}
		return 1, math.Floor(0.99 / r.Prefill.Rate / r.prefillTime(1)), nil
	}
	return 0, 0, fmt.Errorf("%w %q", ErrParam, p)
}
