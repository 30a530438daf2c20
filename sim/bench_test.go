package sim

import (
	"context"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/tokens"
)

// benchText is an answer of 200 tokens (by tokens.Split).
const benchText = `The fastest way from the airport to the old town is the express train. It leaves every fifteen minutes from the lower level, right below the arrivals hall, and takes about twenty-five minutes. Tickets cost twelve euros; you can buy them at the red machines next to the platform, or in the transit app, which also works offline once the ticket is bought. If your flight lands after midnight, the train has stopped, so take the night bus instead: it leaves from stop four, outside terminal two, every thirty minutes until five in the morning. A taxi costs about forty euros and takes half an hour when the roads are clear. From the station, your hotel is a short walk along the river, ten minutes with bags; I can send the directions to your phone. Would you like me to check the timetable for your arrival date, or book a seat for you?`

func benchGenerator(tb testing.TB) *Generator {
	if n := tokens.Count(benchText); n != 200 {
		tb.Fatalf("benchText has %d tokens, want 200", n)
	}
	g := &Generator{Timing: Sampled{TTFT: 250 * time.Millisecond, ITL: Dist{Shape: ShapeLognormal, Mean: 0.04, CV: 0.5}}, Texts: []string{benchText}}
	if err := g.Validate(); err != nil {
		tb.Fatal(err)
	}
	return g
}

// BenchmarkStreamTurn measures making one ~200-token turn.
func BenchmarkStreamTurn(b *testing.B) {
	s := benchGenerator(b).NewStream(1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Turn(i)
		i++
	}
}

// BenchmarkRooflineTurn measures a roofline turn with prefill interference.
func BenchmarkRooflineTurn(b *testing.B) {
	g := &Generator{Timing: testRoofline(true), Texts: []string{benchText}}
	s := g.NewStream(1)
	b.ReportAllocs()
	i := 0
	for b.Loop() {
		s.Turn(i)
		i++
	}
}

// BenchmarkMonteCarlo measures simulated 200-token turns per second
// through the whole engine, on all cores (GOMAXPROCS; -cpu sets it). It
// reports turns/s and s/1M-turns of wall time, and the CPU time a turn
// takes (cpu-µs/turn: 1 M turns in 5 s on 2 cores needs under 10).
func BenchmarkMonteCarlo(b *testing.B) {
	b.ReportAllocs()
	benchMonteCarlo(b, 20000)
}

// BenchmarkMonteCarloMillion runs the 1 M 200-token turns the issue asks
// for in under 5 s on 2 cores, once per op (-benchtime 1x).
func BenchmarkMonteCarloMillion(b *testing.B) { benchMonteCarlo(b, 1_000_000) }

// benchMonteCarlo runs turns generated turns per op and reports the
// rates BenchmarkMonteCarlo describes.
func benchMonteCarlo(b *testing.B, turns int) {
	g := benchGenerator(b)
	cfg := pipeline.DefaultConfig()
	cpu, measured := processCPU()
	for b.Loop() {
		if _, err := Run(context.Background(), g, cfg, Options{Turns: turns, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	after, _ := processCPU()
	n := float64(turns * b.N)
	b.ReportMetric(n/b.Elapsed().Seconds(), "turns/s")
	b.ReportMetric(b.Elapsed().Seconds()/n*1e6, "s/1M-turns")
	if measured {
		b.ReportMetric((after-cpu).Seconds()/n*1e6, "cpu-µs/turn")
	}
}

// BenchmarkMonteCarloServer is BenchmarkMonteCarlo with a TTS server of
// 64 sessions, half of them active: a draw per turn and a playout per
// stream count met.
func BenchmarkMonteCarloServer(b *testing.B) {
	b.ReportAllocs()
	g := benchGenerator(b)
	srv, err := LookupTTSServer("riva-fastpitch")
	if err != nil {
		b.Fatal(err)
	}
	srv.Sessions, srv.Active = 64, 0.5
	set := Setup{Gen: *g, Config: pipeline.DefaultConfig()}.WithServer(&srv)
	const turns = 20000
	for b.Loop() {
		if _, err := set.Run(context.Background(), Options{Turns: turns, Seed: 1}); err != nil {
			b.Fatal(err)
		}
	}
	b.ReportMetric(float64(turns*b.N)/b.Elapsed().Seconds(), "turns/s")
}
