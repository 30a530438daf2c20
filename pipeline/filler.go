package pipeline

import (
	"fmt"
	"strconv"
	"strings"
	"time"
)

// FillerKind names a filler policy.
type FillerKind string

// The filler policies an app may run during a tool call's silence.
const (
	// FillerNone: the app stays silent until speech resumes.
	FillerNone FillerKind = "none"
	// FillerPhrase: after Delay of silence the app speaks Phrase (LiveKit
	// Agents' session.say, Pipecat's on_function_calls_started filler);
	// its audio comes the synthesizer's time to first audio later and
	// lasts what the turn's voice takes to speak it.
	FillerPhrase FillerKind = "after"
	// FillerKeepalive: after Delay a sound plays until speech resumes
	// (LiveKit Agents' BackgroundAudioPlayer thinking_sound).
	FillerKeepalive FillerKind = "keepalive"
)

// Filler is a filler policy for tool-call silences (--filler).
type Filler struct {
	Kind   FillerKind
	Delay  time.Duration
	Phrase string
}

// ParseFiller reads a --filler value: none, after:800ms:"One moment."
// or keepalive:800ms.
func ParseFiller(s string) (Filler, error) {
	if s == "" || s == string(FillerNone) {
		return Filler{Kind: FillerNone}, nil
	}
	kind, rest, _ := strings.Cut(s, ":")
	delay, phrase, hasPhrase := strings.Cut(rest, ":")
	d, err := time.ParseDuration(delay)
	if err != nil || d < 0 {
		return Filler{}, fmt.Errorf("filler %q: the delay %q is not a duration of 0 or more (e.g. 800ms)", s, delay)
	}
	switch FillerKind(kind) {
	case FillerPhrase:
		if uq, err := strconv.Unquote(phrase); err == nil {
			phrase = uq
		}
		if !hasPhrase || strings.TrimSpace(phrase) == "" {
			return Filler{}, fmt.Errorf("filler %q: after needs a phrase: after:800ms:\"One moment.\"", s)
		}
		return Filler{Kind: FillerPhrase, Delay: d, Phrase: phrase}, nil
	case FillerKeepalive:
		if hasPhrase {
			return Filler{}, fmt.Errorf("filler %q: keepalive takes a delay only: keepalive:800ms", s)
		}
		return Filler{Kind: FillerKeepalive, Delay: d}, nil
	}
	return Filler{}, fmt.Errorf("filler %q: the policy is none, after:DELAY:PHRASE or keepalive:DELAY", s)
}

// String is the --filler form of f.
func (f Filler) String() string {
	switch f.Kind {
	case FillerPhrase:
		return fmt.Sprintf("after:%v:%q", f.Delay, f.Phrase)
	case FillerKeepalive:
		return fmt.Sprintf("keepalive:%v", f.Delay)
	}
	return string(FillerNone)
}

// Validate reports a policy ParseFiller would not give: an unknown kind,
// a negative delay, a phrase policy without a phrase or a keep-alive with
// one.
func (f Filler) Validate() error {
	switch {
	case f.Kind != "" && f.Kind != FillerNone && f.Kind != FillerPhrase && f.Kind != FillerKeepalive:
		return fmt.Errorf("filler %q: the policy is none, after or keepalive", f.Kind)
	case f.Delay < 0:
		return fmt.Errorf("filler %s: the delay must not be negative", f)
	case f.Kind == FillerPhrase && strings.TrimSpace(f.Phrase) == "":
		return fmt.Errorf("filler %s: after needs a phrase", f)
	case f.Kind != FillerPhrase && f.Phrase != "":
		return fmt.Errorf("filler %q: only after speaks a phrase", f.Kind)
	}
	return nil
}

// Plays reports whether f plays anything (a policy other than none).
func (f Filler) Plays() bool { return f.Kind != "" && f.Kind != FillerNone }

// Coverage is what a filler does with one silence: Covered of it has
// sound, Silent has none (Covered + Silent is the silence). Late is how
// long a phrase that outlasts the silence holds back the speech after it.
type Coverage struct {
	Covered, Silent time.Duration
	Late            time.Duration
}

// Cover returns what f covers of a tool-call silence of length silence
// in a pipeline configured as cfg. The filler starts Delay into the
// silence (a silence no longer than Delay has none). A keep-alive sound
// plays from then to the end of the silence; a phrase is a request of
// its own to the synthesizer, so its audio starts the synthesizer's time
// to first audio later (cfg.Synth.TTFA) and lasts what cfg.Voice takes
// to speak it. What of it is still to play when the reply's speech is
// ready holds that speech back (Late): the stacks play one after the
// other, LiveKit Agents one speech handle at a time
// (AgentActivity._scheduling_task; the Node agents' mainTask, which
// TestLiveKitFillerHoldsBackTheReply runs), Pipecat its audio frames in
// the order they were queued. A Playout whose Config.Filler is f plays
// the reply from then, so the turn's later gaps move with it.
func (f Filler) Cover(silence time.Duration, cfg Config) Coverage {
	rest := max(0, silence-f.Delay)
	var c, late time.Duration
	switch f.Kind {
	case FillerPhrase:
		phrase := cfg.Voice.Duration(f.Phrase)
		c = min(max(0, rest-cfg.Synth.TTFA), phrase)
		if rest > 0 {
			late = max(0, cfg.Synth.TTFA+phrase-rest)
		}
	case FillerKeepalive:
		c = rest
	}
	return Coverage{Covered: c, Silent: silence - c, Late: late}
}

// ToolSilenceReport is one tool-call silence in a report.
type ToolSilenceReport struct {
	Turn      string  `json:"turn"`
	Tool      string  `json:"tool"`
	ToolMs    float64 `json:"tool_ms"`
	StartMs   float64 `json:"start_ms"`
	SilenceMs float64 `json:"silence_ms"`
	Filler    string  `json:"filler"`
	CoveredMs float64 `json:"covered_ms"`
	SilentMs  float64 `json:"silent_ms"`
	LateMs    float64 `json:"late_ms,omitempty"`
}
