package pipeline

import (
	"encoding/json"
	"math"
	"strings"
	"testing"
)

// TestToolFiguresRender: the text names each metric by the tool's name and
// ours, and lists mismatches; the JSON has no NaN.
func TestToolFiguresRender(t *testing.T) {
	t.Parallel()
	f := ToolFigures{
		Tool: "vllm", File: "result.json", Requests: 1,
		Metrics:    []ToolMetric{{Name: "itl", Ours: "ITL", Summary: &Summary{Count: 2, Mean: 21.5}}},
		Checked:    3,
		Mismatches: []ToolMismatch{{Key: "std_itl_ms", Saved: math.NaN(), Computed: 0.5}},
		Notes:      []string{"a note"},
	}
	var b strings.Builder
	f.writeText(&b)
	for _, want := range []string{"vllm result.json: figures as that tool computes them, over 1 request\n", " itl ", " ITL ", "21.50",
		"saved summary: 1 of 3 values differ", "std_itl_ms: saved NaN, computed 0.5000", "note: a note"} {
		if !strings.Contains(b.String(), want) {
			t.Errorf("text lacks %q:\n%s", want, b.String())
		}
	}
	out, err := json.Marshal(f)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(string(out), `{"key":"std_itl_ms","saved":null,"computed":0.5}`) {
		t.Errorf("JSON %s", out)
	}
	f.Mismatches, f.Checked = nil, 0
	b.Reset()
	f.writeText(&b)
	if !strings.Contains(b.String(), "no saved summary") {
		t.Errorf("text without a summary:\n%s", b.String())
	}
}
