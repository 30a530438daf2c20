package player

import (
	"fmt"
	"io"
	"sync"

	"github.com/gopxl/beep/v2"
	"github.com/gopxl/beep/v2/wav"
)

// WAV writes what a player plays to a 16-bit mono WAV file as it plays:
// give its Write as Options.Record, and Close it when the player is done.
// The file's header gets its sizes at Close; until then they read
// "unknown", so a run that stops early leaves a readable file. A WAV is
// safe for concurrent use.
type WAV struct {
	mu     sync.Mutex
	cond   *sync.Cond
	queue  []float32
	closed bool
	done   chan error
}

// NewWAV starts writing a WAV at rate to w.
func NewWAV(w io.WriteSeeker, rate int) *WAV {
	r := &WAV{done: make(chan error, 1)}
	r.cond = sync.NewCond(&r.mu)
	format := beep.Format{SampleRate: beep.SampleRate(rate), NumChannels: 1, Precision: 2}
	go func() { r.done <- wav.Encode(w, r, format) }()
	return r
}

// Write queues samples for the file; it does not wait for the disk.
func (r *WAV) Write(samples []float32) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.closed {
		return
	}
	r.queue = append(r.queue, samples...)
	r.cond.Signal()
}

// Close writes what is queued, finishes the header and returns the first
// error writing the file.
func (r *WAV) Close() error {
	r.mu.Lock()
	if r.closed {
		r.mu.Unlock()
		return nil
	}
	r.closed = true
	r.cond.Signal()
	r.mu.Unlock()
	if err := <-r.done; err != nil {
		return fmt.Errorf("writing the WAV: %w", err)
	}
	return nil
}

// Stream hands the encoder the queued samples, waiting for some; it ends
// after Close.
func (r *WAV) Stream(buf [][2]float64) (int, bool) {
	r.mu.Lock()
	defer r.mu.Unlock()
	for len(r.queue) == 0 && !r.closed {
		r.cond.Wait()
	}
	if len(r.queue) == 0 {
		return 0, false
	}
	n := min(len(buf), len(r.queue))
	for i, v := range r.queue[:n] {
		buf[i] = [2]float64{float64(v), float64(v)}
	}
	r.queue = append(r.queue[:0], r.queue[n:]...)
	return n, true
}

// Err returns nil: the queue does not fail.
func (r *WAV) Err() error { return nil }

var _ beep.Streamer = (*WAV)(nil)
