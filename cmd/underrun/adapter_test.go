//go:build unix

package main

import (
	"context"
	"encoding/json"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/tts/stream/streamtest"
)

// adapterSession runs a framework adapter's example (the command run
// makes, given the mock's /v1 URL, the monitor's URL and the file it is
// to write what its player heard into) against a mock of turns with
// espeak-ng speaking, reporting to a monitor process (its args added).
// It decodes that file into heard (a pointer to a slice, one element per
// turn, n of them) and returns the monitor's events up to
// the heard event of each of the n turns.
func adapterSession(t *testing.T, turns []*pipeline.Turn, n int, run func(llm, monitor, out string) *exec.Cmd, heard any, monitorArgs ...string) []heardEvent {
	t.Helper()
	e := streamtest.Espeak(t, 320)
	srv := httptest.NewServer(&openai.Mock{Turns: turns, Speech: e})
	defer srv.Close()
	mon := startMonitorProcess(t, append([]string{"--events", ""}, monitorArgs...)...)
	events, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(mon.url, "http")+"/events", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer events.Close()
	if _, _, err := events.ReadMessage(); err != nil { // hello: every event from now on comes
		t.Fatal(err)
	}
	out := filepath.Join(t.TempDir(), "heard.json")
	cmd := run(srv.URL+"/v1", mon.url, out)
	if b, err := cmd.CombinedOutput(); err != nil {
		t.Fatalf("the pipeline (%s): %v\n%s", strings.Join(cmd.Args, " "), err, b)
	} else {
		t.Logf("the pipeline:\n%s", b)
	}
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	if err := json.Unmarshal(b, heard); err != nil {
		t.Fatal(err)
	}
	if got := reflect.ValueOf(heard).Elem().Len(); got != n {
		t.Fatalf("the pipeline's player heard %d turns, want %d", got, n)
	}
	var evs []heardEvent
	events.SetReadDeadline(time.Now().Add(time.Minute))
	for got := 0; got < n; {
		_, b, err := events.ReadMessage()
		if err != nil {
			t.Fatalf("waiting for the heard events (%d of %d came): %v", got, n, err)
		}
		var ev heardEvent
		if err := json.Unmarshal(b, &ev); err != nil {
			t.Fatal(err)
		}
		if ev.Type == "heard" {
			got++
		}
		evs = append(evs, ev)
	}
	return evs
}

// chunkingFixture is where the chunking fixtures and the frameworks'
// recorded release points are.
const chunkingFixture = "../../tts/testdata/chunking"

// fixtureTurns returns the replies of the chunking fixtures as mock turns,
// streamed token by token 1 ms apart, and their ids.
func fixtureTurns(t *testing.T) ([]string, []*pipeline.Turn) {
	t.Helper()
	b, err := os.ReadFile(filepath.Join(chunkingFixture, "replies.jsonl"))
	if err != nil {
		t.Fatal(err)
	}
	var ids []string
	var turns []*pipeline.Turn
	for _, line := range strings.Split(strings.TrimSpace(string(b)), "\n") {
		var r struct {
			ID     string   `json:"id"`
			Tokens []string `json:"tokens"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		turn := &pipeline.Turn{ID: r.ID, Status: pipeline.StatusOK}
		for k, tok := range r.Tokens {
			turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: 20*time.Millisecond + time.Duration(k)*time.Millisecond, Text: tok, Tokens: 1})
		}
		ids = append(ids, r.ID)
		turns = append(turns, turn)
	}
	return ids, turns
}

// checkReleases compares the release points a framework's example wrote
// (file out: a line {"chunks":[...]} per reply, in the order of ids) with
// the recording expect/NAME.jsonl, or rewrites the recording when record
// is set; flag names the test flag that does.
func checkReleases(t *testing.T, out string, ids []string, name, flag string, record bool) {
	t.Helper()
	b, err := os.ReadFile(out)
	if err != nil {
		t.Fatal(err)
	}
	lines := strings.Split(strings.TrimSpace(string(b)), "\n")
	if len(lines) != len(ids) {
		t.Fatalf("%d replies recorded, want %d", len(lines), len(ids))
	}
	var got strings.Builder
	for i, line := range lines {
		var r struct {
			Chunks []json.RawMessage `json:"chunks"`
		}
		if err := json.Unmarshal([]byte(line), &r); err != nil {
			t.Fatal(err)
		}
		c, _ := json.Marshal(r.Chunks)
		id, _ := json.Marshal(ids[i])
		got.WriteString(`{"id":` + string(id) + `,"chunks":` + string(c) + "}\n")
	}
	path := filepath.Join(chunkingFixture, "expect", name+".jsonl")
	if record {
		if err := os.WriteFile(path, []byte(got.String()), 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if got.String() != string(want) {
		t.Errorf("the release points differ from %s (-args -%s rewrites it):\n%s", path, flag, got.String())
	}
}

// patternTurns returns the mock's turns for a stall pattern of the adapter
// tests: a scenario's, or for "" the one turn of the tool-call trace.
func patternTurns(t *testing.T, scenario string) []*pipeline.Turn {
	t.Helper()
	if scenario == "" {
		return []*pipeline.Turn{toolCallTurn(t)}
	}
	turns, _, err := scenarioTurns(context.Background(), scenario, 0)
	if err != nil {
		t.Fatal(err)
	}
	return turns
}

// heardByTurn returns the heard events of evs by turn, and the last
// tool_call event.
func heardByTurn(evs []heardEvent) (map[string]heardEvent, heardEvent) {
	heard := map[string]heardEvent{}
	var call heardEvent
	for _, ev := range evs {
		switch ev.Type {
		case "heard":
			heard[ev.Turn] = ev
		case "tool_call":
			call = ev
		}
	}
	return heard, call
}

// venvPython returns the python of a Python adapter's virtual environment
// (dir/.venv, which .ci/run makes from dir/requirements.lock and puts the
// shared monitor client, pipeline/monitor/pyclient, on the path of) where
// the distribution name is installed (its folder pkg in site-packages), or
// skips the test saying how to make it.
func venvPython(t *testing.T, dir, pkg, name string) string {
	t.Helper()
	py, err := filepath.Abs(filepath.Join(dir, ".venv", "bin", "python"))
	if err != nil {
		t.Fatal(err)
	}
	rel := strings.TrimPrefix(dir, "../../")
	if _, err := os.Stat(py); err != nil {
		t.Skipf("%s's virtual environment is missing: .ci/run makes it (%s/.venv from requirements.lock, pipeline/monitor/pyclient on its path)", rel, rel)
	}
	for _, want := range []string{filepath.FromSlash(pkg), "underrun-monitor.pth"} {
		if m, _ := filepath.Glob(filepath.Join(dir, ".venv", "lib", "python3*", "site-packages", want)); len(m) == 0 {
			t.Skipf("%s is not in %s/.venv: .ci/run installs %s from requirements.lock and puts pipeline/monitor/pyclient on the path", want, rel, name)
		}
	}
	return py
}

// monitorDown runs an adapter's example (the command run makes, given the
// mock's /v1 URL and the address of a monitor nothing listens on) against
// the mock's two stalls with espeak-ng speaking: the turn is played and
// heard as without a monitor, the failure to connect said once, nothing
// sent.
func monitorDown(t *testing.T, run func(llm, monitor string) *exec.Cmd) {
	t.Helper()
	e := streamtest.Espeak(t, 320)
	srv := httptest.NewServer(&openai.Mock{Turns: patternTurns(t, "testdata/speak/stalls.yaml"), Speech: e})
	defer srv.Close()
	down := httptest.NewServer(nil)
	down.Close() // nothing listens there now
	b, err := run(srv.URL+"/v1", down.URL).CombinedOutput()
	if err != nil {
		t.Fatalf("the pipeline with the monitor down: %v\n%s", err, b)
	}
	if n := strings.Count(string(b), "cannot connect"); n != 1 {
		t.Errorf("the failure to connect was reported %d times, want once:\n%s", n, b)
	}
	if !strings.Contains(string(b), "monitor: 0 messages sent") || !strings.Contains(string(b), ": first audio at") {
		t.Errorf("want the turn played and heard, nothing sent:\n%s", b)
	}
}
