package tts

import (
	"errors"
	"fmt"
	"strconv"
	"strings"
	"time"
)

// Transport is the output transport between the synthesizer and the
// listener: how the audio leaves the voice app and when it is audible.
// Audio leaves in frames; a partial frame may wait for more audio; the
// listener's side plays on a clock; a sender may pace its writes with a
// sleep that drifts. The zero Transport (Name "") is none: the listener
// hears the player as the engine plays it.
type Transport struct {
	// Name is the preset as written on the command line (--transport) and
	// in scenario files (tts.transport), with any overrides.
	Name string `json:"name" yaml:"name"`
	// Frame is the audio one frame carries.
	Frame time.Duration `json:"frame_ns" yaml:"frame"`
	// Hold sends only full frames while a synthesis segment lasts: the
	// audio past the last full frame waits for the segment's next audio,
	// and goes out (short, or padded with Pad) when the segment ends. A
	// segment is the turn when the synthesizer streams one context per
	// turn, and each speech chunk when it takes a request per chunk.
	// Without Hold every chunk's audio is framed on its own.
	Hold bool `json:"hold" yaml:"hold"`
	// Pad fills a segment's last, partial frame with silence to a whole
	// frame.
	Pad bool `json:"pad" yaml:"pad"`
	// Tick is the clock the listener's side plays frames on (a WebRTC
	// track pulls 10 ms of audio at a time and plays silence when none is
	// queued): audio that comes while nothing plays waits for the next
	// tick. Zero plays it as it comes.
	Tick time.Duration `json:"tick_ns" yaml:"tick"`
	// Idle ends the synthesis segment when no audio has come for this
	// long: the framework sends what it held and signals that the bot
	// stopped speaking, in the middle of a reply. Zero never does.
	Idle time.Duration `json:"idle_ns" yaml:"idle"`
	// Overshoot is a sender that sleeps one frame after each write instead
	// of keeping a clock: each sleep lasts this much longer than the frame,
	// so the sender falls behind real time and the listener, playing
	// frames as they come, hears it. Zero is a sender on a clock.
	Overshoot time.Duration `json:"overshoot_ns" yaml:"overshoot"`
	// Lead is a send-ahead lead: the sender keeps a clock and may send
	// each frame up to this long before the listener plays it, so the
	// listener holds that much audio and a sender that is late by less
	// (its oversleep) is not heard. A lead sends only audio that is
	// ready: it cannot fill a gap whose audio the synthesizer has not
	// made. It models TransportParams.audio_out_send_lead_secs of Pipecat's
	// open pull request #4855 (opened 2026-06-23, not in a release; the
	// default 0 keeps the just-in-time sender). Zero is no lead.
	Lead time.Duration `json:"lead_ns,omitempty" yaml:"lead"`
	// Summary and Source say what the preset is and where its figures
	// come from, for reports and --help.
	Summary string `json:"summary,omitempty" yaml:"-"`
	Source  string `json:"source,omitempty" yaml:"-"`
}

// ErrTransport reports a transport that cannot be modelled.
var ErrTransport = errors.New("invalid transport")

// Transports are the presets, by the stacks' own code.
var Transports = []Transport{
	{
		Name: "pipecat", Frame: 40 * time.Millisecond, Hold: true, Pad: true,
		Tick: 10 * time.Millisecond, Idle: 3 * time.Second,
		Summary: "Pipecat's output transport over WebRTC: 40 ms frames, only full ones mid-reply, played on a 10 ms clock, bot stopped after 3 s without audio",
		Source: "pipecat v1.7.0-771 (commit acead05): src/pipecat/transports/base_output.py MediaSender.handle_audio_frame queues only " +
			"whole chunks of 10 ms x TransportParams.audio_out_10ms_chunks (4, base_transport.py) and pads the rest at TTSStoppedFrame " +
			"(_enqueue_flushed_audio_buffer); smallwebrtc/transport.py RawAudioTrack.recv pulls 10 ms on a clock and sends silence when " +
			"the queue is empty (audio_out_auto_silence, default true); services/tts_service.py pushes TTSStoppedFrame after " +
			"stop_frame_timeout_s 3.0 without audio and the transport then signals BotStoppedSpeakingFrame (BOT_VAD_STOP_FALLBACK_SECS 3; " +
			"before v0.0.105 any 0.35 s, BOT_VAD_STOP_SECS, with the queue empty did)",
	},
	{
		Name: "livekit", Frame: 100 * time.Millisecond, Hold: true,
		Tick:    10 * time.Millisecond,
		Summary: "LiveKit Agents into a WebRTC track: 100 ms frames, only full ones until a synthesis ends, played on a 10 ms clock",
		Source: "@livekit/agents 1.7.1 (npm): dist/audio.js AudioByteStream frames TTS audio in sampleRate/10 samples and flushes the " +
			"short rest when the synthesis ends; voice/room_io/_output.js ParticipantAudioOutput feeds an @livekit/rtc-node 0.13.35 " +
			"AudioSource (queueSizeMs 200, room_io.js), which WebRTC drains in 10 ms frames",
	},
	{
		Name: "telephony-20ms", Frame: 20 * time.Millisecond, Hold: true, Pad: true,
		Tick:    20 * time.Millisecond,
		Summary: "a phone call's media stream: whole 20 ms frames (8 kHz mu-law, 160 bytes), played on the 20 ms packet clock",
		Source: "Twilio Media Streams carry audio/x-mulaw at 8000 Hz (twilio.com/docs/voice/media-streams/websocket-messages) " +
			"and the call sends it as G.711 RTP at the 20 ms packetization that RFC 3551 (section 4.5) makes the default",
	},
	{
		Name: "websocket-raw", Frame: 20 * time.Millisecond,
		Overshoot: 500 * time.Microsecond,
		Summary:   "raw PCM over a websocket from a sender that sleeps 20 ms after each 20 ms write, to a browser that plays frames as they come",
		Source: "the hand-written sender pattern that Pipecat replaced with a clock in v0.0.48 (commit 0ac9e2d, transports: " +
			"synchronize with time before sending data); the overshoot is asyncio.sleep(0.02)'s, measured on Debian 12 with " +
			"Python 3.11.7: median 0.49 ms over 200 sleeps",
	},
}

// TransportNames lists the presets, comma separated, for help texts.
func TransportNames() string { return namesOf(Transports, transportName) }

func transportName(t Transport) string { return t.Name }

// LookupTransport returns the preset called name.
func LookupTransport(name string) (Transport, error) {
	if t, ok := preset(Transports, transportName, name); ok {
		return t, nil
	}
	return Transport{}, fmt.Errorf("%w: unknown transport %q (known: none, %s)", ErrTransport, name, TransportNames())
}

// ParseTransport reads a transport as --transport writes it: a preset's
// name, "none", or a preset followed by overrides, e.g.
// "pipecat,frame=20ms,idle=0". The keys are frame, tick, idle, overshoot,
// lead (durations) and hold, pad (true or false).
func ParseTransport(s string) (Transport, error) {
	parts := strings.Split(strings.TrimSpace(s), ",")
	name := strings.ToLower(strings.TrimSpace(parts[0]))
	if name == "" || name == "none" {
		if len(parts) > 1 {
			return Transport{}, fmt.Errorf("%w: %q: transport none takes no settings", ErrTransport, s)
		}
		return Transport{}, nil
	}
	t, err := LookupTransport(name)
	if err != nil {
		return Transport{}, err
	}
	for _, kv := range parts[1:] {
		if err := t.set(kv); err != nil {
			return Transport{}, fmt.Errorf("%w: %q: %w", ErrTransport, s, err)
		}
	}
	if len(parts) > 1 {
		t.Name = strings.Join(append([]string{t.Name}, trimAll(parts[1:])...), ",")
	}
	return t, t.Validate()
}

func trimAll(ss []string) []string {
	for i := range ss {
		ss[i] = strings.TrimSpace(ss[i])
	}
	return ss
}

// set applies one key=value override.
func (t *Transport) set(kv string) error {
	k, v, ok := strings.Cut(strings.TrimSpace(kv), "=")
	if !ok {
		return fmt.Errorf("setting %q: want key=value", kv)
	}
	k, v = strings.ToLower(strings.TrimSpace(k)), strings.TrimSpace(v)
	switch k {
	case "frame", "tick", "idle", "overshoot", "lead":
		d, err := time.ParseDuration(v)
		if v == "0" {
			d, err = 0, nil
		}
		if err != nil {
			return fmt.Errorf("%s: want a duration such as 20ms, got %q", k, v)
		}
		switch k {
		case "frame":
			t.Frame = d
		case "tick":
			t.Tick = d
		case "idle":
			t.Idle = d
		case "lead":
			t.Lead = d
		default:
			t.Overshoot = d
		}
	case "hold", "pad":
		b, err := strconv.ParseBool(v)
		if err != nil {
			return fmt.Errorf("%s: want true or false, got %q", k, v)
		}
		if k == "hold" {
			t.Hold = b
		} else {
			t.Pad = b
		}
	default:
		return fmt.Errorf("unknown setting %q (known: frame, tick, idle, overshoot, lead, hold, pad)", k)
	}
	return nil
}

// None reports whether t is no transport.
func (t Transport) None() bool { return t.Name == "" }

// Validate reports the first figure that cannot be modelled.
func (t Transport) Validate() error {
	if t.None() {
		return nil
	}
	switch {
	case t.Frame <= 0:
		return fmt.Errorf("%w: %s: frame must be positive, got %v", ErrTransport, t.Name, t.Frame)
	case t.Tick < 0, t.Idle < 0, t.Overshoot < 0, t.Lead < 0:
		return fmt.Errorf("%w: %s: tick, idle, overshoot and lead must not be negative", ErrTransport, t.Name)
	case t.Tick > 0 && t.Frame%t.Tick != 0:
		return fmt.Errorf("%w: %s: frame %v must be a whole number of ticks (%v)", ErrTransport, t.Name, t.Frame, t.Tick)
	}
	return nil
}

// String describes the transport in a few words, as reports print it.
func (t Transport) String() string {
	if t.None() {
		return "none"
	}
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %v frames", t.Name, t.Frame)
	if t.Hold {
		b.WriteString(", whole frames only")
	}
	if t.Tick > 0 {
		fmt.Fprintf(&b, ", %v clock", t.Tick)
	}
	if t.Idle > 0 {
		fmt.Fprintf(&b, ", bot stopped after %v", t.Idle)
	}
	if t.Overshoot > 0 {
		fmt.Fprintf(&b, ", sender oversleeps %v per frame", t.Overshoot)
	}
	if t.Lead > 0 {
		fmt.Fprintf(&b, ", sends up to %v ahead", t.Lead)
	}
	return b.String()
}

// Sent is one frame as a transport sends it: Audio of speech in it (less
// than a frame at a segment's end), Length on the wire (a padded frame is
// a whole one), At when it leaves, From and Chunk the tags of its first
// audio and of the audio that completed it. Stopped marks the frame a
// framework sent when it ended the segment for silence (Transport.Idle).
type Sent struct {
	Audio, Length, At time.Duration
	From, Chunk       int
	Stopped           bool
}

// Sender frames one turn's audio as a transport sends it: Add the audio
// as it comes, in order, End when the synthesis segment ends. Frames go
// to the function given to NewSender, in order. The engine's model and
// the real player of `underrun speak` both send through it.
type Sender struct {
	tr      Transport
	send    func(Sent)
	held    time.Duration // audio waiting for a whole frame
	heldTag int           // the tag of the held audio's first part
	lastTag int           // the tag of the latest audio
	lastAt  time.Duration // when the latest audio came
	any     bool          // some audio came
	sent    bool          // some frame left
	sendAt  time.Duration // when the last frame left
	lastLen time.Duration // its length
	playEnd time.Duration // when the listener ends the frames sent, played back to back as they come (Lead)
}

// NewSender returns a Sender for t that hands each frame to send.
func (t Transport) NewSender(send func(Sent)) *Sender {
	return &Sender{tr: t, send: send}
}

// Add takes audio that came at at, tagged chunk: it sends every frame
// that the audio completes. Audio must come in time order.
func (s *Sender) Add(audio, at time.Duration, chunk int) {
	if audio <= 0 {
		return
	}
	if d, ok := s.Deadline(); ok && d <= at {
		s.Expire()
	}
	s.any, s.lastAt, s.lastTag = true, at, chunk
	f := s.tr.Frame
	if s.held > 0 {
		need := f - s.held
		if audio < need {
			s.held += audio
			return
		}
		s.out(f, f, at, s.heldTag, chunk, false)
		audio -= need
		s.held = 0
	}
	for ; audio >= f; audio -= f {
		s.out(f, f, at, chunk, chunk, false)
	}
	if audio > 0 {
		if s.tr.Hold {
			s.held, s.heldTag = audio, chunk
			return
		}
		s.out(audio, audio, at, chunk, chunk, false)
	}
}

// Room returns how much more audio completes the frame being filled.
func (s *Sender) Room() time.Duration { return s.tr.Frame - s.held }

// Deadline returns when the framework ends the segment for silence and
// sends the audio it holds (Transport.Idle after the latest audio); ok is
// false when it holds none or never does.
func (s *Sender) Deadline() (time.Duration, bool) {
	if s.held <= 0 || s.tr.Idle <= 0 {
		return 0, false
	}
	return s.lastAt + s.tr.Idle, true
}

// Silent reports whether the framework would have ended the segment for
// silence by at (the bot stopped speaking), audio held or not.
func (s *Sender) Silent(at time.Duration) bool {
	return s.any && s.tr.Idle > 0 && at-s.lastAt >= s.tr.Idle
}

// Expire sends the held audio at Deadline, as the framework does when the
// segment ends for silence.
func (s *Sender) Expire() {
	if d, ok := s.Deadline(); ok {
		s.flush(d, true)
	}
}

// End ends the synthesis segment at at: the held audio goes out.
func (s *Sender) End(at time.Duration) {
	s.flush(max(at, s.lastAt), false)
}

func (s *Sender) flush(at time.Duration, stopped bool) {
	if s.held <= 0 {
		return
	}
	length := s.held
	if s.tr.Pad {
		length = s.tr.Frame
	}
	s.out(s.held, length, at, s.heldTag, s.lastTag, stopped)
	s.held = 0
}

// out sends a frame ready at ready; a drifting sender sends it no sooner
// than its sleep after the last one ends, or, with a lead, than its sleep
// until the lead before the listener plays it.
func (s *Sender) out(audio, length, ready time.Duration, from, chunk int, stopped bool) {
	at := ready
	if s.tr.Overshoot > 0 && s.sent {
		if s.tr.Lead > 0 {
			at = max(at, s.playEnd-s.tr.Lead+s.tr.Overshoot)
		} else {
			at = max(at, s.sendAt+s.lastLen+s.tr.Overshoot)
		}
	}
	s.sent, s.sendAt, s.lastLen = true, at, length
	s.playEnd = max(s.playEnd, at) + length
	s.send(Sent{Audio: audio, Length: length, At: at, From: from, Chunk: chunk, Stopped: stopped})
}
