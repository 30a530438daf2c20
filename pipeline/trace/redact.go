package trace

import (
	"bytes"
	"strings"
)

// redacted replaces a secret in what is logged and recorded.
const redacted = "[redacted]"

// minSecret is the shortest secret Redact replaces: a shorter one would
// blot out ordinary text, and no API key is that short.
const minSecret = 8

// Redact returns text with every secret in it (an API key a server echoed)
// replaced by "[redacted]".
func Redact(text string, secrets ...string) string {
	for _, sec := range secrets {
		if len(sec) >= minSecret {
			text = strings.ReplaceAll(text, sec, redacted)
		}
	}
	return text
}

// redactBytes is Redact for bytes, returning b itself when no secret is
// in it.
func redactBytes(b []byte, secrets []string) []byte {
	for _, sec := range secrets {
		if len(sec) >= minSecret && bytes.Contains(b, []byte(sec)) {
			b = bytes.ReplaceAll(b, []byte(sec), []byte(redacted))
		}
	}
	return b
}

// redactor redacts secrets from a body read by read, where one read may
// end inside a secret that the next completes: the end of a read that
// could begin a secret (at most its length less one byte) is held back
// and goes out with the next read, or with the rest at the end.
type redactor struct {
	secrets []string
	raw     [][]byte // the secrets, as bytes
	held    []byte
}

// newRedactor returns a redactor of the secrets long enough to redact
// (nil when there are none: nothing to hold back).
func newRedactor(secrets []string) *redactor {
	r := &redactor{}
	for _, sec := range secrets {
		if len(sec) >= minSecret {
			r.secrets, r.raw = append(r.secrets, sec), append(r.raw, []byte(sec))
		}
	}
	if len(r.secrets) == 0 {
		return nil
	}
	return r
}

// next returns what of the body read so far, b last, can go out redacted:
// all of it but an end that could begin a secret. The result may be b
// itself, and is valid until the next call.
func (r *redactor) next(b []byte) []byte {
	data := b
	if len(r.held) > 0 {
		data = append(r.held, b...)
	}
	data = redactBytes(data, r.secrets)
	keep := secretStart(data, r.raw)
	// held is copied out of data, which may be the caller's b or held
	// itself
	r.held = append(r.held[:0:0], data[len(data)-keep:]...)
	return data[:len(data)-keep]
}

// rest returns the end held back: the body is over, so it is no secret.
func (r *redactor) rest() []byte {
	h := r.held
	r.held = nil
	return h
}

// secretStart is the length of the longest end of data that begins one of
// the secrets but is not all of it.
func secretStart(data []byte, secrets [][]byte) int {
	longest := 0
	for _, sec := range secrets {
		// the ends shorter than sec and longer than the longest yet, from
		// the longest: the first that begins sec is the longest
		for i := max(0, len(data)-len(sec)+1); len(data)-i > longest; i++ {
			j := bytes.IndexByte(data[i:], sec[0])
			if j < 0 {
				break
			}
			if i += j; len(data)-i > longest && bytes.HasPrefix(sec, data[i:]) {
				longest = len(data) - i
				break
			}
		}
	}
	return longest
}
