package monitor

import (
	"encoding/json"
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestGrafanaDashboard checks that the sample dashboard is valid JSON and
// queries only metrics the monitor exports.
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
	name := regexp.MustCompile(`underrun_[a-z_]+`)
	queries := 0
	for _, p := range d.Panels {
		for _, tg := range p.Targets {
			queries++
			for _, m := range name.FindAllString(tg.Expr, -1) {
				base := strings.TrimSuffix(m, "_bucket")
				if !known[base] {
					t.Errorf("panel %q queries %s, which the monitor does not export", p.Title, m)
				}
			}
		}
	}
	if queries < 10 {
		t.Errorf("%d queries in the dashboard", queries)
	}
}
