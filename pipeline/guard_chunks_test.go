package pipeline_test

import (
	"bytes"
	"encoding/json"
	"strings"
	"testing"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// TestGuardLogsChunks: a guard with a logger writes one "chunk" event per
// speech chunk, with offline analysis's timeline of that chunk (replay
// and proxy --events).
func TestGuardLogsChunks(t *testing.T) {
	t.Parallel()
	turn := testkit.WordTurn("c", guardText, 250*gms, 37*gms, map[int]time.Duration{3: 1500 * gms})
	cfg := guardConfig(t, "sentence", 150*gms, 0.2, 0)
	off, err := pipeline.Play(cfg, turn)
	if err != nil {
		t.Fatal(err)
	}
	var buf bytes.Buffer
	clock := pipeline.NewManualClock(epoch)
	g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{Clock: clock, Logger: zerolog.New(&buf)})
	if err != nil {
		t.Fatal(err)
	}
	if err := g.Begin(turn.ID, "s"); err != nil {
		t.Fatal(err)
	}
	for _, ch := range turn.Chunks {
		clock.Set(epoch.Add(ch.At))
		if err := g.Chunk(turn.ID, ch); err != nil {
			t.Fatal(err)
		}
	}
	if err := g.End(turn.ID, pipeline.StatusOK); err != nil {
		t.Fatal(err)
	}
	var got []pipeline.ChunkReport
	for _, line := range strings.Split(strings.TrimSpace(buf.String()), "\n") {
		var ev struct {
			Event string `json:"event"`
			pipeline.ChunkReport
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Event == "chunk" {
			got = append(got, ev.ChunkReport)
		}
	}
	if len(got) != len(off.Chunks) || len(got) < 3 {
		t.Fatalf("%d chunk events, offline %d chunks", len(got), len(off.Chunks))
	}
	for i := range off.Chunks {
		want := pipeline.NewChunkReport(off, "s", i)
		if got[i] != want {
			t.Errorf("chunk %d:\n got %+v\nwant %+v", i, got[i], want)
		}
	}
}
