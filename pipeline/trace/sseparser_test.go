package trace

import (
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"
)

// collected is an SSEEvent copied out of the callback.
type collected struct {
	Comment      bool
	Type, ID     string
	Data         string
	At, First    time.Duration
	Lines        int
	Unterminated bool
}

func (c collected) String() string {
	return fmt.Sprintf("{c=%v type=%q id=%q data=%q at=%v first=%v lines=%d unterm=%v}",
		c.Comment, c.Type, c.ID, c.Data, c.At, c.First, c.Lines, c.Unterminated)
}

// parseAll feeds reads (each arriving at its index in ms) and closes.
func parseAll(reads []string) ([]collected, error) {
	var p SSEParser
	var out []collected
	emit := func(e *SSEEvent) error {
		out = append(out, collected{e.Comment, e.Type, e.ID, string(e.Data), e.At, e.First, e.Lines, e.Unterminated})
		return nil
	}
	for i, r := range reads {
		if err := p.Feed([]byte(r), time.Duration(i)*time.Millisecond, emit); err != nil {
			return out, err
		}
	}
	err := p.Close(time.Duration(len(reads))*time.Millisecond, emit)
	return out, err
}

func TestParser(t *testing.T) {
	t.Parallel()
	ms := time.Millisecond
	tests := []struct {
		name    string
		reads   []string
		want    []collected
		wantErr error
	}{
		{"lf", []string{"data: a\n\ndata: b\n\n"}, []collected{{Data: "a", Lines: 2}, {Data: "b", Lines: 2}}, nil},
		{"crlf", []string{"data: a\r\n\r\n"}, []collected{{Data: "a", Lines: 2}}, nil},
		{"cr", []string{"data: a\r\rdata: b\r\r"}, []collected{{Data: "a", Lines: 2}, {Data: "b", Lines: 2}}, nil},
		{"crlf split across reads", []string{"data: a\r", "\n\r", "\n"},
			[]collected{{Data: "a", At: ms, Lines: 2}}, nil},
		{"multi-line data", []string{"data: {\"a\":\ndata: 1}\n\n"}, []collected{{Data: "{\"a\":\n1}", Lines: 3}}, nil},
		{"no space after colon", []string{"data:x\n\n"}, []collected{{Data: "x", Lines: 2}}, nil},
		{"two spaces keep one", []string{"data:  x\n\n"}, []collected{{Data: " x", Lines: 2}}, nil},
		{"field without colon", []string{"data\n\n"}, []collected{{Data: "", Lines: 2}}, nil},
		{"event type and id", []string{"event: error\nid: 7\ndata: {}\n\n"}, []collected{{Type: "error", ID: "7", Data: "{}", Lines: 4}}, nil},
		{"comment keep-alive", []string{": keep-alive\n\n", "data: a\n\n"},
			[]collected{{Comment: true, Data: " keep-alive", Lines: 1}, {Data: "a", At: ms, First: ms, Lines: 2}}, nil},
		{"comment inside an event", []string{"data: a\n:ping\ndata: b\n\n"},
			[]collected{{Comment: true, Data: "ping", Lines: 1}, {Data: "a\nb", Lines: 3}}, nil},
		{"event without data is dropped", []string{"event: x\n\ndata: a\n\n"}, []collected{{Data: "a", Lines: 2}}, nil},
		{"retry and unknown fields ignored", []string{"retry: 10\nfoo: bar\ndata: a\n\n"}, []collected{{Data: "a", Lines: 4}}, nil},
		{"event split across reads", []string{"da", "ta: hel", "lo\n", "\n"},
			[]collected{{Data: "hello", At: 3 * ms, First: 0, Lines: 2}}, nil},
		{"blank lines between events", []string{"\n\n\ndata: a\n\n\n"}, []collected{{Data: "a", Lines: 2}}, nil},
		{"unterminated last event", []string{"data: a\n\ndata: [DONE]\n"},
			[]collected{{Data: "a", Lines: 2}, {Data: "[DONE]", At: ms, Lines: 1, Unterminated: true}}, nil},
		{"partial last line", []string{"data: a\n\ndata: [DO"}, []collected{{Data: "a", Lines: 2}}, ErrSSETruncated},
		{"empty stream", []string{""}, nil, nil},
		{"id with NUL ignored", []string{"id: a\x00b\ndata: x\n\n"}, []collected{{Data: "x", Lines: 3}}, nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			got, err := parseAll(tt.reads)
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if fmt.Sprint(got) != fmt.Sprint(tt.want) {
				t.Errorf("events\n got %v\nwant %v", got, tt.want)
			}
		})
	}
}

func TestParserLineTooLong(t *testing.T) {
	t.Parallel()
	var p SSEParser
	big := strings.Repeat("x", MaxSSELine/2+1)
	emit := func(*SSEEvent) error { return nil }
	if err := p.Feed([]byte("data: "+big), 0, emit); err != nil {
		t.Fatal(err)
	}
	if err := p.Feed([]byte(big+"\n"), 0, emit); !errors.Is(err, ErrSSELineTooLong) {
		t.Fatalf("error %v, want ErrSSELineTooLong", err)
	}
}

func TestParserEmitError(t *testing.T) {
	t.Parallel()
	var p SSEParser
	stop := errors.New("stop")
	n := 0
	err := p.Feed([]byte("data: a\n\ndata: b\n\n"), 0, func(*SSEEvent) error { n++; return stop })
	if !errors.Is(err, stop) || n != 1 {
		t.Fatalf("got error %v after %d events, want stop after 1", err, n)
	}
}

// FuzzParser checks that the parser never panics and that where a stream
// is cut into reads does not change its events (only their times).
func FuzzParser(f *testing.F) {
	for _, s := range []string{
		"data: a\n\n", "data: a\r\n\r\n", ": ping\r\rdata: x\ndata: y\n\n", "event: error\ndata: {}\n\n",
		"data: [DONE]\n", "data: a\r", "id: 1\nretry: 5\nfield\n\n",
	} {
		f.Add([]byte(s), uint8(3))
	}
	f.Fuzz(func(t *testing.T, data []byte, step uint8) {
		whole, errWhole := parseAll([]string{string(data)})
		var reads []string
		n := int(step%16) + 1
		for i := 0; i < len(data); i += n {
			reads = append(reads, string(data[i:min(i+n, len(data))]))
		}
		split, errSplit := parseAll(reads)
		if (errWhole == nil) != (errSplit == nil) {
			t.Fatalf("whole error %v, split error %v", errWhole, errSplit)
		}
		if len(whole) != len(split) {
			t.Fatalf("whole gave %d events, split %d:\n%v\n%v", len(whole), len(split), whole, split)
		}
		for i := range whole {
			a, b := whole[i], split[i]
			if a.Comment != b.Comment || a.Type != b.Type || a.ID != b.ID || a.Data != b.Data || a.Unterminated != b.Unterminated {
				t.Fatalf("event %d differs: whole %v, split %v", i, a, b)
			}
			if b.First > b.At {
				t.Fatalf("event %d: first byte at %v after its end at %v", i, b.First, b.At)
			}
		}
	})
}

func BenchmarkParser(b *testing.B) {
	ev := []byte(`data: {"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"content":" hello"},"logprobs":null,"finish_reason":null}]}` + "\n\n")
	var p SSEParser
	emit := func(*SSEEvent) error { return nil }
	b.ReportAllocs()
	b.SetBytes(int64(len(ev)))
	for i := 0; b.Loop(); i++ {
		if err := p.Feed(ev, time.Duration(i), emit); err != nil {
			b.Fatal(err)
		}
	}
}
