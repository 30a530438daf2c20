package trace

import (
	"fmt"
	"io"
	"strconv"

	"github.com/speech-pipeline/underrun/pipeline"
)

// sticky keeps a streaming reader's first error: once its next step has
// failed (or reached io.EOF), every later Next returns the same.
type sticky struct {
	err error
}

// read returns what next returns, or the error kept; a turn past the
// limits is an error naming the input, name.
func (st *sticky) read(name string, next func() (*pipeline.Turn, error)) (*pipeline.Turn, error) {
	if st.err != nil {
		return nil, st.err
	}
	t, err := next()
	if err == nil {
		err = limitsError(name, t)
	}
	if err != nil {
		st.err = err
		return nil, err
	}
	return t, nil
}

// checkHeader checks what a file's header record names: the format want
// (or none, where anyFormat allows it) and a version no newer than
// newest, the reader's; kind names the file for errors.
func checkHeader(format, want string, anyFormat bool, version, newest int64, kind string) error {
	if format != want && !(anyFormat && format == "") {
		return fmt.Errorf("header names format %q; want %q", format, want)
	}
	if version > newest {
		return fmt.Errorf("%s version %d is newer than this reader (version %d)", kind, version, newest)
	}
	return nil
}

// topArray opens the array at key in the top-level object of a file:
// '{', then the keys up to key (the others skipped), then '['. A file
// without key is ErrFormat, saying it is not file; arrays names the
// array's elements for errors.
func (s *scanner) topArray(what, key, file, arrays string) error {
	s.where = func() string { return "top level" }
	if err := s.expect('{', what); err != nil {
		return err
	}
	found, err := s.keysUntil(key, true)
	if err != nil {
		return err
	}
	if !found {
		return s.errorf(`no %q; want %s`, key, file)
	}
	s.where = func() string { return strconv.Quote(key) }
	return s.expect('[', "an array of "+arrays)
}

// eachKey calls fn with each key of the object s holds, the bytes valid
// during the call, skipping the values; it stops quietly at anything that
// is not an object (the record was read already, by another parser).
func (s *scanner) eachKey(fn func(key []byte)) {
	if s.expect('{', "an object") != nil {
		return
	}
	for i := 0; ; i++ {
		c, err := s.peek()
		if err != nil || c == '}' {
			return
		}
		if i > 0 {
			if c != ',' {
				return
			}
			s.readByte()
		}
		key, err := s.strBytes()
		if err != nil {
			return
		}
		fn(key)
		if s.expect(':', "':' after an object key") != nil {
			return
		}
		if _, err := s.skip(); err != nil {
			return
		}
	}
}

// end checks that nothing but white space follows what was read, the
// whole of what (named for errors).
func (s *scanner) end(what string) error {
	c, err := s.peek()
	if err == io.EOF {
		return nil
	}
	if err != nil {
		return s.ioError(err)
	}
	return s.errorf("more after %s: %s", what, describe(c))
}

// endObject reads the rest of the top-level object, skipping its keys,
// and checks that nothing follows it.
func (s *scanner) endObject(what string) error {
	if _, err := s.keysUntil("", false); err != nil {
		return err
	}
	return s.end(what)
}

// topList walks the array at one key of a file's top-level object,
// element by element: GenAI-Perf's experiments, GuideLLM's benchmarks.
// The strings name what is read, for errors (topArray, endObject).
type topList struct {
	what, key, file, arrays, object string
	opened                          bool
	i                               int // the element read last (-1: none yet)
}

// newTopList returns the walk of the array at key of a file whose
// top-level object is what (its rest read as object), file naming it
// and arrays the elements for errors.
func newTopList(what, key, file, arrays, object string) topList {
	return topList{what: what, key: key, file: file, arrays: arrays, object: object, i: -1}
}

// next reads up to the array's next element (opening the array first)
// and reports whether there is one; after the last it reads the rest of
// the top-level object with endObject.
func (l *topList) next(s *scanner) (bool, error) {
	if !l.opened {
		if err := s.topArray(l.what, l.key, l.file, l.arrays); err != nil {
			return false, err
		}
		l.opened = true
	}
	more, err := s.more(l.i + 1)
	switch {
	case err != nil:
		return false, err
	case !more:
		return false, s.endObject(l.object)
	}
	l.i++
	return true, nil
}
