package pipeline_test

import (
	"fmt"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/tts"
)

// A guard on a manual clock: three tokens of 100 ms of audio, then a stall.
// The drain is raised at 400 ms, when the buffer runs dry, long before the
// next token arrives at 700 ms.
func ExampleGuard() {
	cfg := pipeline.DefaultConfig()
	cfg.Policy, _ = tts.ParsePolicy("token")
	cfg.Synth = tts.Synth{}                       // instant synthesizer
	cfg.Voice.TokenAudio = 100 * time.Millisecond // each text-less token

	start := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	clock := pipeline.NewManualClock(start)
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{
		Clock:         clock,
		WarnTolerance: 40 * time.Millisecond,
		OnEvent: func(e pipeline.Event) {
			switch e.Kind {
			case pipeline.EventSpeech:
			case pipeline.EventUnderrun:
				fmt.Printf("%v %s: %v %s\n", e.Now, e.Kind, e.Underrun.Duration, e.Underrun.Class)
			default:
				fmt.Printf("%v %s\n", e.Now, e.Kind)
			}
		},
	})
	if err != nil {
		panic(err)
	}
	defer g.Close()
	g.Begin("t1", "session-1")
	for _, at := range []time.Duration{100, 150, 200, 700} {
		clock.Set(start.Add(at * time.Millisecond)) // timers due on the way fire
		g.Chunk("t1", pipeline.Chunk{Textless: true})
	}
	g.End("t1", pipeline.StatusOK)
	// Output:
	// 360ms stall_warning
	// 400ms underrun_started
	// 700ms underrun: 300ms interruption
	// 700ms turn
}
