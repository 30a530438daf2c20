package trace

import (
	"bytes"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"math/bits"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
	"unsafe"
)

// scanner is a small streaming JSON reader for the benchmark formats. It
// reads one value at a time from its own buffer over the input, so memory
// stays bounded by the value being read, and it is many times faster than
// encoding/json's Token API on the number-heavy arrays benchmark files are
// made of. It accepts Python's NaN, Infinity and -Infinity, which
// json.dumps writes for undefined statistics.
type scanner struct {
	rd   io.Reader
	b    []byte // b[i:n] is read and not yet consumed
	i, n int
	rerr error // the error that ended the input (io.EOF at its end)
	base int64 // input offset of b[0]
	name string
	line int // 1-based line of the next byte
	tmp  []byte
	keys map[string]string
	// recent holds the keys seen last, by a hash of their bytes: most
	// keys are found here without the map.
	recent [128]string
	// where names the field being read, for errors.
	where func() string
}

func newScanner(r io.Reader, name string, off int64, size int) *scanner {
	return &scanner{rd: r, b: make([]byte, size), name: name, line: 1, base: off}
}

// reset makes s read the bytes of b (and nothing after them).
func (s *scanner) reset(b []byte) {
	s.rd, s.b, s.i, s.n, s.rerr, s.base, s.line = nil, b, 0, len(b), io.EOF, 0, 1
}

// offset returns the input offset of the next byte.
func (s *scanner) offset() int64 { return s.base + int64(s.i) }

// fill reads more input, keeping b[keep:n]; it returns false when there is
// no more. The bytes move: slices into b from before are invalid after.
func (s *scanner) fill(keep int) bool {
	if s.rerr != nil {
		return false
	}
	if keep > 0 {
		copy(s.b, s.b[keep:s.n])
		s.n -= keep
		s.i -= keep
		s.base += int64(keep)
	}
	if s.n == len(s.b) { // a value longer than the buffer: grow it
		nb := make([]byte, 2*len(s.b))
		copy(nb, s.b[:s.n])
		s.b = nb
	}
	for tries := 0; tries < 100; tries++ {
		m, err := s.rd.Read(s.b[s.n:])
		s.n += m
		if err != nil {
			s.rerr = err
			return m > 0
		}
		if m > 0 {
			return true
		}
	}
	s.rerr = io.ErrNoProgress
	return false
}

// errorf returns an ErrFormat error naming the input, the line and the
// field being read.
func (s *scanner) errorf(format string, args ...any) error {
	w := ""
	if s.where != nil {
		if f := s.where(); f != "" {
			w = " " + f + ":"
		}
	}
	return fmt.Errorf("%w: %s:%d:%s %s", ErrFormat, s.name, s.line, w, fmt.Sprintf(format, args...))
}

// ioError turns a read error into a clear one: the end of the input inside
// a value means the file was cut off.
func (s *scanner) ioError(err error) error {
	if errors.Is(err, io.EOF) || errors.Is(err, io.ErrUnexpectedEOF) {
		return s.errorf("the input ends in the middle of a JSON value; the file looks cut off")
	}
	return fmt.Errorf("%s:%d: %w", s.name, s.line, err)
}

func (s *scanner) endErr() error {
	if s.rerr == nil {
		return io.EOF
	}
	return s.rerr
}

func (s *scanner) readByte() (byte, error) {
	if s.i >= s.n && !s.fill(s.i) {
		return 0, s.endErr()
	}
	c := s.b[s.i]
	s.i++
	if c == '\n' {
		s.line++
	}
	return c, nil
}

// peek skips white space and returns the next byte without consuming it;
// io.EOF at the end of the input.
func (s *scanner) peek() (byte, error) {
	for {
		for s.i < s.n {
			switch c := s.b[s.i]; c {
			case '\n':
				s.line++
				s.i++
			case ' ', '\t', '\r':
				s.i++
			default:
				return c, nil
			}
		}
		if !s.fill(s.i) {
			return 0, s.endErr()
		}
	}
}

// next skips white space and consumes the next byte.
func (s *scanner) next() (byte, error) {
	if _, err := s.peek(); err != nil {
		return 0, s.ioError(err)
	}
	return s.readByte()
}

func describe(c byte) string {
	switch {
	case c == '"':
		return "a string"
	case c == '{':
		return "an object"
	case c == '[':
		return "an array"
	case c == 't' || c == 'f':
		return "a boolean"
	case c == 'n':
		return "null"
	case c == '-' || (c >= '0' && c <= '9') || c == 'N' || c == 'I':
		return "a number"
	}
	return strconv.QuoteRune(rune(c))
}

// expect consumes the next non-space byte, which must be c; what names it
// for the error.
func (s *scanner) expect(c byte, what string) error {
	if s.i < s.n && s.b[s.i] == c { // c is never white space
		s.i++
		return nil
	}
	got, err := s.next()
	if err != nil {
		return err
	}
	if got != c {
		return s.errorf("want %s, got %s", what, describe(got))
	}
	return nil
}

// null consumes a null if one comes next and reports whether it did.
func (s *scanner) null() (bool, error) {
	if s.i < s.n && s.b[s.i] > ' ' && s.b[s.i] != 'n' { // the common case
		return false, nil
	}
	c, err := s.peek()
	if err != nil {
		return false, s.ioError(err)
	}
	if c != 'n' {
		return false, nil
	}
	return true, s.literal("null")
}

func (s *scanner) literal(lit string) error {
	for i := 0; i < len(lit); i++ {
		c, err := s.readByte()
		if err != nil {
			return s.ioError(err)
		}
		if c != lit[i] {
			return s.errorf("want %q, got %s", lit, describe(c))
		}
	}
	return nil
}

// boolean reads true or false (null reads as false).
func (s *scanner) boolean() (bool, error) {
	c, err := s.peek()
	if err != nil {
		return false, s.ioError(err)
	}
	switch c {
	case 't':
		return true, s.literal("true")
	case 'f':
		return false, s.literal("false")
	case 'n':
		return false, s.literal("null")
	}
	return false, s.errorf("want true or false, got %s", describe(c))
}

func isNumberByte(c byte) bool {
	return c >= '0' && c <= '9' || c == '-' || c == '+' || c == '.' || c >= 'a' && c <= 'z' || c >= 'A' && c <= 'Z'
}

// numberBytes reads the bytes of a number; they are valid until the next
// read.
func (s *scanner) numberBytes() ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return nil, s.ioError(err)
	}
	if c != '-' && (c < '0' || c > '9') && c != 'N' && c != 'I' {
		return nil, s.errorf("want a number, got %s", describe(c))
	}
	start := s.i
	j := s.i
	for {
		for j < s.n && numberByte[s.b[j]] {
			j++
		}
		if j-start > 64 {
			return nil, s.errorf("number longer than 64 characters")
		}
		if j < s.n {
			break
		}
		old := s.i
		more := s.fill(start)
		j -= old - s.i // the bytes moved to the front
		start = s.i
		if !more {
			if s.rerr != io.EOF {
				return nil, s.ioError(s.rerr)
			}
			break
		}
	}
	b := s.b[start:j]
	s.i = j
	return b, nil
}

// number reads a number (NaN and ±Infinity included).
func (s *scanner) number() (float64, error) {
	b, err := s.numberBytes()
	if err != nil {
		return 0, err
	}
	switch string(b) {
	case "NaN":
		return math.NaN(), nil
	case "Infinity":
		return math.Inf(1), nil
	case "-Infinity":
		return math.Inf(-1), nil
	}
	// a plain decimal that one exact operation converts (zero aside, for
	// the sign of -0) is what strconv would return
	if d, ok := parseDecimal(b); ok && d.mant != 0 {
		if v, exact := d.float(); exact {
			return v, nil
		}
	}
	v, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	if err != nil {
		return 0, s.errorf("bad number %q", b)
	}
	return v, nil
}

// finite reads a finite number; null reads as ok=false.
func (s *scanner) finite() (v float64, ok bool, err error) {
	if isNull, err := s.null(); isNull || err != nil {
		return 0, false, err
	}
	v, err = s.number()
	if err != nil {
		return 0, false, err
	}
	if math.IsNaN(v) || math.IsInf(v, 0) {
		return 0, false, s.errorf("want a finite number, got %v", v)
	}
	return v, true, nil
}

// integer reads an integer number exactly (null reads as ok=false).
func (s *scanner) integer() (v int64, ok bool, err error) {
	if isNull, err := s.null(); isNull || err != nil {
		return 0, false, err
	}
	b, err := s.numberBytes()
	if err != nil {
		return 0, false, err
	}
	if n, ok := digitsInt(b); ok {
		return n, true, nil
	}
	str := unsafe.String(unsafe.SliceData(b), len(b))
	if n, err := strconv.ParseInt(str, 10, 64); err == nil {
		return n, true, nil
	}
	f, err := strconv.ParseFloat(str, 64)
	if err != nil || f != math.Trunc(f) || math.Abs(f) > 1<<62 {
		return 0, false, s.errorf("want an integer, got %q", b)
	}
	return int64(f), true, nil
}

// digitsInt reads b when it is an optional '-' and 1 to 19 digits that
// fit an int64 (strconv.ParseInt takes the rest).
func digitsInt(b []byte) (int64, bool) {
	neg := len(b) > 0 && b[0] == '-'
	if neg {
		b = b[1:]
	}
	if len(b) == 0 || len(b) > 19 {
		return 0, false
	}
	var u uint64 // below 10^19: no overflow
	for _, c := range b {
		if c-'0' > 9 {
			return 0, false
		}
		u = u*10 + uint64(c-'0')
	}
	switch {
	case neg && u <= 1<<63:
		return -int64(u), true
	case !neg && u <= math.MaxInt64:
		return int64(u), true
	}
	return 0, false
}

// str reads a string. null reads as "".
func (s *scanner) str() (string, error) {
	b, err := s.strBytes()
	return string(b), err
}

// strBytes reads a string into a buffer that is valid until the next
// read. null reads as "".
func (s *scanner) strBytes() ([]byte, error) {
	c, err := s.peek()
	if err != nil {
		return nil, s.ioError(err)
	}
	if c == 'n' {
		return nil, s.literal("null")
	}
	if c != '"' {
		return nil, s.errorf("want a string, got %s", describe(c))
	}
	if b, ok := s.plainString(); ok {
		return b, nil
	}
	start := s.i // the opening quote
	j := s.i + 1
	for {
		for j < s.n {
			for j+8 <= s.n { // to the next quote or control byte
				m := stringStops8(binary.LittleEndian.Uint64(s.b[j:]))
				if m != 0 {
					j += bits.TrailingZeros64(m) >> 3
					break
				}
				j += 8
			}
			for j < s.n && s.b[j] != '"' && s.b[j] >= 0x20 {
				j++
			}
			if j >= s.n {
				break
			}
			// an odd run of backslashes before it escapes it
			bs := 0
			for j-1-bs > start && s.b[j-1-bs] == '\\' {
				bs++
			}
			if bs%2 == 1 {
				j++
				continue
			}
			if s.b[j] == '"' {
				break
			}
			return nil, s.errorf("control character in a string (a JSON string cannot span lines)")
		}
		if j < s.n {
			break
		}
		if j-start >= MaxTextBytes { // before the buffer grows past it
			return nil, s.errorf("a string longer than %d bytes; want at most that in one field", MaxTextBytes)
		}
		old := s.i
		if !s.fill(start) {
			return nil, s.ioError(s.endErr())
		}
		j -= old - s.i
		start = s.i
	}
	raw := s.b[start : j+1]
	s.i = j + 1
	if bytes.IndexByte(raw, '\\') < 0 {
		return raw[1 : len(raw)-1], nil
	}
	out, ok := unescape(s.tmp[:0], raw[1:len(raw)-1])
	if !ok {
		return nil, s.errorf("bad escape in a string")
	}
	s.tmp = out
	return out, nil
}

// stringStop returns the index of the first quote, backslash or control
// byte of the buffer at or after j, or s.n if there is none: eight bytes
// at a time, then one at a time for the last few.
func (s *scanner) stringStop(j int) int {
	for ; j+8 <= s.n; j += 8 {
		w := binary.LittleEndian.Uint64(s.b[j:])
		if m := stringStops8(w) | backslashes8(w); m != 0 {
			return j + bits.TrailingZeros64(m)>>3
		}
	}
	for j < s.n && s.b[j] != '"' && s.b[j] != '\\' && s.b[j] >= 0x20 {
		j++
	}
	return j
}

// skipString consumes a string without keeping it: however long the
// string, the buffer does not grow (strBytes holds a whole string).
func (s *scanner) skipString() error {
	if err := s.expect('"', "a string"); err != nil {
		return err
	}
	escaped := false
	for {
		j := s.i
		for j < s.n {
			if escaped {
				escaped = false
				j++
				continue
			}
			if j = s.stringStop(j); j == s.n {
				break
			}
			switch c := s.b[j]; {
			case c == '"':
				s.i = j + 1
				return nil
			case c == '\\':
				escaped = true
			case c < 0x20:
				s.i = j
				return s.errorf("control character in a string (a JSON string cannot span lines)")
			}
			j++
		}
		s.i = j
		if !s.fill(s.i) {
			return s.ioError(s.endErr())
		}
	}
}

// plainString is the common case of strBytes in one pass: a string in
// the buffer whose escapes are all of one byte (\" \n ...), unescaped as
// it is scanned. ok is false for anything else (a \u escape, a control
// character, the buffer's end), and strBytes starts over with its
// general way; nothing is consumed then.
func (s *scanner) plainString() ([]byte, bool) {
	j := s.i + 1
	run := j // the bytes not yet copied to out
	out, escaped := s.tmp[:0], false
	for {
		j = s.stringStop(j)
		if j+1 >= s.n { // the end of the buffer (or of a string at its end)
			return nil, false
		}
		switch s.b[j] {
		case '"':
			body := s.b[run:j]
			s.i = j + 1
			if !escaped {
				return body, true
			}
			s.tmp = append(out, body...)
			return s.tmp, true
		case '\\':
			var c byte
			switch e := s.b[j+1]; e {
			case '"', '\\', '/':
				c = e
			case 'b':
				c = '\b'
			case 'f':
				c = '\f'
			case 'n':
				c = '\n'
			case 'r':
				c = '\r'
			case 't':
				c = '\t'
			default:
				return nil, false
			}
			out = append(append(out, s.b[run:j]...), c)
			escaped = true
			j += 2
			run = j
		default: // a control character
			return nil, false
		}
	}
}

// stringStops8 finds the bytes strBytes stops at (a quote, a control
// character) among the eight bytes of w, the first in the low byte: it
// returns 0 when there are none, else a mask whose lowest set bit is the
// high bit of the first of them (the bits above it may be wrong: a borrow
// runs upwards).
func stringStops8(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	q := w ^ ('"' * ones)
	return ((q-ones)&^q | (w-0x20*ones)&^w) & highs
}

// backslashes8 returns 0 when none of the eight bytes of w is a
// backslash, else a mask whose lowest set bit is the high bit of the
// first that is.
func backslashes8(w uint64) uint64 {
	const ones, highs = 0x0101010101010101, 0x8080808080808080
	e := w ^ ('\\' * ones)
	return (e - ones) &^ e & highs
}

// unescape appends the JSON string body b, escapes resolved, to dst.
func unescape(dst, b []byte) ([]byte, bool) {
	for i := 0; i < len(b); i++ {
		if b[i] != '\\' { // copy the run up to the next escape
			k := i
			for ; k+8 <= len(b); k += 8 {
				if m := backslashes8(binary.LittleEndian.Uint64(b[k:])); m != 0 {
					k += bits.TrailingZeros64(m) >> 3
					break
				}
			}
			for k < len(b) && b[k] != '\\' {
				k++
			}
			dst = append(dst, b[i:k]...)
			if k == len(b) {
				return dst, true
			}
			i = k
		}
		i++
		if i >= len(b) {
			return dst, false
		}
		switch b[i] {
		case '"', '\\', '/':
			dst = append(dst, b[i])
		case 'b':
			dst = append(dst, '\b')
		case 'f':
			dst = append(dst, '\f')
		case 'n':
			dst = append(dst, '\n')
		case 'r':
			dst = append(dst, '\r')
		case 't':
			dst = append(dst, '\t')
		case 'u':
			r, ok := hex4(b[i+1:])
			if !ok {
				return dst, false
			}
			i += 4
			if utf16.IsSurrogate(r) {
				r2, ok := rune(0), false
				if i+6 < len(b) && b[i+1] == '\\' && b[i+2] == 'u' {
					r2, ok = hex4(b[i+3:])
				}
				if r = utf16.DecodeRune(r, r2); ok && r != utf8.RuneError {
					i += 6
				}
			}
			dst = utf8.AppendRune(dst, r)
		default:
			return dst, false
		}
	}
	return dst, true
}

func hex4(b []byte) (rune, bool) {
	if len(b) < 4 {
		return 0, false
	}
	var r rune
	for _, c := range b[:4] {
		switch {
		case c >= '0' && c <= '9':
			c -= '0'
		case c >= 'a' && c <= 'f':
			c -= 'a' - 10
		case c >= 'A' && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// intern returns b as a string, without allocating for the object keys
// seen before (a file repeats the same few hundred).
func (s *scanner) intern(b []byte) string {
	slot := keySlot(b)
	if k := s.recent[slot]; k == string(b) {
		return k
	}
	if k, ok := s.keys[string(b)]; ok {
		s.recent[slot] = k
		return k
	}
	k := string(b)
	s.recent[slot] = k
	if s.keys == nil {
		s.keys = map[string]string{}
	}
	if len(s.keys) < 512 {
		s.keys[k] = k
	}
	return k
}

// keySlot hashes an object key to its slot in scanner.recent: the first
// and last eight bytes (or all of a shorter key) and the length, mixed.
func keySlot(b []byte) int {
	var h uint64
	if len(b) >= 8 {
		h = binary.LittleEndian.Uint64(b) ^ binary.LittleEndian.Uint64(b[len(b)-8:])<<1
	} else {
		for _, c := range b {
			h = h<<8 | uint64(c)
		}
	}
	h = (h ^ uint64(len(b))) * 0x9E3779B97F4A7C15
	h ^= h >> 31
	h *= 0xBF58476D1CE4E5B9
	return int(h >> 57) // 0 to 127
}

// object reads an object, calling fn for each key; fn must consume the
// value. null reads as an empty object.
func (s *scanner) object(fn func(key string) error) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
	}
	if err := s.expect('{', "an object"); err != nil {
		return err
	}
	c, err := s.peek()
	if err != nil {
		return s.ioError(err)
	}
	if c == '}' {
		s.readByte()
		return nil
	}
	for {
		kb, err := s.strBytes()
		if err != nil {
			return err
		}
		key := s.intern(kb)
		if err := s.expect(':', "':' after an object key"); err != nil {
			return err
		}
		if err := fn(key); err != nil {
			return err
		}
		if s.i < s.n && s.b[s.i] == ',' { // the common case
			s.i++
			continue
		}
		c, err := s.next()
		if err != nil {
			return err
		}
		if c == '}' {
			return nil
		}
		if c != ',' {
			return s.errorf("want ',' or '}' in an object, got %s", describe(c))
		}
	}
}

// keysUntil reads an object's keys, skipping values, until key (true) or
// the object's end (false); key "" skips to the end. The object's '{'
// must already be consumed; first says no key has been read yet.
func (s *scanner) keysUntil(key string, first bool) (bool, error) {
	for {
		c, err := s.peek()
		if err != nil {
			return false, s.ioError(err)
		}
		switch {
		case c == '}':
			s.readByte()
			return false, nil
		case c == ',' && !first:
			s.readByte()
		case c == '"' && first:
		default:
			return false, s.errorf("want an object key, got %s", describe(c))
		}
		first = false
		k, err := s.str()
		if err != nil {
			return false, err
		}
		if err := s.expect(':', "':' after an object key"); err != nil {
			return false, err
		}
		if key != "" && k == key {
			return true, nil
		}
		if _, err := s.skip(); err != nil {
			return false, err
		}
	}
}

// array reads an array, calling fn for each element; fn must consume it.
// null reads as an empty array.
func (s *scanner) array(fn func(i int) error) error {
	if isNull, err := s.null(); isNull || err != nil {
		return err
	}
	if err := s.expect('[', "an array"); err != nil {
		return err
	}
	for i := 0; ; i++ {
		more, err := s.more(i)
		if err != nil || !more {
			return err
		}
		if err := fn(i); err != nil {
			return err
		}
	}
}

// more is the step of an array already opened: before element i it
// consumes the ',' (for i > 0) or the closing ']' and reports whether an
// element follows.
func (s *scanner) more(i int) (bool, error) {
	if s.i < s.n { // the common cases
		switch s.b[s.i] {
		case ']':
			s.i++
			return false, nil
		case ',':
			if i > 0 {
				s.i++
				return true, nil
			}
		}
	}
	c, err := s.peek()
	if err != nil {
		return false, s.ioError(err)
	}
	if c == ']' {
		s.readByte()
		return false, nil
	}
	if i > 0 {
		if c != ',' {
			return false, s.errorf("want ',' or ']' in an array, got %s", describe(c))
		}
		s.readByte()
	}
	return true, nil
}

// numbers reads an array of finite numbers into dst[:0].
func (s *scanner) numbers(dst []float64) ([]float64, error) {
	dst = dst[:0]
	if isNull, err := s.null(); isNull || err != nil {
		return dst, err
	}
	if err := s.expect('[', "an array"); err != nil {
		return dst, err
	}
	for i := 0; ; i++ {
		// the common case: a separator and a number within the buffer
		if j, ok := s.numberAhead(i); ok && len(dst) < MaxTurnTokens {
			// float gives the same number for a decimal with its trailing
			// zeros or without (when it takes it at all); zero is +0
			if d, n, ok := parseDecimalRaw(s.b[j:s.n]); ok && j+n < s.n {
				if d.mant == 0 {
					d = decimal{}
				}
				v, exact := d.float()
				if !exact {
					b := s.b[j : j+n]
					var err error
					v, err = strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
					exact = err == nil && !math.IsInf(v, 0)
				}
				if exact {
					s.i = j + n
					dst = append(dst, v)
					continue
				}
			}
		}
		more, err := s.more(i)
		if err != nil || !more {
			return dst, err
		}
		v, ok, err := s.finite()
		if err != nil {
			return dst, err
		}
		if !ok {
			return dst, s.errorf("want a number, got null")
		}
		if len(dst) >= MaxTurnTokens {
			return dst, s.errorf("more than %d values in one request; want at most one per token", MaxTurnTokens)
		}
		dst = append(dst, v)
	}
}

// numberAhead reports whether element i of an array being read is a
// number starting at j within the buffer, past spaces and (for i > 0) one
// comma: the common case, read in place without more. It is inlined.
func (s *scanner) numberAhead(i int) (j int, ok bool) {
	comma := i == 0 // no comma before the first element
	for j = s.i; j < s.n; j++ {
		if c := s.b[j]; c == ',' && !comma {
			comma = true
		} else if c != ' ' {
			return j, comma && (isDigit(c) || c == '-')
		}
	}
	return j, false
}

func isDigit(c byte) bool { return c >= '0' && c <= '9' }

// numberByte says which bytes can be part of a number.
var numberByte = func() (t [256]bool) {
	for c := range 256 {
		t[c] = isNumberByte(byte(c))
	}
	return t
}()

// skip consumes one value of any kind; count is the number of elements
// when it is an array.
func (s *scanner) skip() (count int, err error) {
	c, err := s.peek()
	if err != nil {
		return 0, s.ioError(err)
	}
	switch c {
	case '{':
		return 0, s.object(func(string) error { _, err := s.skip(); return err })
	case '[':
		return s.skipArray()
	case '"':
		return 0, s.skipString()
	case 't':
		return 0, s.literal("true")
	case 'f':
		return 0, s.literal("false")
	case 'n':
		return 0, s.literal("null")
	}
	_, err = s.numberBytes()
	return 0, err
}

// skipArray consumes an array and counts its elements.
func (s *scanner) skipArray() (int, error) {
	return s.skipRaw()
}

// skipRaw consumes an array or object by its structure alone (brackets
// and strings), without parsing what is inside, and returns how many
// elements it has. It is the fast way past the big arrays a reader does
// not need (the values are checked when they are read): it jumps from one
// bracket or quote to the next, counting the commas between them only at
// the top level.
func (s *scanner) skipRaw() (int, error) {
	c, err := s.next()
	if err != nil {
		return 0, err
	}
	if c != '[' && c != '{' {
		return 0, s.errorf("want an array or object, got %s", describe(c))
	}
	depth, count, empty := 1, 0, true
	var next structureIndex
	next.reset()
	for {
		b := s.b[s.i:s.n]
		k := next.first(s.b, s.i, s.n)
		seg := b
		if k >= 0 {
			seg = b[:k-s.i]
		}
		if depth == 1 {
			count += bytes.Count(seg, comma)
			if empty && len(bytes.TrimLeft(seg, " \t\r\n")) > 0 {
				empty = false
			}
		}
		s.line += bytes.Count(seg, newline)
		s.i += len(seg)
		if k < 0 {
			if !s.fill(s.i) {
				return 0, s.ioError(s.endErr())
			}
			next.reset() // the bytes moved
			continue
		}
		switch s.b[s.i] {
		case '"':
			base, n := s.base, s.n
			if err := s.skipString(); err != nil {
				return 0, err
			}
			if s.base != base || s.n != n { // the string needed more input
				next.reset()
			}
			empty = false
			continue
		case '[', '{':
			depth++
			empty = false
		case ']', '}':
			depth--
			if depth == 0 {
				s.i++
				if !empty {
					count++
				}
				return count, nil
			}
		}
		s.i++
	}
}

var comma, newline = []byte{','}, []byte{'\n'}

// structureIndex remembers where the next bracket, brace and quote of a
// buffer are, so each byte is searched (with the fast bytes.IndexByte)
// once per kind, not once per element.
type structureIndex [5]int

var structureBytes = [5]byte{']', '[', '"', '{', '}'}

func (x *structureIndex) reset() {
	for k := range x {
		x[k] = -2 // not looked for yet
	}
}

// first returns the index in b of the first structural byte in b[i:n],
// or -1.
func (x *structureIndex) first(b []byte, i, n int) int {
	best := -1
	for k, c := range structureBytes {
		if x[k] == -2 || (x[k] >= 0 && x[k] < i) {
			x[k] = -1
			if j := bytes.IndexByte(b[i:n], c); j >= 0 {
				x[k] = i + j
			}
		}
		if x[k] >= 0 && (best < 0 || x[k] < best) {
			best = x[k]
		}
	}
	return best
}

// decimal is a JSON number read exactly as a decimal: mant × 10^exp, with
// the trailing zeros of mant moved into exp, so two numbers are equal
// exactly when their decimals are (Python writes the shortest decimal of
// a float, so equal decimals are equal floats).
type decimal struct {
	mant uint64
	exp  int
	neg  bool
}

// parseDecimal reads a plain JSON number of at most 19 significant
// digits; ok is false for anything else (the caller falls back to
// strconv).
func parseDecimal(b []byte) (d decimal, ok bool) {
	d, n, ok := parseDecimalPrefix(b)
	return d, ok && n == len(b)
}

// parseDecimalPrefix reads the number at the start of b and says how many
// bytes it took.
func parseDecimalPrefix(b []byte) (d decimal, n int, ok bool) {
	d, n, ok = parseDecimalRaw(b)
	if ok {
		d = d.normal()
	}
	return d, n, ok
}

// parseDecimalRaw is parseDecimalPrefix without moving the trailing zeros
// into the exponent: the same number, not always the same decimal.
func parseDecimalRaw(b []byte) (d decimal, n int, ok bool) {
	i := 0
	if i < len(b) && b[i] == '-' {
		d.neg = true
		i++
	}
	first := i
	for i < len(b) && b[i] == '0' { // leading zeros
		i++
	}
	var mant uint64
	digits := 0
	i, mant, digits, ok = readDigits(b, i, mant, digits)
	if !ok {
		return d, i, false
	}
	sawDigit := i > first
	if i < len(b) && b[i] == '.' {
		i++
		frac := i
		if mant == 0 {
			for i < len(b) && b[i] == '0' {
				i++
			}
			d.exp -= i - frac
		}
		fd := i
		i, mant, _, ok = readDigits(b, i, mant, digits)
		if !ok {
			return d, i, false
		}
		d.exp -= i - fd
		sawDigit = sawDigit || i > frac
	}
	d.mant = mant
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		if !sawDigit {
			return d, i, false
		}
		i++
		eneg := false
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			eneg = b[i] == '-'
			i++
		}
		start, e := i, 0
		for ; i < len(b) && b[i] >= '0' && b[i] <= '9'; i++ {
			if e > 10000 {
				return d, i, false
			}
			e = e*10 + int(b[i]-'0')
		}
		if i == start {
			return d, i, false
		}
		if eneg {
			e = -e
		}
		d.exp += e
	}
	if !sawDigit || (i < len(b) && numberByte[b[i]]) {
		return d, i, false
	}
	return d, i, true
}

// readDigits reads the run of digits at b[i:] onto mant, which holds
// digits significant digits already; ok is false past 19 of them.
func readDigits(b []byte, i int, mant uint64, digits int) (int, uint64, int, bool) {
	for ; i < len(b); i++ {
		c := b[i] - '0'
		if c > 9 {
			break
		}
		if digits == 19 {
			return i, mant, digits, false
		}
		mant = mant*10 + uint64(c)
		digits++
	}
	return i, mant, digits, true
}

// divPow10 returns x / 10^k for 1 <= k <= 19, dividing by constants (a
// multiplication each) rather than by a variable.
func divPow10(x uint64, k int) uint64 {
	switch k {
	case 1:
		return x / 1e1
	case 2:
		return x / 1e2
	case 3:
		return x / 1e3
	case 4:
		return x / 1e4
	case 5:
		return x / 1e5
	case 6:
		return x / 1e6
	case 7:
		return x / 1e7
	case 8:
		return x / 1e8
	case 9:
		return x / 1e9
	case 10:
		return x / 1e10
	case 11:
		return x / 1e11
	case 12:
		return x / 1e12
	case 13:
		return x / 1e13
	case 14:
		return x / 1e14
	case 15:
		return x / 1e15
	case 16:
		return x / 1e16
	case 17:
		return x / 1e17
	case 18:
		return x / 1e18
	}
	return x / 1e19
}

func (d decimal) normal() decimal {
	if d.mant == 0 {
		return decimal{}
	}
	for d.mant%10 == 0 {
		d.mant /= 10
		d.exp++
	}
	return d
}

// float64pow10 are the powers of ten a float64 holds exactly.
var float64pow10 = [...]float64{1e0, 1e1, 1e2, 1e3, 1e4, 1e5, 1e6, 1e7, 1e8, 1e9, 1e10,
	1e11, 1e12, 1e13, 1e14, 1e15, 1e16, 1e17, 1e18, 1e19, 1e20, 1e21, 1e22}

// float returns d as the nearest float64 when one multiplication or
// division of exact values gives it (mant below 2^53, |exp| <= 22): a
// single correctly rounded operation, so exactly what strconv returns.
func (d decimal) float() (float64, bool) {
	if d.mant >= 1<<53 || d.exp < -22 || d.exp > 22 {
		return 0, false
	}
	f := float64(d.mant)
	if d.exp >= 0 {
		f *= float64pow10[d.exp]
	} else {
		f /= float64pow10[-d.exp]
	}
	if d.neg {
		f = -f
	}
	return f, true
}

var pow10u64 = func() (t [20]uint64) {
	t[0] = 1
	for i := 1; i < len(t); i++ {
		t[i] = t[i-1] * 10
	}
	return t
}()

// scaled returns d × 10^shift rounded to the nearest integer (halves away
// from zero); ok is false when it does not fit an int64.
func (d decimal) scaled(shift int) (int64, bool) {
	p := d.exp + shift
	var v uint64
	switch {
	case d.mant == 0:
		return 0, true
	case p >= 0:
		if p > 19 {
			return 0, false
		}
		hi, lo := bits.Mul64(d.mant, pow10u64[p])
		if hi != 0 {
			return 0, false
		}
		v = lo
	case p < -19:
		v = 0 // below a tenth of the unit: d.mant < 10^19
	default:
		q := pow10u64[-p]
		v = divPow10(d.mant, -p)
		if rem := d.mant - v*q; rem >= q-rem {
			v++
		}
	}
	if v > math.MaxInt64 {
		return 0, false
	}
	if d.neg {
		return -int64(v), true
	}
	return int64(v), true
}

// toFloat returns the float64 nearest to d: one exact operation when
// there is one, else one exact division (the 17 digits Python writes for
// most floats), else strconv. A decimal that scaledNumber made of a float
// (exp math.MinInt32) is that float.
func (d decimal) toFloat() float64 {
	switch {
	case d.exp == math.MinInt32:
		return math.Float64frombits(d.mant)
	case d.mant == 0:
		return 0
	}
	if v, exact := d.float(); exact {
		return v
	}
	if v, ok := d.quotient(); ok {
		return v
	}
	b := strconv.AppendUint(nil, d.mant, 10)
	b = append(b, 'e')
	b = strconv.AppendInt(b, int64(d.exp), 10)
	v, _ := strconv.ParseFloat(string(b), 64)
	if d.neg {
		v = -v
	}
	return v
}

// quotient returns d = mant / 10^k (1 <= k <= 19) as the nearest float64,
// rounded once: the quotient is taken to 63 bits or more with one 128-bit
// division, and rounded to 53 bits, halves to even, the remainder deciding
// the ties it breaks. ok is false for other exponents.
func (d decimal) quotient() (float64, bool) {
	k := -d.exp
	if k < 1 || k > 19 || d.mant == 0 {
		return 0, false
	}
	den := pow10u64[k]
	// scale mant by 2^e so that the quotient lies in [2^62, 2^64)
	e := 63 + bits.LeadingZeros64(d.mant) - bits.LeadingZeros64(den)
	var hi, lo uint64
	if e < 64 {
		hi, lo = d.mant>>(64-e), d.mant<<e
	} else {
		hi = d.mant << (e - 64)
	}
	q, rem := bits.Div64(hi, lo, den)
	shift := 64 - bits.LeadingZeros64(q) - 53 // 10 or 11
	m := q >> shift
	rest, half := q&(1<<shift-1), uint64(1)<<(shift-1)
	if rest > half || rest == half && (rem != 0 || m&1 == 1) {
		m++
	}
	v := math.Ldexp(float64(m), shift-e)
	if d.neg {
		v = -v
	}
	return v, true
}

// scaledNumber reads a number as an integer count of 10^-shift units
// (shift 9: seconds to nanoseconds), exactly, and its decimal identity;
// finite numbers that parseDecimal does not take go through strconv.
func (s *scanner) scaledNumber(shift int) (int64, decimal, error) {
	b, err := s.numberBytes()
	if err != nil {
		return 0, decimal{}, err
	}
	if d, ok := parseDecimal(b); ok {
		if v, ok := d.scaled(shift); ok {
			return v, d, nil
		}
	}
	f, err := strconv.ParseFloat(unsafe.String(unsafe.SliceData(b), len(b)), 64)
	if err != nil || math.IsNaN(f) || math.IsInf(f, 0) {
		return 0, decimal{}, s.errorf("want a finite number, got %q", b)
	}
	v := math.Round(f * math.Pow10(shift))
	if math.Abs(v) > 1<<62 {
		return 0, decimal{}, s.errorf("number %q is out of range", b)
	}
	// an identity no decimal above has: the float's bits
	return int64(v), decimal{mant: math.Float64bits(f), exp: math.MinInt32}, nil
}

// scaledNumbers reads an array of numbers as scaledNumber does, into
// dst[:0] and keys[:0].
func (s *scanner) scaledNumbers(dst []int64, keys []decimal, shift int) ([]int64, []decimal, error) {
	dst, keys = dst[:0], keys[:0]
	if isNull, err := s.null(); isNull || err != nil {
		return dst, keys, err
	}
	if err := s.expect('[', "an array"); err != nil {
		return dst, keys, err
	}
	for i := 0; ; i++ {
		// the common case: a separator and a plain number in the buffer
		if j, ok := s.numberAhead(i); ok && len(dst) < MaxTurnTokens {
			if d, n, ok := parseDecimalPrefix(s.b[j:s.n]); ok && j+n < s.n {
				if v, ok := d.scaled(shift); ok {
					s.i = j + n
					dst, keys = append(dst, v), append(keys, d)
					continue
				}
			}
		}
		more, err := s.more(i)
		if err != nil || !more {
			return dst, keys, err
		}
		if isNull, err := s.null(); isNull || err != nil {
			if err == nil {
				err = s.errorf("want a number, got null")
			}
			return dst, keys, err
		}
		v, d, err := s.scaledNumber(shift)
		if err != nil {
			return dst, keys, err
		}
		if len(dst) >= MaxTurnTokens {
			return dst, keys, s.errorf("more than %d values in one request; want at most one per token", MaxTurnTokens)
		}
		dst, keys = append(dst, v), append(keys, d)
	}
}
