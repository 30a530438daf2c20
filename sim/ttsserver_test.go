package sim

import (
	"errors"
	"math"
	"strings"
	"testing"
	"time"
)

// TestTTSServerAtPublished checks the presets against the published
// figures they cite, point by point: NVIDIA's tables give first audio per
// stream count and the server's total RTFX, so a stream's RTF is
// streams / RTFX.
func TestTTSServerAtPublished(t *testing.T) {
	t.Parallel()
	tests := []struct {
		preset  string
		streams int
		ttfa    time.Duration
		rtf     float64 // 0: not published (extrapolated in the preset)
	}{
		{"magpie-a100", 1, 68280 * time.Microsecond, 1 / 10.24},
		{"magpie-a100", 2, 77130 * time.Microsecond, 2 / 19.2},
		{"magpie-a100", 4, 80790 * time.Microsecond, 0},
		{"riva-fastpitch", 1, 21 * time.Millisecond, 1 / 147.083},
		{"riva-fastpitch", 4, 41 * time.Millisecond, 4 / 327.195},
		{"riva-fastpitch", 6, 60 * time.Millisecond, 6 / 366.147},
		{"riva-fastpitch", 8, 71 * time.Millisecond, 0},
	}
	for _, tt := range tests {
		s, err := LookupTTSServer(tt.preset)
		if err != nil {
			t.Fatal(err)
		}
		if err := s.Validate(); err != nil {
			t.Fatalf("%s: %v", tt.preset, err)
		}
		if !strings.Contains(s.Source, "https://docs.nvidia.com/") {
			t.Errorf("%s: source %q cites no NVIDIA page", tt.preset, s.Source)
		}
		ttfa, rtf := s.At(tt.streams)
		if ttfa != tt.ttfa {
			t.Errorf("%s at %d streams: ttfa %v, want %v", tt.preset, tt.streams, ttfa, tt.ttfa)
		}
		if tt.rtf > 0 && math.Abs(rtf-tt.rtf) > 1e-12 {
			t.Errorf("%s at %d streams: rtf %v, want %v", tt.preset, tt.streams, rtf, tt.rtf)
		}
	}
	if _, err := LookupTTSServer("no-such-server"); !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), "magpie-a100") {
		t.Errorf("unknown preset: %v, want ErrModel listing the presets", err)
	}
}

func TestTTSServerAt(t *testing.T) {
	t.Parallel()
	s := TTSServer{Sessions: 1, Active: 1, Curve: []TTSLoad{
		{Streams: 2, TTFA: 100 * time.Millisecond, RTF: 0.2},
		{Streams: 4, TTFA: 200 * time.Millisecond, RTF: 0.4},
		{Streams: 8, TTFA: 400 * time.Millisecond, RTF: 1.2},
	}}
	tests := []struct {
		streams int
		ttfa    time.Duration
		rtf     float64
	}{
		{1, 100 * time.Millisecond, 0.2}, // below the first point: the first
		{2, 100 * time.Millisecond, 0.2},
		{3, 150 * time.Millisecond, 0.3}, // between: linear
		{4, 200 * time.Millisecond, 0.4},
		{6, 300 * time.Millisecond, 0.8},
		{8, 400 * time.Millisecond, 1.2},
		{12, 600 * time.Millisecond, 2.0}, // beyond: the line through the last two
		{16, 800 * time.Millisecond, 2.8},
	}
	for _, tt := range tests {
		ttfa, rtf := s.At(tt.streams)
		if ttfa != tt.ttfa || math.Abs(rtf-tt.rtf) > 1e-12 {
			t.Errorf("At(%d) = %v, %v; want %v, %v", tt.streams, ttfa, rtf, tt.ttfa, tt.rtf)
		}
	}
	flat := TTSServer{Curve: []TTSLoad{{Streams: 1, TTFA: 50 * time.Millisecond, RTF: 0.1}}}
	if ttfa, rtf := flat.At(100); ttfa != 50*time.Millisecond || rtf != 0.1 {
		t.Errorf("one-point curve At(100) = %v, %v; want it flat", ttfa, rtf)
	}
	// a curve that improves at its end is held at its last point beyond it
	better := TTSServer{Curve: []TTSLoad{{Streams: 1, TTFA: 80 * time.Millisecond, RTF: 0.3}, {Streams: 2, TTFA: 60 * time.Millisecond, RTF: 0.2}}}
	if ttfa, rtf := better.At(10); ttfa != 60*time.Millisecond || rtf != 0.2 {
		t.Errorf("improving curve At(10) = %v, %v; want the last point", ttfa, rtf)
	}
}

func TestTTSServerValidate(t *testing.T) {
	t.Parallel()
	good := func() TTSServer {
		return TTSServer{Name: "x", Sessions: 4, Active: 0.5, Curve: []TTSLoad{
			{Streams: 1, TTFA: 50 * time.Millisecond, RTF: 0.1},
			{Streams: 4, TTFA: 80 * time.Millisecond, RTF: 0.3},
		}}
	}
	if err := good().Validate(); err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name   string
		change func(*TTSServer)
		want   string
	}{
		{"empty curve", func(s *TTSServer) { s.Curve = nil }, "at least one point"},
		{"zero streams", func(s *TTSServer) { s.Curve[0].Streams = 0 }, "curve[0]: streams must be >= 1"},
		{"unsorted", func(s *TTSServer) { s.Curve[1].Streams = 1 }, "curve[1]: streams must grow"},
		{"negative ttfa", func(s *TTSServer) { s.Curve[1].TTFA = -time.Millisecond }, "curve[1]: ttfa"},
		{"zero rtf", func(s *TTSServer) { s.Curve[0].RTF = 0 }, "curve[0]: rtf"},
		{"nan rtf", func(s *TTSServer) { s.Curve[1].RTF = math.NaN() }, "curve[1]: rtf"},
		{"no sessions", func(s *TTSServer) { s.Sessions = 0 }, "sessions"},
		{"too many sessions", func(s *TTSServer) { s.Sessions = MaxSessions + 1 }, "sessions"},
		{"zero active", func(s *TTSServer) { s.Active = 0 }, "active"},
		{"active above 1", func(s *TTSServer) { s.Active = 1.5 }, "active"},
	}
	for _, tt := range tests {
		s := good()
		tt.change(&s)
		err := s.Validate()
		if !errors.Is(err, ErrModel) || !strings.Contains(err.Error(), tt.want) {
			t.Errorf("%s: %v, want ErrModel saying %q", tt.name, err, tt.want)
		}
	}
}
