package main

import (
	"encoding/json"
	"fmt"
	"io"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/scenarios"
	"github.com/speech-pipeline/underrun/tts"
)

// TestChunksTableOnDefaultTurn: `underrun --chunks` lists every speech
// chunk of the README's default turn as the engine plays it.
func TestChunksTableOnDefaultTurn(t *testing.T) {
	t.Parallel()
	_, out, errOut := runCLI(t, "", "--chunks")
	p, err := pipeline.Play(pipeline.DefaultConfig(), scenarios.DefaultTurn())
	if err != nil {
		t.Fatal(err)
	}
	head := fmt.Sprintf("speech chunks of turn default (%d; times in ms since the request):", len(p.Chunks))
	i := strings.Index(out, head)
	if i < 0 {
		t.Fatalf("no %q in the output (stderr %s):\n%s", head, errOut, out)
	}
	rows := strings.Split(strings.TrimSpace(out[i:]), "\n")[2:]
	if len(rows) < len(p.Chunks) {
		t.Fatalf("%d rows for %d chunks", len(rows), len(p.Chunks))
	}
	var text strings.Builder
	for k, c := range p.Chunks {
		by := fmt.Sprintf("token %d", c.Trigger)
		if c.End {
			by = "end"
		}
		want := fmt.Sprintf("  %5d %9.1f  %-12s %11.1f %11.1f %10.1f %9.1f %8.1f  %q", k, pipeline.Millis(c.Release), by,
			pipeline.Millis(c.Start), pipeline.Millis(c.Ready), pipeline.Millis(c.PlayStart), pipeline.Millis(c.PlayEnd), pipeline.Millis(c.Audio), p.Text(c))
		if rows[k] != want {
			t.Errorf("row %d:\n got %q\nwant %q", k, rows[k], want)
		}
		text.WriteString(p.Text(c))
	}
	if got, want := text.String(), scenarios.DefaultText(); got != want {
		t.Errorf("the chunks say %q, the turn %q", got, want)
	}
	// the first word waits for the comma; the stall's victim is chunk 1
	if !strings.HasPrefix(rows[0], "      0     324.0  token 2 ") || !strings.HasSuffix(rows[0], `"Sure, "`) {
		t.Errorf("first row %q", rows[0])
	}
}

// chunkEvents reads the "chunk" events of an --events file.
func chunkEvents(t *testing.T, path string) []pipeline.ChunkReport {
	t.Helper()
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out []pipeline.ChunkReport
	for _, line := range strings.Split(strings.TrimSpace(string(data)), "\n") {
		var ev struct {
			Event string `json:"event"`
			pipeline.ChunkReport
		}
		if err := json.Unmarshal([]byte(line), &ev); err != nil {
			t.Fatalf("event %q: %v", line, err)
		}
		if ev.Event == "chunk" {
			out = append(out, ev.ChunkReport)
		}
	}
	return out
}

// TestChunkEventsMatchEngine: every speech chunk is one "chunk" event
// whose fields are the engine's timeline of that chunk, for releases by a
// token, by the policy's timer and by the end of the turn, in each mode.
func TestChunkEventsMatchEngine(t *testing.T) {
	t.Parallel()
	trace := filepath.Join(t.TempDir(), "t.jsonl")
	// a sentence that stalls mid-way, then ends the turn without a
	// sentence end: the timer fires during the stall, the end releases the
	// rest
	var b strings.Builder
	b.WriteString(`{"type":"header","format":"underrun-trace","version":1}` + "\n" + `{"type":"turn","turn":"t1","session":"s1"}` + "\n")
	at := 300
	for i, w := range []string{"Sure.", " The", " train", " leaves", " at", " nine", " from", " platform", " four", " and"} {
		if i == 6 {
			at += 1500
		}
		fmt.Fprintf(&b, `{"type":"chunk","turn":"t1","t_ns":%d000000,"text":%q}`+"\n", at, w)
		at += 40
	}
	b.WriteString(`{"type":"end","turn":"t1","status":"ok"}` + "\n")
	if err := os.WriteFile(trace, []byte(b.String()), 0o644); err != nil {
		t.Fatal(err)
	}
	for _, tc := range []struct {
		chunking, mode string
		by             []string
	}{
		{"timer:400ms", "stream", []string{"token", "timer", "end"}},
		{"sentence", "request", []string{"end"}},
		{"word", "parallel", []string{"token", "end"}},
	} {
		t.Run(tc.chunking+"/"+tc.mode, func(t *testing.T) {
			t.Parallel()
			events := filepath.Join(t.TempDir(), "events.jsonl")
			code, _, errOut := runCLI(t, "", "analyze", "--chunking", tc.chunking, "--tts-mode", tc.mode, "--events", events, trace)
			if code == exitUsage {
				t.Fatalf("exit %d: %s", code, errOut)
			}
			got := chunkEvents(t, events)
			cfg := pipeline.DefaultConfig()
			cfg.Policy, _ = tts.ParsePolicy(tc.chunking)
			cfg.Synth.Mode = tts.Mode(tc.mode)
			in, err := os.Open(trace)
			if err != nil {
				t.Fatal(err)
			}
			defer in.Close()
			turn := readOneTurn(t, in)
			p, err := pipeline.Play(cfg, turn)
			if err != nil {
				t.Fatal(err)
			}
			if len(got) != len(p.Chunks) {
				t.Fatalf("%d chunk events, the engine released %d chunks", len(got), len(p.Chunks))
			}
			seen := map[string]bool{}
			for i, c := range p.Chunks {
				e := got[i]
				seen[e.ReleasedBy] = true
				want := pipeline.ChunkReport{Turn: "t1", Session: "s1", Index: i, Text: p.Text(c),
					ReleaseMs: pipeline.Millis(c.Release), Token: c.Trigger,
					SynthStartMs: pipeline.Millis(c.Start), FirstAudioMs: pipeline.Millis(c.Ready),
					PlayStartMs: pipeline.Millis(c.PlayStart), PlayEndMs: pipeline.Millis(c.PlayEnd), AudioMs: pipeline.Millis(c.Audio)}
				switch {
				case c.End:
					want.ReleasedBy = pipeline.ReleasedByEnd
				case c.Timer:
					want.ReleasedBy = pipeline.ReleasedByTimer
				default:
					want.ReleasedBy = pipeline.ReleasedByToken
				}
				if e != want {
					t.Errorf("chunk %d:\n got %+v\nwant %+v", i, e, want)
				}
				if e.FirstAudioMs < e.ReleaseMs || e.PlayStartMs < e.FirstAudioMs || e.PlayEndMs < e.PlayStartMs {
					t.Errorf("chunk %d out of order: %+v", i, e)
				}
			}
			for _, by := range tc.by {
				if !seen[by] {
					t.Errorf("no chunk released by %s: %+v", by, got)
				}
			}
		})
	}
}

// readOneTurn decodes the first turn of a trace.
func readOneTurn(t *testing.T, r io.Reader) *pipeline.Turn {
	t.Helper()
	dec, err := trace.Open(r, "trace", "auto")
	if err != nil {
		t.Fatal(err)
	}
	turn, err := dec.Next()
	if err != nil {
		t.Fatal(err)
	}
	return turn
}
