package sim

import (
	"fmt"
	"math"
	"time"
)

// TTSServer is one synthesizer server shared by Sessions conversations:
// the more of them synthesize at once, the later each one's first audio
// and the slower its audio comes (GPU TTS servers batch the streams they
// hold). Each session is synthesizing at a given moment with probability
// Active, independently of the others.
type TTSServer struct {
	// Name is the preset's key, as scenario files write it; Source says
	// where the curve's figures come from (a URL and a version).
	Name, Source string
	// Curve is the server's time to first audio and per-stream real-time
	// factor against the number of streams it synthesizes at once, sorted
	// by Streams.
	Curve []TTSLoad
	// Sessions is the number of conversations sharing the server.
	Sessions int
	// Active is the share of the time a session is synthesizing, in
	// (0, 1].
	Active float64
}

// TTSLoad is one point of a TTS server's load curve: with Streams streams
// synthesizing at once, each waits TTFA for its first audio and makes
// audio at RTF seconds of synthesis per second of audio.
type TTSLoad struct {
	Streams int
	TTFA    time.Duration
	RTF     float64
}

// MaxSessions bounds TTSServer.Sessions (and the sessions an inversion
// searches).
const MaxSessions = 1024

// Validate reports the first field out of range, naming the curve point.
func (s TTSServer) Validate() error {
	name := s.Name
	if name == "" {
		name = "tts server"
	}
	if len(s.Curve) == 0 {
		return fmt.Errorf("%w: %s: the load curve needs at least one point", ErrModel, name)
	}
	for i, p := range s.Curve {
		switch {
		case p.Streams < 1:
			return fmt.Errorf("%w: %s: curve[%d]: streams must be >= 1, got %d", ErrModel, name, i, p.Streams)
		case i > 0 && p.Streams <= s.Curve[i-1].Streams:
			return fmt.Errorf("%w: %s: curve[%d]: streams must grow along the curve, got %d after %d", ErrModel, name, i, p.Streams, s.Curve[i-1].Streams)
		case p.TTFA < 0:
			return fmt.Errorf("%w: %s: curve[%d]: ttfa must not be negative, got %v", ErrModel, name, i, p.TTFA)
		case !(p.RTF > 0) || math.IsInf(p.RTF, 0):
			return fmt.Errorf("%w: %s: curve[%d]: rtf must be a number > 0, got %v", ErrModel, name, i, p.RTF)
		}
	}
	switch {
	case s.Sessions < 1 || s.Sessions > MaxSessions:
		return fmt.Errorf("%w: %s: sessions must be in 1..%d, got %d", ErrModel, name, MaxSessions, s.Sessions)
	case !(s.Active > 0 && s.Active <= 1):
		return fmt.Errorf("%w: %s: active must be in (0, 1], got %v", ErrModel, name, s.Active)
	}
	return nil
}

// At returns the time to first audio and the per-stream real-time factor
// with streams streams synthesizing at once: linear interpolation between
// the curve's points; below the first point, the first point; beyond the
// last, the straight line through the last two (a server past its knee
// shares a fixed throughput, so a stream's RTF grows linearly with the
// streams), never better than the last point; a one-point curve is flat.
func (s TTSServer) At(streams int) (ttfa time.Duration, rtf float64) {
	c := s.Curve
	n := len(c)
	if n == 0 {
		return 0, 0
	}
	if n == 1 || streams <= c[0].Streams {
		return c[0].TTFA, c[0].RTF
	}
	i := 1
	for i < n-1 && c[i].Streams < streams {
		i++
	}
	a, b := c[i-1], c[i]
	f := float64(streams-a.Streams) / float64(b.Streams-a.Streams)
	ttfa = a.TTFA + time.Duration(math.Round(f*float64(b.TTFA-a.TTFA)))
	rtf = a.RTF + f*(b.RTF-a.RTF)
	if streams > b.Streams { // beyond the last point: never better than it
		ttfa, rtf = max(ttfa, b.TTFA), max(rtf, b.RTF)
	}
	return ttfa, rtf
}

// Typical is the number of streams the server holds on average:
// 1 + (Sessions-1) x Active, rounded (the turn being played is one of
// them). The single-turn report plays at this load.
func (s TTSServer) Typical() int {
	return 1 + int(math.Round(float64(s.Sessions-1)*s.Active))
}

// TTSServers are the built-in TTS server presets, from NVIDIA's published
// benchmarks (riva_tts_perf_client, online streaming, each stream sending
// its next request when the last one's audio is in). A stream's RTF is
// the streams divided by the table's total throughput (RTFX, seconds of
// audio per second for the whole server). Sessions and Active are left
// for the scenario; Lookup fills in 1 and 1.
//
//   - magpie-a100: Magpie TTS Multilingual NIM on A100, from
//     https://docs.nvidia.com/nim/speech/latest/reference/performances/tts/performance.html
//     (TTS NIM performance, read 2026-12): first audio 68.28 / 77.13 /
//     80.79 ms at 1 / 2 / 4 streams, throughput 10.24 and 19.2 RTFX at
//     1 and 2. The 4-stream throughput was not in the excerpt read, so
//     its RTF continues the 1-to-2 line (an assumption, marked here).
//     Riva TTS NIM 1.8.0 release notes: Magpie Multilingual supports up
//     to 64 concurrent streams (5 before).
//   - riva-fastpitch: Riva 2.10.0 FastPitch + HiFi-GAN (English-US.Female-1),
//     first table of
//     https://docs.nvidia.com/deeplearning/riva/archives/2-10-0/user-guide/docs/tts/tts-performance.html:
//     first audio 21 / 41 / 60 / 71 ms at 1 / 4 / 6 / 8 streams,
//     throughput 147.083 / 327.195 / 366.147 RTFX at 1 / 4 / 6. The
//     8-stream throughput was not in the excerpt read, so its RTF
//     continues the 4-to-6 line (an assumption, marked here).
var TTSServers = []TTSServer{
	{
		Name:   "magpie-a100",
		Source: "NVIDIA TTS NIM performance (Magpie TTS Multilingual, A100): https://docs.nvidia.com/nim/speech/latest/reference/performances/tts/performance.html; RTF at 4 streams extrapolated",
		Curve: []TTSLoad{
			{Streams: 1, TTFA: 68280 * time.Microsecond, RTF: 1 / 10.24},
			{Streams: 2, TTFA: 77130 * time.Microsecond, RTF: 2 / 19.2},
			{Streams: 4, TTFA: 80790 * time.Microsecond, RTF: 1/10.24 + 3*(2/19.2-1/10.24)},
		},
	},
	{
		Name:   "riva-fastpitch",
		Source: "NVIDIA Riva 2.10.0 TTS performance (FastPitch + HiFi-GAN): https://docs.nvidia.com/deeplearning/riva/archives/2-10-0/user-guide/docs/tts/tts-performance.html; RTF at 8 streams extrapolated",
		Curve: []TTSLoad{
			{Streams: 1, TTFA: 21 * time.Millisecond, RTF: 1 / 147.083},
			{Streams: 4, TTFA: 41 * time.Millisecond, RTF: 4 / 327.195},
			{Streams: 6, TTFA: 60 * time.Millisecond, RTF: 6 / 366.147},
			{Streams: 8, TTFA: 71 * time.Millisecond, RTF: 6/366.147 + (6/366.147 - 4/327.195)},
		},
	},
}

// LookupTTSServer finds a built-in TTS server preset by name
// (case-insensitive), with one session, always active.
func LookupTTSServer(name string) (TTSServer, error) {
	s, err := lookup(TTSServers, func(s TTSServer) string { return s.Name }, "tts server", name)
	if err != nil {
		return s, err
	}
	s.Curve = append([]TTSLoad(nil), s.Curve...)
	s.Sessions, s.Active = 1, 1
	return s, nil
}
