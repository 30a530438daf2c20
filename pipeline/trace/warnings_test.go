package trace

import (
	"fmt"
	"math/rand/v2"
	"strings"
	"testing"
)

// TestNativeUnknownFields: a field no native record defines (a misspelt
// start_ms on a turn record, a newer version's field) is read past, as
// the format allows, and warned of once per name, naming the line where
// it first came and the record's type; known fields give no warning.
func TestNativeUnknownFields(t *testing.T) {
	t.Parallel()
	in := `{"type":"header","format":"underrun-trace","version":1}
{"type":"turn","turn":"a","start_ms":12}
{"type":"chunk","turn":"a","t_ns":1000,"text":"Hi","confidence":0.5}
{"type":"chunk","turn":"a","t_ns":2000,"text":" there","confidence":0.7}
{"type":"end","turn":"a","status":"ok"}
{"type":"turn","turn":"b","start_ms":13,"session":"s"}
{"type":"end","turn":"b"}
`
	d := NewNativeReader(strings.NewReader(in), "in.jsonl")
	var ids []string
	for turn, err := d.Next(); err == nil; turn, err = d.Next() {
		ids = append(ids, turn.ID)
	}
	if got, want := strings.Join(ids, ","), "a,b"; got != want {
		t.Errorf("turns %s; want %s", got, want)
	}
	got, want := d.Warnings(), []string{
		`in.jsonl:2: field "start_ms" of a turn record is not one the format defines; ignored, here and on every later line`,
		`in.jsonl:3: field "confidence" of a chunk record is not one the format defines; ignored, here and on every later line`,
	}
	if strings.Join(got, "\n") != strings.Join(want, "\n") {
		t.Errorf("warnings\n%s\nwant\n%s", strings.Join(got, "\n"), strings.Join(want, "\n"))
	}

	// the writer's own traces give none
	var b strings.Builder
	w := NewWriter(&b, "test")
	rng := rand.New(rand.NewPCG(3, 3))
	for i := range 20 {
		w.WriteTurn(randomTurn(rng, fmt.Sprint(i)))
	}
	d = NewNativeReader(strings.NewReader(b.String()), "w.jsonl")
	for _, err := d.Next(); err == nil; _, err = d.Next() {
	}
	if len(d.Warnings()) != 0 {
		t.Errorf("warnings on the writer's trace: %q", d.Warnings())
	}
}

// TestNativeUnknownFieldsBounded: however many unknown names an input
// has, the warnings are bounded.
func TestNativeUnknownFieldsBounded(t *testing.T) {
	t.Parallel()
	var b strings.Builder
	for i := range 1000 {
		fmt.Fprintf(&b, `{"type":"turn","turn":"t%d","x%d":1}`+"\n", i, i)
	}
	d := NewNativeReader(strings.NewReader(b.String()), "in")
	for _, err := d.Next(); err == nil; _, err = d.Next() {
	}
	if n := len(d.Warnings()); n != maxFieldWarnings+1 || !strings.Contains(d.Warnings()[n-1], "more fields of unknown names") {
		t.Errorf("%d warnings, the last %q", n, d.Warnings()[n-1])
	}
}
