package sim

import (
	"context"
	"encoding/json"
	"errors"
	"math"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
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

// testServer is a server whose streams slow to real time at about nine
// at once: a stream's RTF passes 1 there.
func testServer(sessions int) *TTSServer {
	return &TTSServer{Name: "test", Sessions: sessions, Active: 0.5, Curve: []TTSLoad{
		{Streams: 1, TTFA: 100 * time.Millisecond, RTF: 0.3},
		{Streams: 8, TTFA: 300 * time.Millisecond, RTF: 0.9},
	}}
}

// serverSetup sends a request per chunk (the published benchmarks'
// clients do), so that each chunk waits the loaded time to first audio.
func serverSetup(tb testing.TB, sessions int) Setup {
	cfg := pipeline.DefaultConfig()
	cfg.Synth.Mode = tts.ModeRequest
	return Setup{Gen: *benchGenerator(tb), Config: cfg}.WithServer(testServer(sessions))
}

// TestServerOneSessionIsNoServer: one session on a server is always one
// stream, so the run is the run without a server at the curve's first
// point, turn for turn.
func TestServerOneSessionIsNoServer(t *testing.T) {
	t.Parallel()
	set := serverSetup(t, 1)
	opts := Options{Turns: 500, Seed: 3, Workers: 2}
	with, err := set.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if q := with.Streams; q == nil || q.Min != 1 || q.Max != 1 || q.Mean != 1 {
		t.Fatalf("streams %+v, want all 1", with.Streams)
	}
	plain := set
	plain.Server = nil
	plain.Config.Synth.TTFA, plain.Config.Synth.RTF = 100*time.Millisecond, 0.3
	without, err := plain.Run(context.Background(), opts)
	if err != nil {
		t.Fatal(err)
	}
	if without.Streams != nil {
		t.Errorf("streams %+v without a server", without.Streams)
	}
	with.Streams = nil
	if !reflect.DeepEqual(with, without) {
		t.Errorf("one session differs from no server:\n%+v\n%+v", with, without)
	}
	if with.Interrupted == 0 && with.Goodput == 1 && with.SpeechSeconds == 0 {
		t.Errorf("empty run %+v", with)
	}
}

// TestServerSessionsHurt: goodput never rises with the sessions sharing
// the server, the streams drawn follow 1 + Binomial(sessions-1, active),
// and the run is the same on any number of workers.
func TestServerSessionsHurt(t *testing.T) {
	t.Parallel()
	prev := 2.0
	var goodputs []float64
	for _, sessions := range []int{1, 4, 12, 20, 40} {
		set := serverSetup(t, sessions)
		var outs [][]byte
		for _, workers := range []int{1, 4} {
			r, err := set.Run(context.Background(), Options{Turns: 400, Seed: 5, Workers: workers})
			if err != nil {
				t.Fatal(err)
			}
			b, _ := json.Marshal(r)
			outs = append(outs, b)
			if workers == 1 {
				if r.Goodput > prev {
					t.Errorf("%d sessions: goodput %v above %v with fewer", sessions, r.Goodput, prev)
				}
				prev = r.Goodput
				goodputs = append(goodputs, r.Goodput)
				want := 1 + float64(sessions-1)*0.5
				if r.Streams == nil || math.Abs(r.Streams.Mean-want) > 0.1*want || r.Streams.Max > float64(sessions) || r.Streams.Min < 1 {
					t.Errorf("%d sessions: streams %+v, want a mean near %v", sessions, r.Streams, want)
				}
			}
		}
		if string(outs[0]) != string(outs[1]) {
			t.Errorf("%d sessions: 1 and 4 workers differ:\n%s\n%s", sessions, outs[0], outs[1])
		}
	}
	if goodputs[0] < 0.99 || goodputs[len(goodputs)-1] > 0.01 {
		t.Errorf("goodputs %v: want from all turns good to none", goodputs)
	}
}

// TestFindSessions: the inversion over sessions names a count that meets
// the target while one more does not, the same on 1 and 4 workers.
func TestFindSessions(t *testing.T) {
	t.Parallel()
	set := serverSetup(t, 1)
	lo, hi, err := set.Range(ParamSessions)
	if err != nil || lo != 1 || hi != MaxSessions {
		t.Fatalf("range %v..%v, %v", lo, hi, err)
	}
	var found []float64
	for _, workers := range []int{1, 4} {
		opts := Options{Turns: 300, Seed: 2, Workers: workers}
		a, err := Find(context.Background(), set, ParamSessions, 0.9, opts)
		if err != nil {
			t.Fatal(err)
		}
		if !a.Found || a.AtBound || a.Value != math.Floor(a.Value) || a.Value < 2 {
			t.Fatalf("answer %s", a)
		}
		at := func(sessions float64) float64 {
			s, err := set.With(ParamSessions, sessions)
			if err != nil {
				t.Fatal(err)
			}
			r, err := s.Run(context.Background(), opts)
			if err != nil {
				t.Fatal(err)
			}
			return r.Goodput
		}
		if g, next := at(a.Value), at(a.Value+1); g < 0.9 || next >= 0.9 {
			t.Errorf("%s: goodput %v there, %v at one more", a, g, next)
		}
		found = append(found, a.Value)
	}
	if found[0] != found[1] {
		t.Errorf("sessions found %v on 1 and 4 workers", found)
	}
	// sessions need a server; ttfa is the server's once there is one
	plain := set
	plain.Server = nil
	if _, err := plain.With(ParamSessions, 4); !errors.Is(err, ErrParam) {
		t.Errorf("sessions without a server: %v", err)
	}
	if _, _, err := plain.Range(ParamSessions); !errors.Is(err, ErrParam) {
		t.Errorf("sessions range without a server: %v", err)
	}
	if _, err := set.With(ParamTTFA, 1e8); !errors.Is(err, ErrParam) {
		t.Errorf("ttfa with a server: %v", err)
	}
	if sw, err := ParseSweep("sessions=1:64:8"); err != nil || len(sw.Values()) != 8 {
		t.Errorf("sessions sweep %v, %v", sw, err)
	}
}

// TestCountedMatchesExact: quantiles of counted integers are those of
// the integers themselves.
func TestCountedMatchesExact(t *testing.T) {
	t.Parallel()
	counts := []int64{0, 5, 0, 3, 7, 1, 0, 0, 2}
	var v []float64
	for x, c := range counts {
		for range c {
			v = append(v, float64(x))
		}
	}
	if got, want := counted(counts), exact(v); got != want {
		t.Errorf("counted %+v, exact %+v", got, want)
	}
}

// TestLoadDraws: the streams drawn follow 1 + Binomial(n, p) (mean and
// variance), with Active 1 always every session.
func TestLoadDraws(t *testing.T) {
	t.Parallel()
	srv := testServer(101)
	srv.Active = 0.3
	l := newLoad(srv, pipeline.DefaultConfig(), 1)
	pcg := rand.NewPCG(0, 0)
	var sum, sq float64
	const n = 20000
	for i := range n {
		x := float64(l.streams(pcg, i) - 1)
		sum += x
		sq += x * x
	}
	mean := sum / n
	variance := sq/n - mean*mean
	if math.Abs(mean-30) > 0.3 || math.Abs(variance-21) > 1.5 {
		t.Errorf("others: mean %v variance %v, want 30 and 21", mean, variance)
	}
	srv.Active = 1
	l = newLoad(srv, pipeline.DefaultConfig(), 1)
	for i := range 100 {
		if got := l.streams(pcg, i); got != 101 {
			t.Fatalf("active 1: %d streams, want 101", got)
		}
	}
}
