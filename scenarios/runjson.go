package scenarios

import (
	"encoding/json"
	"math"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/sim"
)

// RunJSON is the JSON form of a sim run (underrun sim --output json); its
// keys are stable.
type RunJSON struct {
	// Answer is what the listener hears and the one verdict, as the
	// report of the scenario's turns says it (absent for sweeps and
	// questions).
	Answer   *pipeline.Answer `json:"answer,omitempty"`
	Scenario ScenarioJSON     `json:"scenario"`
	// Report is the JSON report of the scenario's turns (absent for sweeps
	// and questions).
	Report     json.RawMessage `json:"report,omitempty"`
	MonteCarlo *sim.Result     `json:"monte_carlo,omitempty"`
	// Expectations are the scenario's checks, an empty list when none.
	Expectations []CheckJSON `json:"expectations"`
	Verdict      string      `json:"verdict"`
	// Sweep and Answers are a --sweep's points and the inverse answers.
	Sweep   []SweepJSON  `json:"sweep,omitempty"`
	Answers []AnswerJSON `json:"answers,omitempty"`
}

// NewScenarioJSON describes s.
func NewScenarioJSON(s *Scenario) ScenarioJSON {
	out := ScenarioJSON{Name: s.Name, Doc: s.Doc, Source: s.Source, Generator: s.Setup.Gen.String(),
		Seed: s.Seed, Turns: s.Turns, MonteCarlo: s.MonteCarlo, RooflineAccuracy: s.RooflineAccuracy()}
	if srv := s.Setup.Server; srv != nil {
		ttfa, rtf := srv.At(srv.Typical())
		out.TTSServer = &TTSServerJSON{Name: srv.Name, Source: srv.Source, Sessions: srv.Sessions, Active: srv.Active,
			Typical: srv.Typical(), TypicalTTFAMs: float64(ttfa) / 1e6, TypicalRTF: rtf}
	}
	return out
}

// TTSServerJSON describes the TTS server a scenario's sessions share:
// the report's turns play at its typical load.
type TTSServerJSON struct {
	Name          string  `json:"name"`
	Source        string  `json:"source"`
	Sessions      int     `json:"sessions"`
	Active        float64 `json:"active"`
	Typical       int     `json:"typical_streams"`
	TypicalTTFAMs float64 `json:"typical_ttfa_ms"`
	TypicalRTF    float64 `json:"typical_rtf"`
}

// ScenarioJSON describes the scenario a run simulated.
type ScenarioJSON struct {
	Name       string `json:"name"`
	Doc        string `json:"doc"`
	Source     string `json:"source"`
	Generator  string `json:"generator"`
	Seed       uint64 `json:"seed"`
	Turns      int    `json:"turns"`
	MonteCarlo int    `json:"monte_carlo"`
	// RooflineAccuracy is the decode model's measured error band, for
	// roofline generators.
	RooflineAccuracy *sim.Accuracy `json:"roofline_accuracy,omitempty"`
	// TTSServer is the TTS server the sessions share, if any.
	TTSServer *TTSServerJSON `json:"tts_server,omitempty"`
}

// CheckJSON is one expectation and its outcome; Got is null when the metric
// was not computed.
type CheckJSON struct {
	Metric string   `json:"metric"`
	Op     string   `json:"op"`
	Want   float64  `json:"want"`
	Got    *float64 `json:"got"`
	Pass   bool     `json:"pass"`
	Line   int      `json:"line,omitempty"`
}

// SweepJSON is one value of a sweep and its Monte Carlo result.
type SweepJSON struct {
	Value  float64     `json:"value"`
	Label  string      `json:"label"`
	Result *sim.Result `json:"result"`
}

// AnswerJSON is the answer to an inverse question (a sweep's limit, a --find).
type AnswerJSON struct {
	Param   string  `json:"param"`
	Found   bool    `json:"found"`
	AtBound bool    `json:"at_bound"`
	Limit   string  `json:"limit,omitempty"`
	Value   float64 `json:"value"`
	Label   string  `json:"label"`
	Goodput float64 `json:"speech_goodput"`
	Target  float64 `json:"target"`
	Text    string  `json:"text"`
}

// NewRunJSON starts the JSON form of a run of s: the scenario, the verdict
// and each check (an empty list when there are none).
func NewRunJSON(s *Scenario, checks []Check, pass bool) RunJSON {
	out := RunJSON{Scenario: NewScenarioJSON(s), Expectations: []CheckJSON{}, Verdict: Verdict(pass)}
	for _, ch := range checks {
		cj := CheckJSON{Metric: ch.Metric, Op: ch.Op, Want: ch.Value, Pass: ch.Pass, Line: ch.Line}
		if !math.IsNaN(ch.Got) {
			got := ch.Got
			cj.Got = &got
		}
		out.Expectations = append(out.Expectations, cj)
	}
	return out
}

// NewAnswerJSON is the JSON form of a.
func NewAnswerJSON(a sim.Answer) AnswerJSON {
	return AnswerJSON{Param: string(a.Param), Found: a.Found, AtBound: a.AtBound, Limit: a.Limit, Value: a.Value,
		Label: a.Param.Format(a.Value), Goodput: a.Goodput, Target: a.Target, Text: a.String()}
}

// Verdict is the word a report gives a run: pass or fail.
func Verdict(pass bool) string {
	if pass {
		return "pass"
	}
	return "fail"
}

// RooflineAccuracy returns the roofline model's measured error band when
// the scenario's timing is a roofline (nil otherwise).
func (s *Scenario) RooflineAccuracy() *sim.Accuracy {
	if _, ok := s.Setup.Gen.Timing.(sim.Roofline); !ok {
		return nil
	}
	a, err := sim.RooflineAccuracy()
	if err != nil {
		return nil // the embedded table is tested; never in a release
	}
	return &a
}
