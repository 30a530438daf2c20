package trace

import (
	"bufio"
	"bytes"
	"errors"
	"fmt"
	"io"
	"math"
	"strings"

	"github.com/speech-pipeline/underrun/pipeline"
)

// Decoder yields the turns of a trace one at a time; Next returns io.EOF
// after the last turn. Every reader in this package is a Decoder.
type Decoder interface {
	Next() (*pipeline.Turn, error)
}

// DecoderFunc adapts a function to Decoder.
type DecoderFunc func() (*pipeline.Turn, error)

// Next calls f.
func (f DecoderFunc) Next() (*pipeline.Turn, error) { return f() }

var _ Decoder = (*NativeReader)(nil)
var _ Decoder = DecoderFunc(nil)

// Format is one trace format a Decoder can be opened for.
type Format struct {
	// Name is the format as --format takes it.
	Name string
	// Describe says in a few words what files it reads.
	Describe string
	// Sniff reports whether the start of an input looks like this format.
	Sniff func(head []byte) bool
	// Open returns a decoder reading r; name labels errors.
	Open func(r io.Reader, name string) (Decoder, error)
}

// FormatNames lists the names of Formats, for help texts.
func FormatNames() string {
	names := make([]string, len(Formats))
	for i, f := range Formats {
		names[i] = f.Name
	}
	return strings.Join(names, ", ")
}

// Detect returns the name of the format the start of an input looks
// like, as Open tells it from the first SniffLen bytes, or "".
func Detect(head []byte) string {
	head = bytes.TrimPrefix(head, byteOrderMark)
	for _, f := range Formats {
		if f.Sniff(head) {
			return f.Name
		}
	}
	return ""
}

// byteOrderMark is UTF-8's byte-order mark, which a reader skips at the
// start of an input.
var byteOrderMark = []byte{0xEF, 0xBB, 0xBF}

// SniffLen is how much of an input Open looks at to tell its format.
const SniffLen = sniffLen

// sniffLen is how much of an input Open looks at to tell its format.
const sniffLen = 64 << 10

// Open returns a decoder for r. format names one of Formats, or is "" or
// "auto" to tell the format from the content. Every reader gives turns
// within the limits (see TurnBudget) or an error naming the input and the
// turn, so that whatever reads them (convert, writing a trace again) holds
// no more than a trace can.
func Open(r io.Reader, name, format string) (Decoder, error) {
	br := bufio.NewReaderSize(r, sniffLen)
	// a UTF-8 byte-order mark (Windows editors write one) is no part of
	// the trace
	skip := int64(0)
	if b, _ := br.Peek(len(byteOrderMark)); bytes.Equal(b, byteOrderMark) {
		skip = int64(len(byteOrderMark))
		_, _ = br.Discard(len(byteOrderMark)) // peeked: there to discard
	}
	// A reader of a file that can also be read at any offset keeps that
	// ability, so a format whose records are spread over one big object
	// (vLLM) can read it in several places at once.
	var src io.Reader = br
	if ra, ok := r.(io.ReaderAt); ok {
		if skip > 0 {
			ra = io.NewSectionReader(ra, skip, math.MaxInt64-skip)
		}
		src = peekedReaderAt{br, ra}
	}
	if format != "" && format != "auto" {
		for _, f := range Formats {
			if f.Name == format {
				return f.Open(src, name)
			}
		}
		return nil, fmt.Errorf("%w: %s: unknown format %q; want auto or one of %s", ErrFormat, name, format, FormatNames())
	}
	head, err := br.Peek(sniffLen)
	if err != nil && err != io.EOF && err != bufio.ErrBufferFull {
		return nil, fmt.Errorf("%s: %w", name, err)
	}
	if len(bytes.TrimSpace(head)) == 0 {
		return nil, fmt.Errorf("%w: %s: empty input; want a trace in one of: %s", ErrFormat, name, FormatNames())
	}
	for _, f := range Formats {
		if f.Sniff(head) {
			return f.Open(src, name)
		}
	}
	// a single JSON object whose telling keys come after the first
	// sniffLen bytes (a big array first, or keys sorted by name): read its
	// top-level keys, skipping their values
	if t := bytes.TrimLeft(head, " \t\r\n"); len(head) == sniffLen && len(t) > 0 && t[0] == '{' {
		ra, ok := src.(io.ReaderAt)
		if !ok {
			return nil, fmt.Errorf("%w: %s: a JSON object whose first %d KiB do not tell its format; name it with --format (%s)", ErrFormat, name, sniffLen>>10, FormatNames())
		}
		switch {
		case objectHasKey(ra, sglangKeys):
			return NewSGLangReader(src, name)
		case objectHasKey(ra, vllmKeys):
			return NewVLLMReader(src, name)
		}
	}
	return nil, fmt.Errorf("%w: %s: not a format underrun knows (%s); name one with --format", ErrFormat, name, FormatNames())
}

// objectHasKey reports whether the JSON object at the start of ra has one
// of keys (quoted, as in the file) at its top level. It reads up to the
// end of the object, holding only a buffer of it.
func objectHasKey(ra io.ReaderAt, keys []string) bool {
	s := newScanner(section(ra, 0), "", 0, 64<<10)
	errFound := errors.New("found")
	err := s.object(func(k string) error {
		for _, want := range keys {
			if k == want[1:len(want)-1] {
				return errFound
			}
		}
		_, err := s.skip()
		return err
	})
	return err == errFound
}

// peekedReaderAt reads through the buffered reader Open sniffed with, and
// reads at offsets from the underlying input.
type peekedReaderAt struct {
	*bufio.Reader
	io.ReaderAt
}

func sniffNative(head []byte) bool {
	line, _, _ := bytes.Cut(bytes.TrimLeft(head, " \t\r\n"), []byte("\n"))
	if len(line) == 0 || line[0] != '{' {
		return false
	}
	for _, t := range []string{"header", "turn", "chunk", "end"} {
		if bytes.Contains(line, []byte(`"type":"`+t+`"`)) || bytes.Contains(line, []byte(`"type": "`+t+`"`)) {
			return true
		}
	}
	return false
}
