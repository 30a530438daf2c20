package main

import (
	"errors"
	"os"

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
// Neither replaces a link, device or pipe: see package outfile.

// createOutput starts a whole output named by a flag.
func createOutput(flag, path string) (*outfile.File, error) {
	f, err := outfile.Create(path)
	if err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	return f, nil
}

// openRecording opens a recording named by a flag; replace is --force.
func openRecording(flag, path string, replace bool) (*os.File, error) {
	f, err := outfile.OpenStream(path, replace)
	if errors.Is(err, outfile.ErrExists) {
		return nil, usagef("%s: %w: pass --force to replace it, or choose another name", flag, err)
	}
	if err != nil {
		return nil, usagef("%s: %w", flag, err)
	}
	return f, nil
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
	files   []*os.File
}

// createRecordings opens the files named ("" for none) as recordings (a
// non-empty file is refused unless replace, --force, is set), their headers
// naming source. On an error, none is left open.
func createRecordings(traceFile, sseFile, source string, replace bool) (*recordings, error) {
	r := &recordings{}
	if traceFile != "" {
		f, err := openRecording("-o", traceFile, replace)
		if err != nil {
			return nil, err
		}
		r.files = append(r.files, f)
		r.trace = trace.NewWriter(f, source)
	}
	if sseFile != "" {
		f, err := openRecording("--sse", sseFile, replace)
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
