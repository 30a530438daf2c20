package monitor

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"

	"github.com/goccy/go-yaml"

	"github.com/speech-pipeline/underrun/pipeline/monitor/prometheus"
)

// TestGrafanaDashboard checks that the sample dashboard is valid JSON and
// queries only metrics the monitor exports and series the fleet's
// recording rules (package prometheus) record, and uses those rules for
// its fleet-wide figures.
func TestGrafanaDashboard(t *testing.T) {
	t.Parallel()
	b, err := os.ReadFile("grafana/underrun.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		Panels []struct {
			Title   string `json:"title"`
			Targets []struct {
				Expr string `json:"expr"`
			} `json:"targets"`
		} `json:"panels"`
	}
	if err := json.Unmarshal(b, &d); err != nil {
		t.Fatalf("grafana/underrun.json: %v", err)
	}
	s, err := New(Options{Config: tokenConfig(0, 0)})
	if err != nil {
		t.Fatal(err)
	}
	defer s.Shutdown(t.Context())
	families, err := s.Registry().Gather()
	if err != nil {
		t.Fatal(err)
	}
	known := map[string]bool{}
	for _, f := range families {
		known[f.GetName()] = true
	}
	var rules struct {
		Groups []struct {
			Rules []struct {
				Record string `yaml:"record"`
			} `yaml:"rules"`
		} `yaml:"groups"`
	}
	if err := yaml.Unmarshal(prometheus.Rules, &rules); err != nil {
		t.Fatal(err)
	}
	recorded := map[string]bool{}
	for _, g := range rules.Groups {
		for _, r := range g.Rules {
			recorded[r.Record] = r.Record != ""
		}
	}
	name := regexp.MustCompile(`[a-z_:]*underrun_[a-z_:0-9]+`)
	queries, usesRules := 0, 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, m := range name.FindAllString(tg.Expr, -1) {
				switch base := strings.TrimSuffix(m, "_bucket"); {
				case strings.Contains(m, ":"):
					usesRules++
					if !recorded[m] {
						t.Errorf("panel %q queries %s, which no recording rule records", p.Title, m)
					}
				case !known[base]:
					t.Errorf("panel %q queries %s, which the monitor does not export", p.Title, m)
				}
			}
		}
	}
	if queries < 10 || usesRules < 10 {
		t.Errorf("%d queries in the dashboard, %d of recorded series", queries, usesRules)
	}
}
