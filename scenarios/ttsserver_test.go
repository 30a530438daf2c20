package scenarios

import (
	"context"
	"math"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/sim"
	"github.com/speech-pipeline/underrun/tts"
)

const serverHead = "generator:\n  kind: constant\n  tpot: 40ms\ntts:\n  mode: request\n"

// TestParseServer: tts.server takes a preset or a curve; the report's
// turns play at the typical load.
func TestParseServer(t *testing.T) {
	t.Parallel()
	s, err := Parse([]byte(serverHead+"  server: {preset: magpie-a100, sessions: 16, active: 0.6}\n"), "test.yaml", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	srv := s.Setup.Server
	if srv == nil || srv.Name != "magpie-a100" || srv.Sessions != 16 || srv.Active != 0.6 || len(srv.Curve) != 3 {
		t.Fatalf("server %+v", srv)
	}
	// 1 + 15 x 0.6 = 10 streams: past the last point (4), on the 2-to-4 line
	ttfa, rtf := srv.At(10)
	if srv.Typical() != 10 || s.Setup.Config.Synth.TTFA != ttfa || s.Setup.Config.Synth.RTF != rtf || s.Setup.Config.Synth.Mode != tts.ModeRequest {
		t.Errorf("synth %+v, want the server at 10 streams (%v, %v)", s.Setup.Config.Synth, ttfa, rtf)
	}
	curve := serverHead + `  server:
    source: my bench, 2026-12
    sessions: 8
    curve:
      - {streams: 1, ttfa: 68ms, rtf: 0.098}
      - {streams: 4, ttfa: 90ms, rtf: 0.2}
`
	s, err = Parse([]byte(curve), "test.yaml", nil, "")
	if err != nil {
		t.Fatal(err)
	}
	srv = s.Setup.Server
	if srv.Sessions != 8 || srv.Active != DefaultActive || srv.Source != "my bench, 2026-12" || len(srv.Curve) != 2 || srv.Curve[0].TTFA != 68*time.Millisecond {
		t.Errorf("server %+v", srv)
	}
	if _, rtf := srv.At(2); math.Abs(rtf-(0.098+(0.2-0.098)/3)) > 1e-12 {
		t.Errorf("rtf at 2 streams %v", rtf)
	}
	plain, err := Parse([]byte(serverHead), "test.yaml", nil, "")
	if err != nil || plain.Setup.Server != nil {
		t.Errorf("no server: %+v, %v", plain.Setup.Server, err)
	}
}

func TestParseServerErrors(t *testing.T) {
	t.Parallel()
	checkParseErrors(t, []parseErrorCase{
		{"unknown preset", serverHead + "  server:\n    preset: tacotron-k80\n", []string{"line 7", "tts.server.preset", "unknown tts server", "magpie-a100, riva-fastpitch"}},
		{"unsorted curve", serverHead + "  server:\n    curve:\n      - {streams: 4, ttfa: 90ms, rtf: 0.2}\n      - {streams: 2, ttfa: 80ms, rtf: 0.1}\n", []string{"line 9", "tts.server.curve[1].streams", "sorted by streams"}},
		{"zero rtf", serverHead + "  server:\n    curve:\n      - {streams: 1, ttfa: 90ms, rtf: 0}\n", []string{"line 8", "tts.server.curve[0].rtf"}},
		{"ttfa and server", serverHead + "  ttfa: 100ms\n  server: {preset: riva-fastpitch}\n", []string{"line 6", "tts.ttfa", "not both"}},
		{"rtf and server", serverHead + "  rtf: 0.5\n  server: {preset: riva-fastpitch}\n", []string{"line 6", "tts.rtf", "not both"}},
		{"preset and curve", serverHead + "  server:\n    preset: riva-fastpitch\n    curve: [{streams: 1, ttfa: 1ms, rtf: 0.1}]\n", []string{"line 8", "tts.server.curve", "not both"}},
		{"neither", serverHead + "  server: {sessions: 4}\n", []string{"line 6", "tts.server", "preset"}},
		{"bad sessions", serverHead + "  server:\n    preset: riva-fastpitch\n    sessions: 5000\n", []string{"line 8", "tts.server.sessions", "1..1024"}},
		{"bad active", serverHead + "  server:\n    preset: riva-fastpitch\n    active: 1.5\n", []string{"line 8", "tts.server.active"}},
		{"unknown key", serverHead + "  server:\n    preset: riva-fastpitch\n    users: 3\n", []string{"line 8", "users"}},
	})
}

// TestTTSServerScenario: the built-in tts-server scenario's goodput falls
// as sessions join the server, from every turn clean to none, on the same
// turns at every count.
func TestTTSServerScenario(t *testing.T) {
	t.Parallel()
	s, err := Builtin("tts-server")
	if err != nil {
		t.Fatal(err)
	}
	if s.Setup.Server == nil || s.Setup.Server.Name != "riva-fastpitch" {
		t.Fatalf("server %+v", s.Setup.Server)
	}
	prev := 2.0
	var goodputs []float64
	for _, sessions := range []float64{1, 16, 128, 256, 384, 512, 768} {
		set, err := s.Setup.With(sim.ParamSessions, sessions)
		if err != nil {
			t.Fatal(err)
		}
		r, err := set.Run(context.Background(), sim.Options{Turns: 300, Seed: s.Seed, Workers: 2})
		if err != nil {
			t.Fatal(err)
		}
		if r.Goodput > prev {
			t.Errorf("%v sessions: goodput %v above %v with fewer", sessions, r.Goodput, prev)
		}
		prev = r.Goodput
		goodputs = append(goodputs, r.Goodput)
	}
	if goodputs[0] != 1 || goodputs[1] != 1 || goodputs[len(goodputs)-1] != 0 {
		t.Errorf("goodputs %v: want 1 at 1 and 16 sessions, 0 at 768", goodputs)
	}
}
