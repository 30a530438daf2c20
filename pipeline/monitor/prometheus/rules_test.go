package prometheus_test

import (
	"bytes"
	"context"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/goccy/go-yaml"
	"github.com/gorilla/websocket"
	prom "github.com/prometheus/client_golang/prometheus"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/monitor/prometheus"
	"github.com/speech-pipeline/underrun/pipeline/otlp"
	"github.com/speech-pipeline/underrun/tts"
)

// promtool returns the path of promtool, or skips the test.
func promtool(t *testing.T) string {
	t.Helper()
	path, err := exec.LookPath("promtool")
	if err != nil {
		t.Skip("promtool is not installed (Debian: apt-get install prometheus): the rules are not checked")
	}
	return path
}

// runPromtool runs promtool with args (and stdin) and fails the test unless
// it exits 0 with nothing on standard error.
func runPromtool(t *testing.T, stdin io.Reader, args ...string) string {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	cmd.Stdin = stdin
	var out, errOut bytes.Buffer
	cmd.Stdout, cmd.Stderr = &out, &errOut
	if err := cmd.Run(); err != nil || errOut.Len() > 0 {
		t.Fatalf("promtool %s: %v\n%s%s", strings.Join(args, " "), err, out.String(), errOut.String())
	}
	return out.String()
}

func TestPromtoolCheckRules(t *testing.T) {
	t.Parallel()
	if out := runPromtool(t, nil, "check", "rules", "rules.yml"); !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool check rules: %s", out)
	}
}

func TestPromtoolTestRules(t *testing.T) {
	t.Parallel()
	if out := runPromtool(t, nil, "test", "rules", "rules_test.yml"); !strings.Contains(out, "SUCCESS") {
		t.Errorf("promtool test rules: %s", out)
	}
}

// TestPromtoolCheckMetrics lints a live monitor's /metrics after a turn
// with an underrun has filled its histograms.
func TestPromtoolCheckMetrics(t *testing.T) {
	t.Parallel()
	promtool(t)
	cfg := pipeline.DefaultConfig()
	cfg.Policy, _ = tts.ParsePolicy("token")
	cfg.TokenAudio, cfg.Voice.TokenAudio = 20*time.Millisecond, 20*time.Millisecond
	cfg.Synth = tts.Synth{}
	clock := pipeline.NewManualClock(time.Unix(1_700_000_000, 0))
	s, err := monitor.New(monitor.Options{Config: cfg, Clock: clock})
	if err != nil {
		t.Fatal(err)
	}
	ts := httptest.NewServer(s)
	defer ts.Close()
	defer s.Shutdown(context.Background())
	c, _, err := websocket.DefaultDialer.Dial("ws"+strings.TrimPrefix(ts.URL, "http")+"/ingest?session=s", nil)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	send := func(msgs ...string) {
		t.Helper()
		for _, m := range msgs {
			if err := c.WriteMessage(websocket.TextMessage, []byte(m)); err != nil {
				t.Fatal(err)
			}
		}
	}
	// 40 ms of speech, then a 380 ms stall: an interruption
	send(`{"type":"turn_start","turn":"t"}`, `{"type":"chunk","turn":"t","text":"a","t_ms":10}`,
		`{"type":"chunk","turn":"t","text":" b","t_ms":20}`)
	for deadline := time.Now().Add(10 * time.Second); s.Stats().Received < 3; time.Sleep(time.Millisecond) {
		if time.Now().After(deadline) {
			t.Fatalf("the monitor took %+v, want 3 messages", s.Stats())
		}
	}
	clock.Advance(400 * time.Millisecond)
	send(`{"type":"chunk","turn":"t","text":" c","t_ms":400}`, `{"type":"turn_end","turn":"t"}`,
		`{"type":"chunk","turn":"nope","text":"x"}`)
	var body []byte
	for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(5 * time.Millisecond) {
		resp, err := http.Get(ts.URL + "/metrics")
		if err != nil {
			t.Fatal(err)
		}
		body, err = io.ReadAll(resp.Body)
		resp.Body.Close()
		if err != nil {
			t.Fatal(err)
		}
		if bytes.Contains(body, []byte(`underrun_turns_total{status="ok"} 1`)) && bytes.Contains(body, []byte(`underrun_messages_refused_total{reason="rejected"} 1`)) {
			break
		}
		if time.Now().After(deadline) {
			t.Fatalf("the turn never showed in /metrics:\n%s", body)
		}
	}
	for _, want := range []string{"underrun_interruptions_total 1", "underrun_good_turns_total 0", "underrun_max_sessions 10000", "underrun_speech_seconds_total 0.06"} {
		if !bytes.Contains(body, []byte(want+"\n")) {
			t.Errorf("/metrics lacks %q", want)
		}
	}
	runPromtool(t, bytes.NewReader(body), "check", "metrics")
}

// ruleFile is the part of a Prometheus rule file these tests read.
type ruleFile struct {
	Groups []struct {
		Rules []struct {
			Record string `yaml:"record"`
			Alert  string `yaml:"alert"`
			Expr   string `yaml:"expr"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// ruleTests is the part of a promtool unit test file these tests read.
type ruleTests struct {
	Tests []struct {
		AlertRuleTest []struct {
			Alertname string           `yaml:"alertname"`
			ExpAlerts []map[string]any `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
		PromQLExprTest []struct {
			Expr string `yaml:"expr"`
		} `yaml:"promql_expr_test"`
	} `yaml:"tests"`
}

func readYAML(t *testing.T, path string, v any) {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	if err := yaml.Unmarshal(b, v); err != nil {
		t.Fatalf("%s: %v", path, err)
	}
}

// TestEveryAlertFiresAndStaysQuiet: each alert has a unit test in which it
// fires and one in which it must not, and the embedded rules are the file.
func TestEveryAlertFiresAndStaysQuiet(t *testing.T) {
	t.Parallel()
	var rules ruleFile
	var tests ruleTests
	readYAML(t, "rules.yml", &rules)
	readYAML(t, "rules_test.yml", &tests)
	fires, quiet := map[string]bool{}, map[string]bool{}
	for _, tc := range tests.Tests {
		for _, a := range tc.AlertRuleTest {
			if len(a.ExpAlerts) > 0 {
				fires[a.Alertname] = true
			} else {
				quiet[a.Alertname] = true
			}
		}
	}
	alerts := 0
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			if r.Alert == "" {
				continue
			}
			alerts++
			if !fires[r.Alert] || !quiet[r.Alert] {
				t.Errorf("alert %s: a test where it fires: %v, one where it stays quiet: %v; want both", r.Alert, fires[r.Alert], quiet[r.Alert])
			}
		}
	}
	if alerts < 5 {
		t.Errorf("%d alerts in rules.yml", alerts)
	}
	file, err := os.ReadFile("rules.yml")
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(file, prometheus.Rules) {
		t.Error("prometheus.Rules is not rules.yml")
	}
}

// TestRulesQueryWhatExists: every metric a rule reads is one the monitor
// exports, or one recorded by an earlier rule; recorded names follow
// level:metric:operations.
func TestRulesQueryWhatExists(t *testing.T) {
	t.Parallel()
	// a monitor with --otlp: its /metrics count the spans
	exp, err := otlp.New(context.Background(), otlp.Options{Endpoint: "http://127.0.0.1:4318"})
	if err != nil {
		t.Fatal(err)
	}
	defer exp.Shutdown(context.Background())
	s, err := monitor.New(monitor.Options{Config: pipeline.DefaultConfig(), Collectors: []prom.Collector{exp.Collector()}})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(context.Background())
	families, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	exported := map[string]bool{"up": true}
	for _, f := range families {
		exported[f.GetName()] = true
	}
	var rules ruleFile
	readYAML(t, "rules.yml", &rules)
	recorded := map[string]bool{}
	name := regexp.MustCompile(`[a-zA-Z_:][a-zA-Z0-9_:]*`)
	convention := regexp.MustCompile(`^[a-z_]+:underrun_[a-z_]+:[a-z0-9_]+$`)
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			for _, m := range name.FindAllString(r.Expr, -1) {
				switch {
				case strings.Contains(m, ":"):
					if !recorded[m] {
						t.Errorf("rule %s%s reads %s, which no earlier rule records", r.Record, r.Alert, m)
					}
				case strings.HasPrefix(m, "underrun_") || m == "up":
					base := m
					for _, suffix := range []string{"_bucket", "_sum", "_count"} {
						base = strings.TrimSuffix(base, suffix)
					}
					if !exported[base] {
						t.Errorf("rule %s%s reads %s, which the monitor does not export", r.Record, r.Alert, m)
					}
				}
			}
			if r.Record != "" {
				if !convention.MatchString(r.Record) {
					t.Errorf("recorded name %s is not level:metric:operations", r.Record)
				}
				recorded[r.Record] = true
			}
		}
	}
}
