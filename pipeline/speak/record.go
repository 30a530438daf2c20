package speak

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"sync"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
	"github.com/speech-pipeline/underrun/tts/player"
)

// A run's recording is a native trace (pipeline/trace) with two more
// record types, which trace readers skip:
//
//	{"type":"synth","turn":"t1","chunk":0,"from":0,"to":6,"text":"Sure, ","release_ns":412000000,
//	 "sent_ns":412100000,"first_audio_ns":431000000,"ready_ns":431000000,"done_ns":447000000,
//	 "audio_ns":610000000,"samples":13451,"rate":22050,"arrivals":[[431000000,49000000],...]}
//	{"type":"heard","turn":"t1","started":true,"start_ns":431200000,"first_sample":9508,"end_ns":2950000000,
//	 "speech_ns":2400000000,"samples":52920,"rate":22050,"gaps":[{"start_ns":1041000000,"duration_ns":118000000,"samples":2602,"chunk":3,"played":13451}]}
//
// A synth record is one speech chunk as the synthesizer handled it (times
// since the turn's request; "error" when its synthesis failed, "first_audio_ns"
// absent when no audio came; "arrivals" the pieces of its audio, each as
// [when the player could play it, its audio] in nanoseconds); a heard
// record is a turn as the player played it ("first_sample": where its
// first audio lies in what the player played, the speak --wav file; a
// gap's "played": where it begins, in samples after that).
type timingRecord struct {
	Type      string     `json:"type"`
	Turn      string     `json:"turn"`
	Chunk     *int       `json:"chunk,omitempty"`
	From      int        `json:"from,omitempty"`
	To        int        `json:"to,omitempty"`
	Text      string     `json:"text,omitempty"`
	ReleaseNs int64      `json:"release_ns,omitempty"`
	SentNs    int64      `json:"sent_ns,omitempty"`
	FirstNs   *int64     `json:"first_audio_ns,omitempty"`
	ReadyNs   int64      `json:"ready_ns,omitempty"`
	DoneNs    int64      `json:"done_ns,omitempty"`
	AudioNs   int64      `json:"audio_ns,omitempty"`
	Samples   int64      `json:"samples,omitempty"`
	Rate      int        `json:"rate,omitempty"`
	Error     string     `json:"error,omitempty"`
	Started   bool       `json:"started,omitempty"`
	StartNs   int64      `json:"start_ns,omitempty"`
	First     int64      `json:"first_sample,omitempty"`
	EndNs     int64      `json:"end_ns,omitempty"`
	SpeechNs  int64      `json:"speech_ns,omitempty"`
	Gaps      []gapField `json:"gaps,omitempty"`
	Arrivals  [][2]int64 `json:"arrivals,omitempty"`
}

type gapField struct {
	StartNs    int64 `json:"start_ns"`
	DurationNs int64 `json:"duration_ns"`
	Samples    int64 `json:"samples"`
	Chunk      int   `json:"chunk"`
	Played     int64 `json:"played"`
}

// Recorder writes a run's recording as it happens: the turns as their
// chunks arrive (it is an openai.TraceWriter), each speech chunk's timing
// when its audio is over, and each turn as heard. Every record is one
// write, flushed. A Recorder is safe for concurrent use.
type Recorder struct {
	mu  sync.Mutex
	w   io.Writer
	tw  *trace.Writer
	err error
}

// NewRecorder returns a Recorder writing to w; the trace header names
// source.
func NewRecorder(w io.Writer, source string) *Recorder {
	r := &Recorder{w: w}
	r.tw = trace.NewWriter(w, source)
	return r
}

func (r *Recorder) do(f func() error) error {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.err != nil {
		return r.err
	}
	if err := f(); err != nil {
		r.err = fmt.Errorf("writing the recording: %w", err)
	}
	return r.err
}

// BeginTurn writes a turn record.
func (r *Recorder) BeginTurn(t *pipeline.Turn) error {
	return r.do(func() error { return r.tw.BeginTurn(t) })
}

// WriteChunk writes a chunk record.
func (r *Recorder) WriteChunk(turn string, c pipeline.Chunk) error {
	return r.do(func() error { return r.tw.WriteChunk(turn, c) })
}

// WriteToolCall writes a tool record.
func (r *Recorder) WriteToolCall(turn string, tc pipeline.ToolCall) error {
	return r.do(func() error { return r.tw.WriteToolCall(turn, tc) })
}

// EndTurn writes a turn's end record.
func (r *Recorder) EndTurn(t *pipeline.Turn) error {
	return r.do(func() error { return r.tw.EndTurn(t) })
}

// WriteTiming writes a synth record for chunk c of turn.
func (r *Recorder) WriteTiming(turn string, c Timing) error {
	idx := c.Index
	rec := timingRecord{Type: "synth", Turn: turn, Chunk: &idx, From: c.From, To: c.To, Text: c.Text,
		ReleaseNs: int64(c.Release), SentNs: int64(c.Sent), Error: c.Err}
	if c.HasAudio {
		first := int64(c.First)
		rec.FirstNs, rec.ReadyNs, rec.DoneNs = &first, int64(c.Ready), int64(c.Done)
		rec.AudioNs, rec.Samples, rec.Rate = int64(c.Audio), c.Samples, c.Rate
		for _, a := range c.Arrivals {
			rec.Arrivals = append(rec.Arrivals, [2]int64{int64(a.At), int64(a.Audio)})
		}
	}
	return r.writeRecord(&rec)
}

// WriteHeard writes the heard record of a turn played at rate.
func (r *Recorder) WriteHeard(h player.Heard, rate int) error {
	rec := timingRecord{Type: "heard", Turn: h.Turn, Started: h.Started, StartNs: int64(h.Start), First: h.FirstSample, EndNs: int64(h.End),
		SpeechNs: int64(h.Speech), Samples: h.Samples, Rate: rate, Gaps: []gapField{}}
	for _, g := range h.Gaps {
		rec.Gaps = append(rec.Gaps, gapField{StartNs: int64(g.Start), DurationNs: int64(g.Duration), Samples: g.Samples, Chunk: g.Chunk, Played: g.Played})
	}
	return r.writeRecord(&rec)
}

func (r *Recorder) writeRecord(rec *timingRecord) error {
	b, err := json.Marshal(rec)
	if err != nil {
		return err
	}
	b = append(b, '\n')
	return r.do(func() error {
		if err := r.tw.WriteHeader(); err != nil {
			return err
		}
		_, err := r.w.Write(b)
		return err
	})
}

// ErrRecording reports a recording whose synth or heard records cannot
// be read.
var ErrRecording = errors.New("invalid speak recording")

// Recording is what ReadRecording finds besides the turns: each turn's
// measured speech chunks and what was heard.
type Recording struct {
	// Chunks are the synth records by turn, in order.
	Chunks map[string][]Timing
	// Heard are the heard records by turn.
	Heard map[string]player.Heard
}

// Measured returns the chunks as engine timings.
func (r *Recording) Measured() Measured {
	m := Measured{}
	for turn, chunks := range r.Chunks {
		m.Add(turn, chunks)
	}
	return m
}

// ReadRecording reads the synth and heard records of a recording (any
// other line is skipped, as trace readers skip these); name labels
// errors. A cut-off last line is tolerated, as in a trace.
func ReadRecording(r io.Reader, name string) (*Recording, error) {
	rec := &Recording{Chunks: map[string][]Timing{}, Heard: map[string]player.Heard{}}
	br := bufio.NewReaderSize(r, 64<<10)
	for line := 1; ; line++ {
		b, err := readLine(br)
		last := err == io.EOF
		if err != nil && !last {
			return nil, fmt.Errorf("%s:%d: %w", name, line, err)
		}
		b = bytes.TrimSpace(b)
		if len(b) > 0 && (bytes.Contains(b, []byte(`"synth"`)) || bytes.Contains(b, []byte(`"heard"`))) {
			if perr := rec.parse(b); perr != nil {
				if !(last && errors.Is(perr, errTruncated)) {
					return nil, fmt.Errorf("%w: %s:%d: %w", ErrRecording, name, line, perr)
				}
			}
		}
		if last {
			return rec, nil
		}
	}
}

var errTruncated = errors.New("not a JSON object")

// readLine reads one line of at most trace.MaxLine bytes, without its
// newline; io.EOF with the last line.
func readLine(br *bufio.Reader) ([]byte, error) {
	var buf []byte
	for {
		chunk, err := br.ReadSlice('\n')
		buf = append(buf, chunk...)
		if len(buf) > trace.MaxLine {
			return nil, fmt.Errorf("line longer than %d bytes", trace.MaxLine)
		}
		if err == bufio.ErrBufferFull {
			continue
		}
		if err != nil {
			return buf, err
		}
		return buf[:len(buf)-1], nil
	}
}

func (rec *Recording) parse(b []byte) error {
	var r timingRecord
	if err := json.Unmarshal(b, &r); err != nil {
		var se *json.SyntaxError
		if errors.As(err, &se) || errors.Is(err, io.ErrUnexpectedEOF) {
			return fmt.Errorf("%w: %w", errTruncated, err)
		}
		var ute *json.UnmarshalTypeError
		if errors.As(err, &ute) {
			return fmt.Errorf("field %q: got JSON %s, want %s", ute.Field, ute.Value, ute.Type)
		}
		return err
	}
	if r.Turn == "" && (r.Type == "synth" || r.Type == "heard") {
		return fmt.Errorf(`%s record without "turn"`, r.Type)
	}
	switch r.Type {
	case "synth":
		if r.Chunk == nil || *r.Chunk < 0 {
			return errors.New(`synth record without a "chunk" index of 0 or more`)
		}
		if r.From < 0 || r.To < r.From {
			return fmt.Errorf(`synth record with bytes %d..%d; want 0 <= from <= to`, r.From, r.To)
		}
		if r.AudioNs < 0 || r.Samples < 0 || r.Rate < 0 {
			return errors.New("synth record with a negative audio length, sample count or rate")
		}
		t := Timing{Index: *r.Chunk, From: r.From, To: r.To, Text: r.Text, Release: time.Duration(r.ReleaseNs),
			Sent: time.Duration(r.SentNs), Err: r.Error}
		if r.FirstNs != nil {
			t.HasAudio, t.First = true, time.Duration(*r.FirstNs)
			t.Ready, t.Done, t.Audio = time.Duration(r.ReadyNs), time.Duration(r.DoneNs), time.Duration(r.AudioNs)
			t.Samples, t.Rate = r.Samples, r.Rate
			for i, a := range r.Arrivals {
				if a[1] < 0 || (i > 0 && a[0] < r.Arrivals[i-1][0]) {
					return fmt.Errorf("synth record: arrival %d goes back in time or has negative audio", i)
				}
				t.Arrivals = append(t.Arrivals, pipeline.Arrival{At: time.Duration(a[0]), Audio: time.Duration(a[1])})
			}
		}
		rec.Chunks[r.Turn] = append(rec.Chunks[r.Turn], t)
	case "heard":
		h := player.Heard{Turn: r.Turn, Started: r.Started, Start: time.Duration(r.StartNs), FirstSample: r.First, End: time.Duration(r.EndNs),
			Speech: time.Duration(r.SpeechNs), Samples: r.Samples}
		for i, g := range r.Gaps {
			if g.DurationNs < 0 || g.Samples < 0 {
				return fmt.Errorf("heard record: gap %d has a negative length", i)
			}
			h.Gaps = append(h.Gaps, player.Gap{Start: time.Duration(g.StartNs), Duration: time.Duration(g.DurationNs),
				StartSample: int64(float64(g.StartNs) * float64(r.Rate) / 1e9), Samples: g.Samples, Chunk: g.Chunk, Played: g.Played})
		}
		rec.Heard[r.Turn] = h
	}
	return nil
}
