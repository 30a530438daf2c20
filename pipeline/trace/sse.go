package trace

import (
	"errors"
	"io"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/openai"
)

// The raw SSE capture (openai.CaptureWriter: every read of every streamed
// response with its arrival time) reads as a trace: its bytes are parsed
// again exactly as the live client parsed them.
func init() {
	Formats = append(Formats, Format{
		Name:     "sse",
		Describe: "raw OpenAI SSE capture with arrival times (underrun capture --sse)",
		Sniff:    openai.SniffCapture,
		Open: func(r io.Reader, name string) (Decoder, error) {
			return sseDecoder{openai.NewCaptureReader(r, name)}, nil
		},
	})
}

// sseDecoder makes the capture reader's errors ErrFormat errors too.
type sseDecoder struct{ r *openai.CaptureReader }

// Next returns the next stream of the capture as a turn.
func (d sseDecoder) Next() (*pipeline.Turn, error) {
	t, err := d.r.Next()
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, formatError{err}
	}
	return t, err
}

// formatError is an error of another package's reader that is also an
// ErrFormat.
type formatError struct{ err error }

// Error is the reader's message.
func (e formatError) Error() string { return e.err.Error() }

// Unwrap gives the reader's error.
func (e formatError) Unwrap() error { return e.err }

// Is makes the error an ErrFormat.
func (e formatError) Is(target error) bool { return target == ErrFormat }
