package main

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"math"
	"net/http"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"
)

// fleetTraces are three recorded traces, each of other sessions: captured
// with `underrun capture --session NAME` from `underrun mock --scenario`
// (default: kitchen and car; prefill-unchunked: desk and phone;
// policy-word: tv), turns renamed SESSION/TURN and each session's start
// moved next to the others', so that a trace plays in about 6 s.
var fleetTraces = []string{"testdata/fleet/a.jsonl", "testdata/fleet/b.jsonl", "testdata/fleet/c.jsonl"}

// TestFleetUnderPrometheus runs a fleet as the README lays it out: three
// monitors, each fed a different recorded trace with `monitor feed`, one
// real Prometheus scraping them with the rules of `monitor rules`. The
// fleet's recorded interruptions, speech seconds, turns and goodput are
// what `analyze` reports over the union of the traces.
func TestFleetUnderPrometheus(t *testing.T) {
	t.Parallel()
	promBin, err := exec.LookPath("prometheus")
	if err != nil {
		t.Skip("prometheus is not installed (Debian: apt-get install prometheus): the fleet is not tested")
	}
	began := time.Now()
	dir := t.TempDir()
	model := []string{"--chunking", "word", "--tts-latency", "100ms", "--rtf", "0.1"}

	var targets []string
	mons := make([]*server, len(fleetTraces))
	for i := range mons {
		mons[i] = startServer(t, append([]string{"monitor", "--listen", "127.0.0.1:0", "--events", ""}, model...)...)
		defer mons[i].stop(t)
		targets = append(targets, strings.TrimPrefix(mons[i].url, "http://"))
	}
	code, rules, errOut := runCLI(t, "", "monitor", "rules")
	if code != exitOK {
		t.Fatalf("monitor rules: exit %d: %s", code, errOut)
	}
	rulesPath, cfgPath := filepath.Join(dir, "underrun.rules.yml"), filepath.Join(dir, "prometheus.yml")
	cfg := fmt.Sprintf(`global:
  scrape_interval: 250ms
  scrape_timeout: 200ms
  evaluation_interval: 250ms
rule_files: [%q]
scrape_configs:
  - job_name: underrun
    static_configs:
      - targets: [%s]
`, rulesPath, strings.Join(targets, ", "))
	for path, text := range map[string]string{rulesPath: rules, cfgPath: cfg} {
		if err := os.WriteFile(path, []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	promURL := startPrometheus(t, promBin, "--config.file="+cfgPath, "--storage.tsdb.path="+filepath.Join(dir, "data"),
		"--web.listen-address=127.0.0.1:0")

	// every monitor gets its own trace, all at once
	var wg sync.WaitGroup
	for i, tr := range fleetTraces {
		wg.Add(1)
		go func() {
			defer wg.Done()
			code, out, errOut := runCLI(t, "", "monitor", "feed", tr, "--monitor", mons[i].url)
			if code != exitOK || !strings.HasSuffix(out, " 0 refused\n") {
				t.Errorf("feed %s: exit %d: %s%s", tr, code, out, errOut)
			}
		}()
	}
	// meanwhile, the truth: analyze over the union of the traces
	var union []byte
	for _, tr := range fleetTraces {
		b, err := os.ReadFile(tr)
		if err != nil {
			t.Fatal(err)
		}
		union = append(union, b...)
	}
	unionPath := filepath.Join(dir, "union.jsonl")
	if err := os.WriteFile(unionPath, union, 0o644); err != nil {
		t.Fatal(err)
	}
	code, out, errOut := runCLI(t, "", append([]string{"analyze", "--report", "json", "--max-tpot=false", unionPath}, model...)...)
	if code != exitOK && code != exitFail {
		t.Fatalf("analyze: exit %d: %s", code, errOut)
	}
	var truth struct {
		Turns         int `json:"turns"`
		Interruptions struct {
			Count int `json:"count"`
		} `json:"interruptions"`
		SpeechMs               float64 `json:"speech_ms"`
		SpeechGoodput          float64 `json:"speech_goodput"`
		InterruptionsPerMinute float64 `json:"interruptions_per_minute"`
	}
	if err := json.Unmarshal([]byte(out), &truth); err != nil {
		t.Fatalf("analyze --report json: %v", err)
	}
	if truth.Turns != 10 || truth.Interruptions.Count == 0 || truth.SpeechGoodput == 1 {
		t.Fatalf("the traces should hold 10 turns, some interrupted: %+v", truth)
	}
	wg.Wait()

	want := []struct {
		query string
		value float64
	}{
		{"job:underrun_turns_total:sum", float64(truth.Turns)},
		{"job:underrun_interruptions_total:sum", float64(truth.Interruptions.Count)},
		{"job:underrun_speech_seconds_total:sum", truth.SpeechMs / 1000},
		{"job:underrun_good_turns_per_turns:ratio", truth.SpeechGoodput},
		{"job:underrun_interruptions_per_speech_minute:ratio", truth.InterruptionsPerMinute},
		{`count(up{job="underrun"} == 1)`, float64(len(mons))},
	}
	// the monitors have taken in every message; Prometheus gets there at
	// its next scrape and evaluation
	got := make([]float64, len(want))
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(50 * time.Millisecond) {
		done := true
		for i, w := range want {
			got[i] = queryPrometheus(t, promURL, w.query)
			if !(math.Abs(got[i]-w.value) <= 1e-9*math.Max(1, math.Abs(w.value))) {
				done = false
			}
		}
		if done {
			break
		}
		if time.Now().After(deadline) {
			for i, w := range want {
				t.Errorf("%s = %v, want %v (analyze)", w.query, got[i], w.value)
			}
			t.FailNow()
		}
	}
	t.Logf("the fleet matched analyze %v after the test began (%d turns, %d interruptions, %.1f s of speech, goodput %.2f)",
		time.Since(began).Round(time.Millisecond), truth.Turns, truth.Interruptions.Count, truth.SpeechMs/1000, truth.SpeechGoodput)
}

// startPrometheus runs the Prometheus server with args until the test
// ends and returns its address once it is ready.
func startPrometheus(t *testing.T, bin string, args ...string) string {
	t.Helper()
	cmd := exec.Command(bin, args...)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	var log strings.Builder
	logDone := make(chan struct{})
	t.Cleanup(func() {
		cmd.Process.Kill()
		<-logDone
		cmd.Wait()
	})
	listening := regexp.MustCompile(`msg="Listening on" address=(\S+)`)
	lines := bufio.NewScanner(stderr)
	addr := ""
	for addr == "" && lines.Scan() {
		log.WriteString(lines.Text() + "\n")
		if m := listening.FindStringSubmatch(lines.Text()); m != nil {
			addr = m[1]
		}
	}
	go func() {
		io.Copy(io.Discard, stderr)
		close(logDone)
	}()
	if addr == "" {
		t.Fatalf("prometheus never said where it listens:\n%s", log.String())
	}
	base := "http://" + addr
	for deadline := time.Now().Add(30 * time.Second); ; time.Sleep(20 * time.Millisecond) {
		resp, err := http.Get(base + "/-/ready")
		if err == nil {
			resp.Body.Close()
			if resp.StatusCode == http.StatusOK {
				return base
			}
		}
		if time.Now().After(deadline) {
			t.Fatalf("prometheus at %s not ready: %v\n%s", base, err, log.String())
		}
	}
}

// queryPrometheus evaluates an instant query that gives one sample (NaN
// while it gives none).
func queryPrometheus(t *testing.T, base, query string) float64 {
	t.Helper()
	resp, err := http.Get(base + "/api/v1/query?query=" + url.QueryEscape(query))
	if err != nil {
		t.Fatal(err)
	}
	defer resp.Body.Close()
	var r struct {
		Status string `json:"status"`
		Error  string `json:"error"`
		Data   struct {
			Result []struct {
				Value [2]any `json:"value"`
			} `json:"result"`
		} `json:"data"`
	}
	if err := json.NewDecoder(resp.Body).Decode(&r); err != nil {
		t.Fatalf("query %s: %v", query, err)
	}
	if r.Status != "success" {
		t.Fatalf("query %s: %s", query, r.Error)
	}
	switch len(r.Data.Result) {
	case 0:
		return math.NaN()
	case 1:
	default:
		t.Fatalf("query %s: %d samples, want one", query, len(r.Data.Result))
	}
	s, _ := r.Data.Result[0].Value[1].(string)
	v, err := strconv.ParseFloat(s, 64)
	if err != nil {
		t.Fatalf("query %s: value %v: %v", query, r.Data.Result[0].Value[1], err)
	}
	return v
}
