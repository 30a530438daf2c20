package openai

import (
	"bytes"
	"context"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

func readCapture(t *testing.T, data []byte) []*trace.Stream {
	t.Helper()
	r := trace.NewCaptureReader(bytes.NewReader(data), "capture")
	return testkit.All(t, r.NextStream)
}

// TestCaptureRoundTrip records live streams (some with bytes that are not
// UTF-8, split inside a rune) and checks that reading the capture gives
// exactly the turns and stats the client recorded.
func TestCaptureRoundTrip(t *testing.T) {
	t.Parallel()
	euro := testkit.ChatChunk(`{"content":"€ sign"}`)
	cut := strings.Index(euro, "€") + 1 // inside the rune: a read that is not UTF-8
	srv := scripted(t, 200, "text/event-stream", []step{
		{write: ": hello\n\n" + testkit.ChatChunk(`{"role":"assistant","content":""}`)},
		{write: euro[:cut], sleep: 2 * time.Millisecond}, {write: euro[cut:]},
		{write: testkit.ChatChunk(`{"reasoning_content":"hm"}`)}, {write: testkit.FinishChunk + testkit.UsageChunk + testkit.Done}}, nil)
	errSrv := scripted(t, 500, "application/json", []step{{write: `{"error":{"message":"down"}}`}}, nil)

	var buf bytes.Buffer
	cw := trace.NewCaptureWriter(&buf, "test")
	var live []*trace.Stream
	for i, url := range []string{srv.URL, errSrv.URL, srv.URL} {
		c := &Client{BaseURL: url, Capture: cw}
		s, err := c.Stream(context.Background(), "t"+string(rune('0'+i)), "s", Request{Model: "m", Prompt: Prompt{Text: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		live = append(live, s)
	}
	if !bytes.Contains(buf.Bytes(), []byte(`"data_b64"`)) {
		t.Error("the split rune was not captured as data_b64")
	}
	if !trace.SniffCapture(buf.Bytes()) {
		t.Error("SniffCapture does not know its own capture")
	}
	back := readCapture(t, buf.Bytes())
	if len(back) != len(live) {
		t.Fatalf("read %d streams, recorded %d", len(back), len(live))
	}
	for i := range live {
		a, b := live[i], back[i]
		if !a.Turn.Start.Equal(b.Turn.Start) {
			t.Errorf("stream %d: start %v, read back %v", i, a.Turn.Start, b.Turn.Start)
		}
		a.Turn.Start, b.Turn.Start = time.Time{}, time.Time{}
		if !reflect.DeepEqual(a.Turn, b.Turn) {
			t.Errorf("stream %d: live turn\n%+v\nread back\n%+v", i, a.Turn, b.Turn)
		}
		if !reflect.DeepEqual(a.Stats, b.Stats) {
			t.Errorf("stream %d: live stats\n%+v\nread back\n%+v", i, a.Stats, b.Stats)
		}
	}
	if live[0].Turn.Text() != "€ sign" || live[1].Turn.Status != pipeline.StatusError {
		t.Errorf("live turns: %q, %s", live[0].Turn.Text(), live[1].Turn.Status)
	}
}
