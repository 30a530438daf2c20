package monitor

import (
	"fmt"
	"hash/maphash"
	"io"
	"strconv"
	"sync"
	"time"

	"github.com/rs/zerolog"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// DefaultRecordBacklog is how many bytes of records may wait for a write
// that the destination holds up before ingestion waits for it too.
const DefaultRecordBacklog = 8 << 20

// recorder writes what the monitor accepts to a native trace. Records are
// appended to a buffer as they are accepted; a writer goroutine of the
// recorder hands the buffer to the destination at most delay after the
// first record in it came, in one write, so a process killed at any moment
// loses at most the records of the last delay, while recording costs
// ingestion a copy, not a system call per message. While a write is held
// up (a slow disk), records keep coming into a second buffer; past
// backlog bytes ingestion waits for the write rather than hold more.
//
// Turns are named "SESSION/TURN", since sessions name turns alike. A name
// the recording already holds (a session that reuses a turn id after the
// turn ended, or a session name that connects again) is recorded as
// "SESSION/TURN#2", "#3", ...: the first free one, so that every recorded
// turn has a name of its own and the recording reads back as it was
// streamed. The names are remembered by a 64-bit hash (some 20 bytes a
// turn): two names with the same hash only cost one of them a suffix.
type recorder struct {
	dst     io.Writer
	delay   time.Duration
	backlog int
	log     zerolog.Logger

	mu      sync.Mutex
	room    *sync.Cond // signalled when a write ends
	pending []byte     // records not yet handed to dst
	w       *trace.Writer
	writing bool // dst.Write is running (outside mu)
	closed  bool
	err     error
	seed    maphash.Seed
	names   map[uint64]uint32 // hash of each recorded name -> its last suffix
	wake    chan struct{}     // a record came into an empty buffer
	done    chan struct{}     // the writer goroutine has ended
}

// pendingWriter appends the trace.Writer's records to the recorder's
// buffer (recorder.mu held).
type pendingWriter struct{ r *recorder }

func (p pendingWriter) Write(b []byte) (int, error) {
	p.r.pending = append(p.r.pending, b...)
	return len(b), nil
}

// newRecorder starts a recorder that writes to w, the header at once.
func newRecorder(w io.Writer, delay time.Duration, backlog int, log zerolog.Logger) *recorder {
	r := &recorder{dst: w, delay: delay, backlog: backlog, log: log, seed: maphash.MakeSeed(),
		names: map[uint64]uint32{}, wake: make(chan struct{}, 1), done: make(chan struct{})}
	r.room = sync.NewCond(&r.mu)
	r.w = trace.NewWriter(pendingWriter{r}, "monitor")
	r.w.WriteHeader() // into pending: it cannot fail
	r.wake <- struct{}{}
	go r.run()
	return r
}

// run hands the pending records to the destination until close.
func (r *recorder) run() {
	defer close(r.done)
	var out []byte
	for range r.wake {
		time.Sleep(r.delay) // the records of the next delay go in the same write
		r.mu.Lock()
		out, r.pending = r.pending, out[:0]
		r.writing = len(out) > 0 && r.err == nil
		r.mu.Unlock()
		if !r.writing {
			continue
		}
		_, err := r.dst.Write(out)
		r.mu.Lock()
		r.writing = false
		if err != nil && r.err == nil {
			// the recording is broken from here on: said once, not on
			// every write
			r.err = fmt.Errorf("recording: %w", err)
			r.log.Error().Str("event", "record_error").Err(err).
				Msg("record_error: the monitor goes on, nothing more is recorded")
		}
		r.room.Broadcast()
		r.mu.Unlock()
	}
}

// added ends a method that appended records (mu held): it wakes the
// writer for a buffer that was empty, and waits while the buffer is over
// the backlog behind a write that is held up. After close the records
// stay pending for close's last write.
func (r *recorder) added(before int) {
	if before == 0 && len(r.pending) > 0 && !r.closed {
		select {
		case r.wake <- struct{}{}:
		default: // the writer is awake already
		}
	}
	for r.writing && len(r.pending) > r.backlog && !r.closed {
		r.room.Wait()
	}
}

// name returns the recorded name of a session's turn: SESSION/TURN, or
// the first SESSION/TURN#N the recording does not hold yet (mu held).
func (r *recorder) name(session, turn string) string {
	base := session + "/" + turn
	k := maphash.String(r.seed, base)
	last, used := r.names[k]
	if !used {
		r.names[k] = 1
		return base
	}
	for n := last + 1; ; n++ {
		cand := base + "#" + strconv.FormatUint(uint64(n), 10)
		kc := maphash.String(r.seed, cand)
		if _, taken := r.names[kc]; !taken {
			r.names[k], r.names[kc] = n, 1
			return cand
		}
	}
}

// begin records a turn's start and returns its name in the recording (a
// nil recorder names it SESSION/TURN and records nothing).
func (r *recorder) begin(session, turn string, start time.Time) string {
	if r == nil {
		return session + "/" + turn
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	id := r.name(session, turn)
	before := len(r.pending)
	r.w.BeginTurn(&pipeline.Turn{ID: id, Session: session, Start: start}) // into pending: cannot fail
	r.added(before)
	return id
}

// write has the trace writer write records into the buffer (a nil
// recorder records nothing).
func (r *recorder) write(f func(w *trace.Writer)) {
	if r == nil {
		return
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	before := len(r.pending)
	f(r.w) // into pending: cannot fail
	r.added(before)
}

func (r *recorder) chunk(id string, c pipeline.Chunk) {
	r.write(func(w *trace.Writer) { w.WriteChunk(id, c) })
}

func (r *recorder) tool(id string, tc pipeline.ToolCall) {
	r.write(func(w *trace.Writer) { w.WriteToolCall(id, tc) })
}

func (r *recorder) end(t *pipeline.Turn) {
	r.write(func(w *trace.Writer) { w.EndTurn(t) })
}

// close writes out what is pending, stops the writer and returns the
// recording's first error.
func (r *recorder) close() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	if !r.closed {
		r.closed = true
		r.room.Broadcast()
		close(r.wake)
	}
	r.mu.Unlock()
	<-r.done
	r.mu.Lock()
	defer r.mu.Unlock()
	if len(r.pending) > 0 && r.err == nil {
		if _, err := r.dst.Write(r.pending); err != nil {
			r.err = fmt.Errorf("recording: %w", err)
		}
		r.pending = r.pending[:0]
	}
	return r.err
}
