package trace

import (
	"bufio"
	"bytes"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"math/rand/v2"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
)

func readAll(t testing.TB, input string) ([]*pipeline.Turn, error) {
	t.Helper()
	return readTurns(NewNativeReader(strings.NewReader(input), "test.jsonl"))
}

// readTurns reads d to its end: the turns before the first error, and
// that error (nil at io.EOF).
func readTurns(d Decoder) ([]*pipeline.Turn, error) {
	var out []*pipeline.Turn
	for {
		turn, err := d.Next()
		if errors.Is(err, io.EOF) {
			return out, nil
		}
		if err != nil {
			return out, err
		}
		out = append(out, turn)
	}
}

func randomTurn(rng *rand.Rand, id string) *pipeline.Turn {
	t := &pipeline.Turn{ID: id, Session: "s" + id, Status: pipeline.StatusOK}
	if rng.IntN(2) == 0 {
		t.Start = time.Unix(0, rng.Int64N(1<<62))
	}
	at := time.Duration(rng.IntN(1e9))
	for range rng.IntN(50) {
		at += time.Duration(rng.IntN(3e8))
		c := pipeline.Chunk{At: at, Tokens: 1 + rng.IntN(3)}
		switch rng.IntN(4) {
		case 0:
			c.Textless = true
		case 1:
			c.Text = "é\"\\\n\t<>&" + fmt.Sprint(rng.IntN(100))
		default:
			c.Text = " word"
		}
		c.Reasoning = rng.IntN(8) == 0
		t.Chunks = append(t.Chunks, c)
	}
	switch rng.IntN(5) {
	case 0:
		t.Status, t.Error = pipeline.StatusError, "upstream 500: \"boom\""
	case 1:
		t.Status = pipeline.StatusCancelled
	}
	if rng.IntN(3) == 0 {
		t.OutputTokens = 1 + rng.IntN(500)
	}
	return t
}

func TestNativeRoundTrip(t *testing.T) {
	t.Parallel()
	rng := rand.New(rand.NewPCG(9, 9))
	for trial := range 100 {
		var want []*pipeline.Turn
		var buf bytes.Buffer
		w := NewWriter(&buf, "test")
		for i := range 1 + rng.IntN(5) {
			turn := randomTurn(rng, fmt.Sprintf("t%d-%d", trial, i))
			if err := w.WriteTurn(turn); err != nil {
				t.Fatal(err)
			}
			want = append(want, turn)
		}
		got, err := readAll(t, buf.String())
		if err != nil {
			t.Fatalf("trial %d: %v\n%s", trial, err, buf.String())
		}
		if len(got) != len(want) {
			t.Fatalf("trial %d: %d turns back, wrote %d", trial, len(got), len(want))
		}
		for i := range want {
			normalize(want[i])
			if !reflect.DeepEqual(got[i], want[i]) {
				t.Fatalf("trial %d turn %d:\n got %+v\nwant %+v", trial, i, got[i], want[i])
			}
		}
	}
}

// normalize gives a turn the form the reader returns: a nil chunk slice
// for no chunks and no monotonic clock reading in Start.
func normalize(t *pipeline.Turn) {
	if len(t.Chunks) == 0 {
		t.Chunks = nil
	}
	if !t.Start.IsZero() {
		t.Start = time.Unix(0, t.Start.UnixNano())
	}
}

func TestNativeInterleavedAndIncomplete(t *testing.T) {
	t.Parallel()
	in := `{"type":"header","format":"underrun-trace","version":1,"source":"capture"}
{"type":"turn","turn":"a","session":"s1","start_unix_ns":1764669600000000000}
{"type":"turn","turn":"b"}
{"type":"chunk","turn":"a","t_ns":412000000,"text":"Hello","tokens":1}
{"type":"chunk","turn":"b","t_ns":100}
{"type":"chunk","turn":"a","t_ns":452000000,"text":" there","tokens":1,"reasoning":false}
{"type":"future","turn":"a","whatever":[1,2]}
{"type":"end","turn":"a","status":"ok"}
{"type":"chunk","turn":"b","t_ns":200,"tokens":3}
`
	got, err := readAll(t, in)
	if err != nil {
		t.Fatal(err)
	}
	if len(got) != 2 || got[0].ID != "a" || got[1].ID != "b" {
		t.Fatalf("got %d turns: %+v", len(got), got)
	}
	if got[0].Text() != "Hello there" || got[0].Session != "s1" || got[0].Start.UnixNano() != 1764669600000000000 {
		t.Errorf("turn a = %+v", got[0])
	}
	if got[1].Status != pipeline.StatusIncomplete || !got[1].Chunks[0].Textless || got[1].Chunks[1].Tokens != 3 {
		t.Errorf("turn b = %+v", got[1])
	}
}

func TestNativeTruncatedLastLine(t *testing.T) {
	t.Parallel()
	in := `{"type":"chunk","turn":"a","t_ns":1,"text":"Hi"}
{"type":"chunk","turn":"a","t_ns":2,"te`
	d := NewNativeReader(strings.NewReader(in), "cut.jsonl")
	turn, err := d.Next()
	if err != nil {
		t.Fatalf("a truncated last line is an error: %v", err)
	}
	if len(turn.Chunks) != 1 || turn.Status != pipeline.StatusIncomplete || !d.Truncated {
		t.Errorf("turn %+v truncated %v", turn, d.Truncated)
	}
}

func TestNativeBadInput(t *testing.T) {
	t.Parallel()
	long := `{"type":"chunk","turn":"a","t_ns":1,"text":"` + strings.Repeat("x", 10<<20) + "\"}\n"
	tests := []struct {
		name, in, want string
	}{
		{"not JSON", "hello\n{}\n", "test.jsonl:1: not a JSON object"},
		{"bad JSON mid-file", `{"type":"turn","turn":"a"}` + "\n{\"type\":\n" + `{"type":"end","turn":"a"}` + "\n", "test.jsonl:2: not valid JSON"},
		{"negative time", `{"type":"chunk","turn":"a","t_ns":-5}` + "\n", "test.jsonl:1: chunk of turn \"a\" has t_ns -5"},
		{"non-monotonic", `{"type":"chunk","turn":"a","t_ns":5}` + "\n" + `{"type":"chunk","turn":"a","t_ns":4}` + "\n", "test.jsonl:2: chunk of turn \"a\" has t_ns 4, before the previous"},
		{"NaN", `{"type":"chunk","turn":"a","t_ns":NaN}` + "\n", "test.jsonl:1: not valid JSON"},
		{"float time", `{"type":"chunk","turn":"a","t_ns":1.5}` + "\n", `test.jsonl:1: field "t_ns"`},
		{"string time", `{"type":"chunk","turn":"a","t_ns":"1"}` + "\n", `test.jsonl:1: field "t_ns": got JSON string, want int64`},
		{"empty", "", "test.jsonl:1: empty input"},
		{"blank", "\n\n", "test.jsonl:2: empty input"},
		{"long first line", long, "test.jsonl:1: line longer than"},
		{"long third line", "{\"type\":\"header\"}\n\n" + long, "test.jsonl:3: line longer than"},
		{"only line cut off", `{"type":"chunk","turn":"a","t_`, "test.jsonl:1: not valid JSON"},
		{"garbage, no newline", "garbage", "test.jsonl:1: not a JSON object"},
		{"no type", `{"turn":"a"}` + "\n", `record without "type"`},
		{"no time", `{"type":"chunk","turn":"a"}` + "\n", `has no "t_ns"`},
		{"bad status", `{"type":"end","turn":"a","status":"maybe"}` + "\n", `status "maybe"`},
		{"chunk after end", `{"type":"end","turn":"a"}` + "\n" + `{"type":"chunk","turn":"a","t_ns":1}` + "\n", `test.jsonl:2: record for turn "a" after its end`},
		{"time past a year", `{"type":"chunk","turn":"a","t_ns":9223372036854775807}` + "\n", `test.jsonl:1: chunk of turn "a" has t_ns 9223372036854775807; want a time from 0 to`},
		{"a million tokens in a chunk", `{"type":"chunk","turn":"a","t_ns":1,"tokens":1000000}` + "\n", `test.jsonl:1: chunk of turn "a" has tokens 1000000; want a count from 0 to 262144`},
		{"2e9 tokens in a chunk", `{"type":"chunk","turn":"a","t_ns":1,"tokens":2000000000}` + "\n", `has tokens 2000000000; want a count`},
		{"too many tokens in a turn", strings.Repeat(`{"type":"chunk","turn":"a","t_ns":1,"tokens":200000}`+"\n", 2) + `{"type":"end","turn":"a"}` + "\n", `test.jsonl:3: turn "a": chunk 1 takes the turn past 262144 tokens`},
		{"output tokens past the limit", `{"type":"end","turn":"a","output_tokens":1000000}` + "\n", `test.jsonl:1: end of turn "a" has output_tokens 1000000`},
		{"future version", `{"type":"header","format":"underrun-trace","version":9}` + "\n", "version 9 is newer"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			_, err := readAll(t, tt.in)
			if err == nil {
				t.Fatalf("no error; want %q", tt.want)
			}
			if !errors.Is(err, ErrFormat) || !strings.Contains(err.Error(), tt.want) {
				t.Errorf("error %q, want ErrFormat containing %q", err, tt.want)
			}
		})
	}
}

func TestOpenSniffsNative(t *testing.T) {
	t.Parallel()
	d, err := Open(strings.NewReader(`{"type": "turn", "turn": "x"}`+"\n"), "x.jsonl", "")
	if err != nil {
		t.Fatal(err)
	}
	if _, ok := d.(*NativeReader); !ok {
		t.Errorf("Open gave %T, want *NativeReader", d)
	}
	if _, err := Open(strings.NewReader("just words"), "x.txt", ""); !errors.Is(err, ErrFormat) {
		t.Errorf("unknown content: %v", err)
	}
	if _, err := Open(strings.NewReader("{}"), "x", "nope"); err == nil || !strings.Contains(err.Error(), `unknown format "nope"`) {
		t.Errorf("unknown --format: %v", err)
	}
}

func FuzzNativeReader(f *testing.F) {
	f.Add([]byte(`{"type":"header","format":"underrun-trace","version":1}
{"type":"turn","turn":"t1"}
{"type":"chunk","turn":"t1","t_ns":412000000,"text":"Hello","tokens":1}
{"type":"end","turn":"t1","status":"ok"}
`))
	f.Add([]byte(`{"type":"chunk","turn":"a","t_ns":1}` + "\n" + `{"type":"chunk","turn":"a","t_ns":0`))
	f.Add([]byte("\n\n{}\n"))
	// tool records (issue 33): a pause for a tool call, bad ones
	f.Add([]byte(`{"type":"chunk","turn":"a","t_ns":1}` + "\n" + `{"type":"tool","turn":"a","t_ns":900000000,"duration_ns":1500000000,"name":"get_weather"}` + "\n" + `{"type":"end","turn":"a"}` + "\n"))
	f.Add([]byte(`{"type":"tool","turn":"a","t_ns":9,"duration_ns":-1}` + "\n" + `{"type":"tool","turn":"a","t_ns":1,"duration_ns":1}` + "\n"))
	// the hostile inputs of issue 20: counts and times past the limits
	f.Add([]byte(`{"type":"chunk","turn":"a","t_ns":1,"tokens":1000000}` + "\n"))
	f.Add([]byte(`{"type":"chunk","turn":"a","t_ns":1,"tokens":2000000000}` + "\n"))
	f.Add([]byte(`{"type":"chunk","turn":"a","t_ns":9223372036854775807}` + "\n"))
	f.Add([]byte("garbage"))
	// issue 45: a byte-order mark, start times near the int64 limits
	f.Add([]byte("\xef\xbb\xbf" + `{"type":"chunk","turn":"a","t_ns":1}` + "\n"))
	f.Add([]byte(`{"type":"turn","turn":"a","start_unix_ns":-9223372036854775000}` + "\n" + `{"type":"turn","turn":"b","start_unix_ns":4611686018427387905}` + "\n"))
	// fields the format does not define: read past, warned of once
	f.Add([]byte(`{"type":"turn","turn":"a","start_ms":1}` + "\n" + `{"type":"chunk","turn":"a","t_ns":1,"confidence":0.5,"start_ms":2}` + "\n"))
	f.Fuzz(func(t *testing.T, data []byte) {
		d := NewNativeReader(bytes.NewReader(data), "fuzz")
		drainFuzz(t, d, data, 10000, ErrFormat, func() {
			if n := len(d.Warnings()); n > maxFieldWarnings+1 {
				t.Fatalf("%d warnings; want at most %d", n, maxFieldWarnings+1)
			}
		})
	})
}

// benchTrace builds a native trace of about size bytes: turns of 200
// one-token text chunks.
func benchTrace(size int) []byte {
	var buf bytes.Buffer
	w := NewWriter(&buf, "bench")
	for i := 0; buf.Len() < size; i++ {
		turn := &pipeline.Turn{ID: fmt.Sprintf("turn-%d", i), Status: pipeline.StatusOK}
		for k := range 200 {
			turn.Chunks = append(turn.Chunks, pipeline.Chunk{At: time.Duration(300+k*41) * time.Millisecond, Text: " word", Tokens: 1})
		}
		w.WriteTurn(turn)
	}
	return buf.Bytes()
}

func BenchmarkNativeReader(b *testing.B) {
	data := benchTrace(32 << 20)
	b.SetBytes(int64(len(data)))
	b.ReportAllocs()
	for b.Loop() {
		d := NewNativeReader(bytes.NewReader(data), "bench")
		for {
			if _, err := d.Next(); err != nil {
				if errors.Is(err, io.EOF) {
					break
				}
				b.Fatal(err)
			}
		}
	}
}

// BenchmarkLineScan is the baseline: splitting the same input into lines.
func BenchmarkLineScan(b *testing.B) {
	data := benchTrace(32 << 20)
	b.SetBytes(int64(len(data)))
	for b.Loop() {
		n := 0
		for rest := data; len(rest) > 0; {
			i := bytes.IndexByte(rest, '\n')
			if i < 0 {
				break
			}
			n++
			rest = rest[i+1:]
		}
		if n == 0 {
			b.Fatal("no lines")
		}
	}
}

// FuzzWriterChunk checks that whenever the fast match of the writer's own
// chunk lines accepts a line, encoding/json reads the same record from it.
func FuzzWriterChunk(f *testing.F) {
	var buf bytes.Buffer
	w := NewWriter(&buf, "fuzz")
	w.WriteChunk("t1", pipeline.Chunk{At: 412000000, Text: " Hello", Tokens: 1})
	w.WriteChunk("t1", pipeline.Chunk{At: 5, Tokens: 3, Textless: true, Reasoning: true})
	w.WriteChunk("t\"2", pipeline.Chunk{At: 0, Text: "é\n", Tokens: 2})
	for _, line := range strings.Split(buf.String(), "\n") {
		f.Add([]byte(line))
	}
	f.Add([]byte(`{"type":"chunk","turn":"a","t_ns":01}`))
	f.Add([]byte(`{"type":"chunk","turn":"a","t_ns":1,"tokens":99999999999999999999}`))
	f.Fuzz(func(t *testing.T, line []byte) {
		d := NewNativeReader(bytes.NewReader(nil), "fuzz")
		var got fields
		if !d.writerChunk(line, &got) {
			return
		}
		var full Record
		if err := json.Unmarshal(line, &full); err != nil {
			t.Fatalf("fast path accepted %q, encoding/json says %v", line, err)
		}
		var want fields
		want.fromRecord(&full)
		if got != want {
			t.Fatalf("%q:\nfast %+v\njson %+v", line, got, want)
		}
	})
}

func TestWriterChunkTakesWriterLines(t *testing.T) {
	t.Parallel()
	var buf bytes.Buffer
	w := NewWriter(&buf, "t")
	w.WriteChunk("turn-1", pipeline.Chunk{At: 412000000, Text: " Hello", Tokens: 1})
	w.WriteChunk("turn-1", pipeline.Chunk{At: 412000001, Tokens: 3, Textless: true, Reasoning: true})
	lines := strings.Split(strings.TrimSpace(buf.String()), "\n")[1:] // past the header
	d := NewNativeReader(bytes.NewReader(nil), "t")
	for _, line := range lines {
		var rec fields
		if !d.writerChunk([]byte(line), &rec) {
			t.Errorf("the fast path refused the writer's own line %s", line)
		}
	}
}

// BenchmarkNativeReaderFields reads a trace whose records are not in the
// writer's own byte layout (the keys in another order, as another program
// may write them), so every line takes the field-by-field path
// (fastRecord) that notes unknown field names; from a file, as
// BenchmarkNativeReaderFile.
func BenchmarkNativeReaderFields(b *testing.B) {
	benchRead(b, benchFile(b, "fields.jsonl", func(w *bufio.Writer, size int64) {
		var written int
		for i := 0; int64(written) < size; i++ {
			n, _ := fmt.Fprintf(w, `{"turn":"turn-%d","type":"turn","session":"s"}`+"\n", i)
			written += n
			for k := range 200 {
				n, _ = fmt.Fprintf(w, `{"turn":"turn-%d","type":"chunk","t_ns":%d,"text":" word","tokens":1}`+"\n", i, (300+k*41)*1000000)
				written += n
			}
			n, _ = fmt.Fprintf(w, `{"turn":"turn-%d","type":"end","status":"ok"}`+"\n", i)
			written += n
		}
	}), "")
}
