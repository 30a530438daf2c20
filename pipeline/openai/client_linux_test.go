package openai

import (
	"context"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"testing"
	"time"

	"golang.org/x/sys/unix"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
)

// heldTrace is a trace writer that holds up the client's read loop on the
// chunk with the given text: it says so (reading), waits until the server
// has the next chunk acknowledged by the client's kernel (arrived), then
// holds on for hold more and notes when it let go (woke). It says when
// the client has read the chunk after that one (next).
type heldTrace struct {
	fakeTrace
	on, after     string
	hold          time.Duration
	reading, next chan struct{}
	arrived       <-chan struct{}
	woke          time.Time
}

func (h *heldTrace) WriteChunk(id string, c pipeline.Chunk) error {
	switch c.Text {
	case h.on:
		close(h.reading)
		<-h.arrived
		time.Sleep(h.hold)
		h.woke = time.Now()
	case h.after:
		close(h.next)
	}
	return h.fakeTrace.WriteChunk(id, c)
}

// connKey keys the server side of a test connection in its requests'
// contexts.
type connKey struct{}

// unacked returns how many bytes written on c its peer has not
// acknowledged yet.
func unacked(c net.Conn) (int, error) {
	raw, err := c.(*net.TCPConn).SyscallConn()
	if err != nil {
		return 0, err
	}
	var n int
	var ioctlErr error
	if err := raw.Control(func(fd uintptr) { n, ioctlErr = unix.IoctlGetInt(int(fd), unix.SIOCOUTQ) }); err != nil {
		return 0, err
	}
	return n, ioctlErr
}

// TestClientKernelClock: a chunk that arrives while the client is busy is
// timed when it arrived (the kernel's receive stamp), not when the client
// got round to reading it; with ReadClock it is timed at the read. The
// test proves it by events, not by time: the server sends each chunk only
// once the client has read the one before (chunks read together share
// the last one's stamp), and the client reads "b" only once the server
// has seen it acknowledged by the client's kernel (which stamped it
// before that) and a hold of 60 ms more, so the stamp of "b" is at least
// the hold before the read, however busy the machine.
func TestClientKernelClock(t *testing.T) {
	t.Parallel()
	if !rxstamp.Supported() {
		t.Skip("this system gives no kernel receive stamps; the client keeps read times")
	}
	testkit.KeepStamps(t)
	const hold = 60 * time.Millisecond
	for _, readClock := range []bool{false, true} {
		reading, arrived, next := make(chan struct{}), make(chan struct{}), make(chan struct{})
		srv := httptest.NewUnstartedServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			io.Copy(io.Discard, r.Body)
			w.Header().Set("Content-Type", "text/event-stream")
			send := func(s string) {
				io.WriteString(w, s)
				w.(http.Flusher).Flush()
			}
			send(testkit.ChatChunk(`{"content":"a"}`))
			select {
			case <-reading:
			case <-r.Context().Done():
				return
			}
			send(testkit.ChatChunk(`{"content":"b"}`))
			conn := r.Context().Value(connKey{}).(net.Conn)
			for {
				if n, err := unacked(conn); err != nil || n == 0 {
					if err != nil {
						t.Errorf("SIOCOUTQ: %v", err)
					}
					break
				}
				select {
				case <-time.After(100 * time.Microsecond):
				case <-r.Context().Done():
					return
				}
			}
			close(arrived)
			select {
			case <-next:
			case <-r.Context().Done():
				return
			}
			send(testkit.ChatChunk(`{"content":"c"}`))
			send(testkit.Done)
		}))
		srv.Config.ConnContext = func(ctx context.Context, c net.Conn) context.Context {
			return context.WithValue(ctx, connKey{}, c)
		}
		srv.Start()
		defer srv.Close()
		tr := &heldTrace{on: "a", after: "b", hold: hold, reading: reading, arrived: arrived, next: next}
		c := &Client{BaseURL: srv.URL, ReadClock: readClock, Trace: tr}
		s, err := c.Stream(context.Background(), "t", "", Request{Model: "m", Prompt: Prompt{Text: "x"}})
		if err != nil {
			t.Fatal(err)
		}
		ch := s.Turn.Chunks
		if len(ch) != 3 || s.Turn.Start.IsZero() {
			t.Fatalf("turn %+v", s.Turn)
		}
		// how long before the client read "b" it was timed
		early := tr.woke.Sub(s.Turn.Start.Add(ch[1].At))
		switch {
		case readClock && early > 0:
			t.Errorf("ReadClock: chunk b timed %v before the client read it, want at the read", early)
		case !readClock && early < hold-time.Millisecond:
			t.Errorf("kernel clock: chunk b timed %v before the client read it, want at least the %v it waited in the socket", early, hold)
		}
		if itl := ch[1].At - ch[0].At; itl <= 0 {
			t.Errorf("chunks a and b timed %v apart, want b after a (they came in reads of their own)", itl)
		}
		if ch[2].At < ch[1].At {
			t.Errorf("chunks out of order: %v then %v", ch[1].At, ch[2].At)
		}
	}
}
