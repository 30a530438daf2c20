package scenarios

import (
	"encoding/json"
	"math"
	"strings"
	"testing"

	"github.com/speech-pipeline/underrun/sim"
)

func TestNewRunJSON(t *testing.T) {
	s, err := Builtin("tpot-50ms")
	if err != nil {
		t.Fatal(err)
	}
	checks := []Check{
		{Expectation: Expectation{Metric: "tpot_p50_ms", Op: "<", Value: 50, Line: 3}, Got: 42, Pass: true},
		{Expectation: Expectation{Metric: "mc_goodput", Op: ">=", Value: 0.99}, Got: math.NaN()},
	}
	out := NewRunJSON(s, checks, false)
	if out.Verdict != "fail" || out.Scenario.Name != s.Name || out.Scenario.Turns != s.Turns {
		t.Fatalf("run = %+v", out)
	}
	if len(out.Expectations) != 2 || out.Expectations[0].Got == nil || *out.Expectations[0].Got != 42 || out.Expectations[0].Line != 3 {
		t.Fatalf("first check = %+v", out.Expectations[0])
	}
	b, err := json.Marshal(out)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{`"verdict":"fail"`, `"got":null`, `"metric":"mc_goodput"`, `"expectations":[`} {
		if !strings.Contains(string(b), want) {
			t.Errorf("JSON lacks %s: %s", want, b)
		}
	}
	if strings.Contains(string(b), `"report"`) || strings.Contains(string(b), `"sweep"`) {
		t.Errorf("empty parts not left out: %s", b)
	}
	if e := NewRunJSON(s, nil, true); e.Expectations == nil || e.Verdict != "pass" {
		t.Errorf("no checks: %+v", e)
	}
}

func TestNewAnswerJSON(t *testing.T) {
	a := sim.Answer{Param: sim.Param("tpot"), Found: true, Value: 0.05, Goodput: 0.995, Target: 0.99}
	j := NewAnswerJSON(a)
	if j.Param != "tpot" || !j.Found || j.Value != 0.05 || j.Label != a.Param.Format(0.05) || j.Text != a.String() {
		t.Errorf("answer = %+v", j)
	}
}
