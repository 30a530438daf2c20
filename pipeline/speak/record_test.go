package speak

import (
	"bytes"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts/player"
)

// A recording reads back as it was written, and trace readers read its
// turns and skip the rest.
func TestRecordingRoundTrip(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	r := NewRecorder(&buf, "test")
	turn := &pipeline.Turn{ID: "t1", Start: time.Unix(1, 0), Status: pipeline.StatusOK}
	ms := func(n int) time.Duration { return time.Duration(n) * time.Millisecond }
	chunks := []Timing{
		{Index: 0, From: 0, To: 6, Text: "Sure, ", Release: ms(400), Sent: ms(401), First: ms(420), Ready: ms(420), Done: ms(430),
			Audio: ms(300), Samples: 6615, Rate: 22050, HasAudio: true,
			Arrivals: []pipeline.Arrival{{At: ms(420), Audio: ms(100)}, {At: ms(430), Audio: ms(200)}}},
		{Index: 1, From: 6, To: 9, Text: "I c", Release: ms(500), Sent: ms(501), Err: "synthesis failed: boom"},
	}
	heard := player.Heard{Turn: "t1", Started: true, Start: ms(420), FirstSample: 1234, End: ms(900), Speech: ms(300), Samples: 6615,
		Gaps: []player.Gap{{Start: ms(720), Duration: ms(50), StartSample: 15876, Samples: 1102, Chunk: 1, Played: 6615}}}
	for _, err := range []error{r.BeginTurn(turn), r.WriteChunk("t1", pipeline.Chunk{At: ms(400), Text: "Sure, ", Tokens: 1}),
		r.WriteTiming("t1", chunks[0]), r.WriteTiming("t1", chunks[1]), r.EndTurn(turn), r.WriteHeard(heard, 22050)} {
		if err != nil {
			t.Fatal(err)
		}
	}
	rec, err := ReadRecording(bytes.NewReader(buf.Bytes()), "rec")
	if err != nil {
		t.Fatal(err)
	}
	if got := rec.Chunks["t1"]; !reflect.DeepEqual(got, chunks) {
		t.Errorf("chunks read back %+v, want %+v", got, chunks)
	}
	got := rec.Heard["t1"]
	heard.Begin = got.Begin // not recorded: the turn record has it
	if !reflect.DeepEqual(got, heard) {
		t.Errorf("heard read back %+v, want %+v", got, heard)
	}
	m := rec.Measured()
	if st, ok := m.Measured("t1", 0, 6); !ok || st.Ready != ms(420) || st.Audio != ms(300) || len(st.Arrivals) != 2 {
		t.Errorf("measured %+v %v", st, ok)
	}
	if st, ok := m.Measured("t1", 6, 9); !ok || st.Audio != 0 {
		t.Errorf("a chunk without audio measured %+v %v, want no audio", st, ok)
	}
	dec := trace.NewNativeReader(bytes.NewReader(buf.Bytes()), "rec")
	tr, err := dec.Next()
	if err != nil || tr.ID != "t1" || len(tr.Chunks) != 1 {
		t.Errorf("the trace reader read %+v, %v", tr, err)
	}
}

func TestReadRecordingErrors(t *testing.T) {
	t.Parallel()
	for _, tt := range []struct{ in, has string }{
		{`{"type":"synth","turn":"t1","from":0,"to":3}` + "\n", `"chunk"`},
		{`{"type":"synth","turn":"t1","chunk":0,"from":4,"to":3}` + "\n", "bytes 4..3"},
		{`{"type":"synth","chunk":0}` + "\n", `"turn"`},
		{`{"type":"synth","turn":"t1","chunk":"x"}` + "\n", `field "chunk"`},
		{`{"type":"heard","turn":"t1","gaps":[{"duration_ns":-1}]}` + "\n", "negative"},
		{`{"type":"synth","turn":"t1","chunk":0,"first_audio_ns":1,"arrivals":[[5,1],[4,1]]}` + "\n", "back in time"},
		{`{"type":"synth" nonsense` + "\n" + `{"type":"chunk"}` + "\n", "rec:1:"},
	} {
		_, err := ReadRecording(strings.NewReader(tt.in), "rec")
		if !errors.Is(err, ErrRecording) || !strings.Contains(err.Error(), tt.has) {
			t.Errorf("%q: %v, want ErrRecording mentioning %q", tt.in, err, tt.has)
		}
	}
	// a cut-off last line is tolerated
	if _, err := ReadRecording(strings.NewReader(`{"type":"synth","turn":"t1","chunk":0,"from":0,"to":1}`+"\n"+`{"type":"synth","tu`), "rec"); err != nil {
		t.Errorf("a cut-off last line: %v", err)
	}
}

func FuzzReadRecording(f *testing.F) {
	f.Add([]byte(`{"type":"synth","turn":"t1","chunk":0,"from":0,"to":6,"text":"Sure, ","first_audio_ns":420,"arrivals":[[420,100]]}` + "\n" +
		`{"type":"heard","turn":"t1","started":true,"gaps":[{"start_ns":1,"duration_ns":2,"samples":3,"chunk":0,"played":9}]}` + "\n"))
	f.Add([]byte(`{"type":"chunk","turn":"t1","t_ns":1,"text":"synth"}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		rec, err := ReadRecording(bytes.NewReader(data), "fuzz")
		if err != nil {
			return
		}
		for turn, chunks := range rec.Chunks {
			for _, c := range chunks {
				if c.From < 0 || c.To < c.From || c.Index < 0 {
					t.Fatalf("turn %q: chunk %+v read without an error", turn, c)
				}
			}
		}
		_ = rec.Measured()
	})
}
