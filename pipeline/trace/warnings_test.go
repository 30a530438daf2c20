package trace

import (
	"bytes"
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

// TestCaptureUnknownFields: a raw SSE capture's record with a field the
// capture format does not define is read as without it, and warned of
// once per name; the writer's own captures give none.
func TestCaptureUnknownFields(t *testing.T) {
	t.Parallel()
	in := `{"type":"sse_header","format":"underrun-sse","version":1}
{"type":"request","stream":"a","start_unix_ns":1,"retries":0}
{"type":"response","stream":"a","t_ns":5,"status":200,"content_type":"text/event-stream"}
{"type":"read","stream":"a","t_ns":9,"data":"data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hi\"}}]}\n\n","tls":{"v":1.3}}
{"type":"close","stream":"a","t_ns":10,"retries":1}
`
	d := NewCaptureReader(strings.NewReader(in), "c.jsonl")
	turn, err := d.Next()
	if err != nil || len(turn.Chunks) != 1 || turn.Chunks[0].Text != "Hi" {
		t.Fatalf("turn %+v, error %v", turn, err)
	}
	got, want := strings.Join(d.Warnings(), "\n"), `c.jsonl:2: field "retries" of a request record is not one the format defines; ignored, here and on every later line
c.jsonl:4: field "tls" of a read record is not one the format defines; ignored, here and on every later line`
	if got != want {
		t.Errorf("warnings\n%s\nwant\n%s", got, want)
	}
	d = NewCaptureReader(bytes.NewReader(benchCapture(1<<16)), "w.jsonl")
	for _, err := d.Next(); err == nil; _, err = d.Next() {
	}
	if len(d.Warnings()) != 0 {
		t.Errorf("warnings on the writer's capture: %q", d.Warnings())
	}
}

// TestUnknownRecordTypesNotWarned: a record of a type the reader does not
// know (speak --record's "synth" and "heard" lines beside the turns, a
// newer version's record) is read past whole: its fields are not the
// format's to warn of, while a known record's unknown field still is.
func TestUnknownRecordTypesNotWarned(t *testing.T) {
	t.Parallel()
	native := `{"type":"header","format":"underrun-trace","version":1}
{"type":"turn","turn":"a"}
{"type":"chunk","turn":"a","t_ns":1000,"text":"Hi"}
{"type":"synth","turn":"a","chunk":0,"from":0,"to":1,"text":"Hi","release_ns":1000,"first_audio_ns":2000}
{"type":"end","turn":"a","status":"ok","extra":1}
{"type":"heard","turn":"a","gaps":[]}
`
	d := NewNativeReader(strings.NewReader(native), "n.jsonl")
	for _, err := d.Next(); err == nil; _, err = d.Next() {
	}
	got, want := strings.Join(d.Warnings(), "\n"), `n.jsonl:5: field "extra" of an end record is not one the format defines; ignored, here and on every later line`
	if got != want {
		t.Errorf("native warnings\n%s\nwant\n%s", got, want)
	}
}
