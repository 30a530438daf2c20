package monitor

import (
	"bufio"
	"fmt"
	"io"
	"sync"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// recorder writes what the monitor receives to a native trace. Records
// are buffered and flushed on a short interval and at close, so recording
// costs ingestion a copy, not a system call per message. Turn names are
// prefixed with their session ("s1/t1"), since sessions name turns alike.
type recorder struct {
	mu  sync.Mutex
	bw  *bufio.Writer
	w   *trace.Writer
	err error
}

func newRecorder(w io.Writer) *recorder {
	bw := bufio.NewWriterSize(w, 64<<10)
	return &recorder{bw: bw, w: trace.NewWriter(bw, "monitor")}
}

// recordName is a turn's name in the recording.
func recordName(session, turn string) string { return session + "/" + turn }

func (r *recorder) keep(err error) {
	if err != nil && r.err == nil {
		r.err = fmt.Errorf("recording: %w", err)
	}
}

func (r *recorder) begin(t *pipeline.Turn) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.keep(r.w.BeginTurn(t))
	r.mu.Unlock()
}

func (r *recorder) chunk(id string, c pipeline.Chunk) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.keep(r.w.WriteChunk(id, c))
	r.mu.Unlock()
}

func (r *recorder) end(t *pipeline.Turn) {
	if r == nil {
		return
	}
	r.mu.Lock()
	r.keep(r.w.EndTurn(t))
	r.mu.Unlock()
}

// flush writes out what is buffered.
func (r *recorder) flush() error {
	if r == nil {
		return nil
	}
	r.mu.Lock()
	defer r.mu.Unlock()
	r.keep(r.w.WriteHeader())
	r.keep(r.bw.Flush())
	return r.err
}
