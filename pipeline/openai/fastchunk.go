package openai

import (
	"bytes"
	"strconv"
	"unicode/utf16"
	"unicode/utf8"
)

// decodeDelta decodes a chunk's data: by the fast scanner below when it
// can, else by ParseDelta. Both give the same Delta (FuzzDecodeDelta).
func decodeDelta(data []byte) (Delta, error) {
	var d Delta
	if fastDelta(data, &d) {
		return d, nil
	}
	return ParseDelta(data)
}

// fastDelta decodes the common shape of a streamed chunk without
// reflection or allocations beyond the strings it returns. It gives up
// (false) at anything unusual (an error object, escapes it does not know,
// keys that differ from the known ones only in case, numbers that are not
// plain integers, text that is not UTF-8), leaving those to ParseDelta.
func fastDelta(data []byte, d *Delta) bool {
	s := scanner{b: data}
	*d = Delta{}
	// a repeated key merges in encoding/json's own way: left to it
	var seenChoices, seenUsage bool
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "choices":
			if seenChoices {
				return false
			}
			seenChoices = true
			return s.nullOr('[', func() bool { return s.array(func() bool { return s.choice(d) }) })
		case "usage":
			if seenUsage {
				return false
			}
			seenUsage = true
			if s.null() {
				d.Usage = nil
				return true
			}
			u := &Usage{}
			d.Usage = u
			return s.object(func(key []byte) bool { return s.usage(key, u) })
		case "error":
			return s.null()
		case "object":
			str, ok := s.str()
			return ok && str != "error"
		case "message":
			if s.null() {
				return true
			}
			_, ok := s.str()
			return ok
		}
		if s.foldsToKnown(key, "choices", "usage", "error", "object", "message") {
			return false
		}
		return s.skip()
	})
	if !ok {
		return false
	}
	s.ws()
	return s.i == len(s.b)
}

// scanner walks a JSON document.
type scanner struct {
	b []byte
	i int
}

func (s *scanner) ws() {
	for s.i < len(s.b) {
		switch s.b[s.i] {
		case ' ', '\t', '\n', '\r':
			s.i++
		default:
			return
		}
	}
}

func (s *scanner) peek() byte {
	s.ws()
	if s.i < len(s.b) {
		return s.b[s.i]
	}
	return 0
}

func (s *scanner) lit(word string) bool {
	s.ws()
	if bytes.HasPrefix(s.b[s.i:], []byte(word)) {
		s.i += len(word)
		return true
	}
	return false
}

// null consumes a null if one is next.
func (s *scanner) null() bool {
	if s.peek() == 'n' {
		return s.lit("null")
	}
	return false
}

// nullOr consumes a null, or a value starting with open via f.
func (s *scanner) nullOr(open byte, f func() bool) bool {
	switch s.peek() {
	case 'n':
		return s.lit("null")
	case open:
		return f()
	}
	return false
}

func (s *scanner) foldsToKnown(key []byte, known ...string) bool {
	for _, k := range known {
		if bytes.EqualFold(key, []byte(k)) {
			return true
		}
	}
	return false
}

// object walks an object, calling member with each key; member consumes
// the value.
func (s *scanner) object(member func(key []byte) bool) bool {
	if s.peek() != '{' {
		return false
	}
	s.i++
	if s.peek() == '}' {
		s.i++
		return true
	}
	for {
		key, ok := s.rawKey()
		if !ok || s.peek() != ':' {
			return false
		}
		s.i++
		if !member(key) {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case '}':
			s.i++
			return true
		default:
			return false
		}
	}
}

func (s *scanner) array(elem func() bool) bool {
	if s.peek() != '[' {
		return false
	}
	s.i++
	if s.peek() == ']' {
		s.i++
		return true
	}
	for {
		if !elem() {
			return false
		}
		switch s.peek() {
		case ',':
			s.i++
		case ']':
			s.i++
			return true
		default:
			return false
		}
	}
}

// rawKey returns a key without escapes (false for one with escapes).
func (s *scanner) rawKey() ([]byte, bool) {
	if s.peek() != '"' {
		return nil, false
	}
	j := s.i + 1
	for j < len(s.b) {
		c := s.b[j]
		switch {
		case c == '"':
			key := s.b[s.i+1 : j]
			s.i = j + 1
			return key, true
		case c == '\\' || c < 0x20 || c >= 0x80:
			return nil, false
		}
		j++
	}
	return nil, false
}

// str decodes a string value.
func (s *scanner) str() (string, bool) {
	if s.peek() != '"' {
		return "", false
	}
	j := s.i + 1
	start := j
	for j < len(s.b) {
		c := s.b[j]
		switch {
		case c == '"':
			raw := s.b[start:j]
			if !utf8.Valid(raw) {
				return "", false
			}
			s.i = j + 1
			return string(raw), true
		case c == '\\':
			return s.escaped(start)
		case c < 0x20:
			return "", false
		}
		j++
	}
	return "", false
}

// escaped decodes a string with escapes, from its first byte at start.
func (s *scanner) escaped(start int) (string, bool) {
	out := make([]byte, 0, 64)
	j := start
	for j < len(s.b) {
		c := s.b[j]
		switch {
		case c == '"':
			if !utf8.Valid(out) {
				return "", false
			}
			s.i = j + 1
			return string(out), true
		case c < 0x20:
			return "", false
		case c != '\\':
			out = append(out, c)
			j++
			continue
		}
		if j+1 >= len(s.b) {
			return "", false
		}
		e := s.b[j+1]
		j += 2
		switch e {
		case '"', '\\', '/':
			out = append(out, e)
		case 'b':
			out = append(out, '\b')
		case 'f':
			out = append(out, '\f')
		case 'n':
			out = append(out, '\n')
		case 'r':
			out = append(out, '\r')
		case 't':
			out = append(out, '\t')
		case 'u':
			r, ok := hex4(s.b, j)
			if !ok {
				return "", false
			}
			j += 4
			if utf16.IsSurrogate(r) {
				// only a valid pair is taken; anything else is left to
				// encoding/json, which replaces it
				if j+6 > len(s.b) || s.b[j] != '\\' || s.b[j+1] != 'u' {
					return "", false
				}
				r2, ok := hex4(s.b, j+2)
				if !ok {
					return "", false
				}
				r = utf16.DecodeRune(r, r2)
				if r == utf8.RuneError {
					return "", false
				}
				j += 6
			}
			out = utf8.AppendRune(out, r)
		default:
			return "", false
		}
	}
	return "", false
}

func hex4(b []byte, i int) (rune, bool) {
	if i+4 > len(b) {
		return 0, false
	}
	n, err := strconv.ParseUint(string(b[i:i+4]), 16, 32)
	return rune(n), err == nil
}

// strOrNull decodes a string or null into *dst (nil for null).
func (s *scanner) strOrNull(dst **string) bool {
	if s.null() {
		*dst = nil
		return true
	}
	v, ok := s.str()
	if !ok {
		return false
	}
	*dst = &v
	return true
}

// integer decodes a plain integer (or null, which leaves dst alone).
func (s *scanner) integer(dst *int) bool {
	if s.null() {
		return true
	}
	j := s.i
	if j < len(s.b) && s.b[j] == '-' {
		j++
	}
	k := j
	for k < len(s.b) && s.b[k] >= '0' && s.b[k] <= '9' {
		k++
	}
	if k == j || k-j > 15 || (s.b[j] == '0' && k-j > 1) {
		return false
	}
	if k < len(s.b) && (s.b[k] == '.' || s.b[k] == 'e' || s.b[k] == 'E') {
		return false
	}
	n, err := strconv.Atoi(string(s.b[s.i:k]))
	if err != nil {
		return false
	}
	*dst = n
	s.i = k
	return true
}

// skip consumes any value, checking it is valid JSON.
func (s *scanner) skip() bool {
	switch c := s.peek(); {
	case c == '{':
		return s.object(func([]byte) bool { return s.skip() })
	case c == '[':
		return s.array(s.skip)
	case c == '"':
		_, ok := s.str()
		return ok
	case c == 't':
		return s.lit("true")
	case c == 'f':
		return s.lit("false")
	case c == 'n':
		return s.lit("null")
	case c == '-' || (c >= '0' && c <= '9'):
		return s.number()
	}
	return false
}

// number consumes a number by JSON's grammar.
func (s *scanner) number() bool {
	b, j := s.b, s.i
	if j < len(b) && b[j] == '-' {
		j++
	}
	digits := func() int {
		k := j
		for j < len(b) && b[j] >= '0' && b[j] <= '9' {
			j++
		}
		return j - k
	}
	start := j
	n := digits()
	if n == 0 || (b[start] == '0' && n > 1) {
		return false
	}
	if j < len(b) && b[j] == '.' {
		j++
		if digits() == 0 {
			return false
		}
	}
	if j < len(b) && (b[j] == 'e' || b[j] == 'E') {
		j++
		if j < len(b) && (b[j] == '+' || b[j] == '-') {
			j++
		}
		if digits() == 0 {
			return false
		}
	}
	s.i = j
	return true
}

// choice decodes one element of "choices" into d, as ParseDelta does.
func (s *scanner) choice(d *Delta) bool {
	if s.null() {
		// a null element is a zero choice: index 0, nothing in it
		d.HasChoice = true
		return true
	}
	index := 0
	var text, finish *string
	var role string
	var content, rc, reasoning *string
	hasDelta, tools, seenDelta := false, false, false
	ok := s.object(func(key []byte) bool {
		switch string(key) {
		case "index":
			return s.integer(&index)
		case "text":
			return s.strOrNull(&text)
		case "finish_reason":
			return s.strOrNull(&finish)
		case "delta":
			if seenDelta {
				return false
			}
			seenDelta = true
			if s.null() {
				return true
			}
			hasDelta = true
			return s.object(func(key []byte) bool {
				switch string(key) {
				case "role":
					if s.null() {
						return true
					}
					v, ok := s.str()
					role = v
					return ok
				case "content":
					return s.strOrNull(&content)
				case "reasoning_content":
					return s.strOrNull(&rc)
				case "reasoning":
					return s.strOrNull(&reasoning)
				case "tool_calls":
					tools = !s.null()
					return tools && s.skip() || !tools
				}
				if s.foldsToKnown(key, "role", "content", "reasoning_content", "reasoning", "tool_calls") {
					return false
				}
				return s.skip()
			})
		}
		if s.foldsToKnown(key, "index", "text", "finish_reason", "delta") {
			return false
		}
		return s.skip()
	})
	if !ok {
		return false
	}
	if index != 0 {
		d.OtherChoices++
		return true
	}
	d.HasChoice = true
	if finish != nil {
		d.FinishReason = *finish
	}
	if text != nil {
		d.Content += *text
	}
	if !hasDelta {
		return true
	}
	d.Role = role
	if content != nil {
		d.Content += *content
	}
	switch {
	case rc != nil:
		d.Reasoning += *rc
	case reasoning != nil:
		d.Reasoning += *reasoning
	}
	if tools {
		d.ToolCalls = true
	}
	return true
}

// usage decodes one member of a usage object.
func (s *scanner) usage(key []byte, u *Usage) bool {
	switch string(key) {
	case "prompt_tokens":
		return s.integer(&u.PromptTokens)
	case "completion_tokens":
		return s.integer(&u.CompletionTokens)
	case "total_tokens":
		return s.integer(&u.TotalTokens)
	case "completion_tokens_details":
		if s.null() {
			u.ReasoningTokens = 0
			return true
		}
		return s.object(func(key []byte) bool {
			if string(key) == "reasoning_tokens" {
				return s.integer(&u.ReasoningTokens)
			}
			if bytes.EqualFold(key, []byte("reasoning_tokens")) {
				return false
			}
			return s.skip()
		})
	}
	if s.foldsToKnown(key, "prompt_tokens", "completion_tokens", "total_tokens", "completion_tokens_details") {
		return false
	}
	return s.skip()
}
