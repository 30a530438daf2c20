package main

import (
	"errors"
	"fmt"
	"io"
	"os"
	"sync"

	"github.com/spf13/pflag"

	"github.com/speech-pipeline/underrun/cmd/underrun/internal/outfile"
	"github.com/speech-pipeline/underrun/pipeline/openai"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// Every file a command writes goes through one of two functions here:
//
//   - createOutput for a whole output (convert -o, --wav, --plot, plot -o,
//     --events of a finished run, voice calibrate -o): written beside the
//     path and put in place when complete, so an error leaves what was
//     there as it was;
//   - openRecording for a recording of a command that runs until stopped
//     (capture and proxy -o and --sse, monitor --record, the --events of
//     monitor, mock and proxy): written in place as it goes, so a crash
//     keeps what was written, and an existing non-empty file is refused
//     unless --force says to replace it.
//
// Neither replaces a link, device or pipe: see package outfile. An event
// log (--events FILE) follows the recordings' rule on every command: an
// existing non-empty file is refused unless --force replaces it.

// createOutput starts a whole output named by a flag.
func createOutput(flag, path string) (*outfile.File, error) {
	f, err := outfile.Create(path)
	if err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	return f, nil
}

// refuseExisting refuses, unless replace (--force), a path that holds a
// non-empty file.
func refuseExisting(flag, path string, replace bool) error {
	if replace {
		return nil
	}
	if err := outfile.NotEmpty(path); err != nil {
		return usagef("%s: %w: pass --force to replace it, or choose another name", flag, err)
	}
	return nil
}

// openRecording opens a recording named by a flag; replace is --force.
// Its first failed write is said at once on stderr (see recording).
func openRecording(stderr io.Writer, flag, path string, replace bool) (*recording, error) {
	f, err := outfile.OpenStream(path, replace)
	if errors.Is(err, outfile.ErrExists) {
		return nil, usagef("%s: %w: pass --force to replace it, or choose another name", flag, err)
	}
	if err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	return &recording{File: f, watch: &watchedWriter{w: f, flag: flag, name: path, stderr: stderr}}, nil
}

// recording is a file a command writes as it runs (a trace, an SSE
// capture, an event log, a WAV of what was played), its writes watched
// (see watchedWriter): Close returns the first failed write's error, so
// that the command ends with exit status 2 after serving what it serves.
type recording struct {
	*os.File
	watch *watchedWriter
}

// Write writes p, unless a write failed before.
func (r *recording) Write(p []byte) (int, error) { return r.watch.Write(p) }

// Close closes the file and returns the first failed write's error, or
// the close's.
func (r *recording) Close() error {
	err := r.File.Close()
	if werr := r.watch.Err(); werr != nil {
		return werr
	}
	if err != nil {
		return fmt.Errorf("%s: %w", r.watch.flag, err)
	}
	return nil
}

// watchedWriter passes writes on to a file and says its first failed
// write at once on the command's stderr, with the flag, the file and how
// much it holds, while the command goes on (a proxy forwards every byte, a
// monitor takes its sessions). From then on the file takes no more
// writes: a recording with a hole in it would read as if nothing were
// missing. It is safe for concurrent use.
type watchedWriter struct {
	w          io.Writer
	flag, name string
	stderr     io.Writer
	mu         sync.Mutex
	written    int64
	err        error
}

// Write writes p, unless a write failed before.
func (w *watchedWriter) Write(p []byte) (int, error) {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.err != nil {
		return 0, w.err
	}
	n, err := w.w.Write(p)
	w.written += int64(n)
	if err == nil && n < len(p) {
		err = io.ErrShortWrite
	}
	if err != nil {
		w.err = fmt.Errorf("%s %s: %w (the file holds the first %d bytes)", w.flag, w.name, err, w.written)
		fmt.Fprintf(w.stderr, "underrun: %v; nothing more is written to it, the run goes on and ends with exit status 2\n", w.err)
		return n, w.err
	}
	return n, nil
}

// Err returns the first failed write's error, or nil.
func (w *watchedWriter) Err() error {
	w.mu.Lock()
	defer w.mu.Unlock()
	return w.err
}

// finishRecorded renders the session's report and returns the run's
// outcome: a recording that failed (recErr, said at once when it did)
// fails the run after the report, in place of the verdict's exit 1.
func finishRecorded(s *session, recErr error) error {
	err := s.finish()
	if recErr == nil {
		return err
	}
	if err != nil && !errors.Is(err, errFail) {
		return errors.Join(recErr, err)
	}
	return recErr
}

// bindForce binds --force, the permission to replace an existing
// recording.
func bindForce(fs *pflag.FlagSet, force *bool) {
	fs.BoolVar(force, "force", false, "replace an existing non-empty recording or event log (without it such a file is refused and left alone)")
}

// recordings are the files capture and proxy record streams to as they
// pass: -o the native trace, --sse the raw SSE capture.
type recordings struct {
	trace   *trace.Writer        // nil without -o
	capture *trace.CaptureWriter // nil without --sse
	files   []*recording
}

// createRecordings opens the files named ("" for none) as recordings (a
// non-empty file is refused unless replace, --force, is set), their headers
// naming source. On an error, none is left open.
func createRecordings(stderr io.Writer, traceFile, sseFile, source string, replace bool) (*recordings, error) {
	r := &recordings{}
	if traceFile != "" {
		f, err := openRecording(stderr, "-o", traceFile, replace)
		if err != nil {
			return nil, err
		}
		r.files = append(r.files, f)
		r.trace = trace.NewWriter(f, source)
	}
	if sseFile != "" {
		f, err := openRecording(stderr, "--sse", sseFile, replace)
		if err != nil {
			r.close()
			return nil, err
		}
		r.files = append(r.files, f)
		r.capture = trace.NewCaptureWriter(f, source)
	}
	return r, nil
}

// traceWriter returns the trace for concurrent streams to record to, or
// nil without -o.
func (r *recordings) traceWriter() openai.TraceWriter {
	if r.trace == nil {
		return nil
	}
	return openai.SyncTrace(r.trace)
}

// close closes the files and returns the first error; closing again does
// nothing.
func (r *recordings) close() error {
	var first error
	for _, f := range r.files {
		if err := f.Close(); err != nil && first == nil {
			first = err
		}
	}
	r.files = nil
	return first
}
