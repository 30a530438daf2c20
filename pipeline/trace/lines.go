package trace

import (
	"bufio"
	"errors"
	"fmt"
	"io"
)

// jsonLines reads a JSON Lines input line by line, as the native and the
// capture readers do: lines are counted from 1, a line is at most max
// bytes (so a line without an end cannot take memory without bound), and
// the last line may lack its newline.
type jsonLines struct {
	r    *bufio.Reader
	max  int
	line int // the number of the line read last
}

func newJSONLines(r io.Reader, max int) jsonLines {
	return jsonLines{r: bufio.NewReaderSize(r, 256<<10), max: max}
}

// errLongLine is next's error for a line longer than the reader's max;
// the reader words it, with its line number.
var errLongLine = errors.New("line too long")

// next returns the next line without its newline, and counts it; last is
// true for a line the input ended without a newline. After the last line
// it returns io.EOF.
func (l *jsonLines) next() (line []byte, last bool, err error) {
	line, err = l.r.ReadSlice('\n')
	if err == io.EOF && len(line) == 0 {
		return nil, true, io.EOF
	}
	l.line++
	if err == bufio.ErrBufferFull {
		// a long line: gather it, up to max
		buf := append([]byte(nil), line...)
		for err == bufio.ErrBufferFull {
			if len(buf) > l.max {
				return nil, false, errLongLine
			}
			line, err = l.r.ReadSlice('\n')
			buf = append(buf, line...)
		}
		line = buf
	}
	switch {
	case len(line) > l.max:
		return nil, false, errLongLine
	case err == io.EOF:
		return line, true, nil
	case err != nil:
		return nil, false, err
	}
	return line[:len(line)-1], false, nil
}

// record is next for a reader of records: its errors name the input and
// the line, a line too long wrapped in kind (the reader's format error).
func (l *jsonLines) record(name string, kind error) (line []byte, last bool, err error) {
	line, last, err = l.next()
	switch {
	case err == nil || err == io.EOF:
		return line, last, err
	case err == errLongLine:
		return nil, false, fmt.Errorf("%w: %s:%d: line longer than %d bytes; want one JSON record per line", kind, name, l.line, l.max)
	}
	return nil, false, fmt.Errorf("%s:%d: %w", name, l.line, err)
}
