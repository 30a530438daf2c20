package trace

import (
	"bytes"
	"unicode/utf8"

	"github.com/valyala/fastjson"
)

// decodeDelta decodes a chunk's data: by the fast path below when it can,
// else by ParseDelta. Both give the same Delta (FuzzDecodeDelta).
func decodeDelta(data []byte) (Delta, error) {
	var d Delta
	if fastDelta(data, &d) {
		return d, nil
	}
	return ParseDelta(data)
}

// parsers are reused by fastDelta; a fastjson.SSEParser serves one goroutine
// at a time.
var parsers fastjson.ParserPool

// fastDelta decodes the common shape of a streamed chunk with fastjson's
// reusable parser, without reflection. It gives up (false) at anything
// where fastjson and encoding/json could disagree (invalid UTF-8, control
// characters, surrogate escapes, keys that differ from the known ones only
// in case, numbers that are not plain integers, an error object), leaving
// those to ParseDelta.
func fastDelta(data []byte, d *Delta) bool {
	*d = Delta{}
	if !plainEnough(data) || fastjson.ValidateBytes(data) != nil {
		return false
	}
	p := parsers.Get()
	defer parsers.Put(p)
	v, err := p.ParseBytes(data)
	if err != nil {
		return false
	}
	o, err := v.Object()
	if err != nil {
		return false
	}
	ok, seenChoices, seenUsage := true, false, false
	o.Visit(func(key []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		switch string(key) {
		case "choices":
			// a repeated key merges in encoding/json's own way: left to it
			ok = !seenChoices && choices(v, d)
			seenChoices = true
		case "usage":
			ok = !seenUsage && usage(v, d)
			seenUsage = true
		case "error":
			ok = v.Type() == fastjson.TypeNull
		case "object":
			s, isStr := str(v)
			ok = isStr && s != nil && *s != "error"
		case "message":
			_, ok = str(v)
		default:
			ok = !foldsTo(key, "choices", "usage", "error", "object", "message")
		}
	})
	return ok
}

// plainEnough rejects input on which the two decoders may differ: invalid
// UTF-8 (encoding/json replaces it), control characters, and surrogate
// escapes (encoding/json replaces lone ones).
func plainEnough(data []byte) bool {
	for _, c := range data {
		if c < 0x20 && c != '\n' && c != '\r' {
			return false
		}
	}
	for i := 0; i+6 <= len(data); i++ {
		if data[i] != '\\' {
			continue
		}
		if data[i+1] != 'u' {
			i++ // an escaped character, perhaps a backslash
			continue
		}
		switch hi := surrogate(data[i+2 : i+6]); {
		case hi == 0:
		case hi == 1 && i+12 <= len(data) && data[i+6] == '\\' && data[i+7] == 'u' && surrogate(data[i+8:i+12]) == 2:
			i += 6
		default:
			return false
		}
	}
	return utf8.Valid(data)
}

// surrogate tells a \u escape's four hex digits apart: 1 for a high
// surrogate, 2 for a low one, 0 for neither.
func surrogate(hex []byte) int {
	if hex[0] != 'd' && hex[0] != 'D' {
		return 0
	}
	switch hex[1] {
	case '8', '9', 'a', 'b', 'A', 'B':
		return 1
	case 'c', 'd', 'e', 'f', 'C', 'D', 'E', 'F':
		return 2
	}
	return 0
}

func foldsTo(key []byte, known ...string) bool {
	for _, k := range known {
		if bytes.EqualFold(key, []byte(k)) {
			return true
		}
	}
	return false
}

// str reads a string or null (nil); ok is false for any other type.
func str(v *fastjson.Value) (*string, bool) {
	switch v.Type() {
	case fastjson.TypeNull:
		return nil, true
	case fastjson.TypeString:
		b, err := v.StringBytes()
		if err != nil {
			return nil, false
		}
		s := string(b)
		return &s, true
	}
	return nil, false
}

// integer reads a plain integer into dst (null leaves it alone).
func integer(v *fastjson.Value, dst *int) bool {
	switch v.Type() {
	case fastjson.TypeNull:
		return true
	case fastjson.TypeNumber:
	default:
		return false
	}
	raw := v.MarshalTo(nil)
	if bytes.ContainsAny(raw, ".eE") || len(raw) > 16 {
		return false
	}
	n, err := v.Int()
	if err != nil {
		return false
	}
	*dst = n
	return true
}

// members visits an object's members, giving up at a type mismatch, a key
// that differs from a known one only in case, or when member says so.
func members(v *fastjson.Value, known []string, member func(key string, v *fastjson.Value) bool) bool {
	o, err := v.Object()
	if err != nil {
		return false
	}
	ok := true
	o.Visit(func(key []byte, v *fastjson.Value) {
		if !ok {
			return
		}
		for _, k := range known {
			if string(key) == k {
				ok = member(k, v)
				return
			}
		}
		ok = !foldsTo(key, known...)
	})
	return ok
}

var (
	choiceKeys  = []string{"index", "text", "finish_reason", "delta"}
	deltaKeys   = []string{"role", "content", "reasoning_content", "reasoning", "tool_calls"}
	usageKeys   = []string{"prompt_tokens", "completion_tokens", "total_tokens", "completion_tokens_details"}
	detailsKeys = []string{"reasoning_tokens"}
)

func choices(v *fastjson.Value, d *Delta) bool {
	if v.Type() == fastjson.TypeNull {
		return true
	}
	arr, err := v.Array()
	if err != nil {
		return false
	}
	for _, c := range arr {
		if !choice(c, d) {
			return false
		}
	}
	return true
}

func choice(v *fastjson.Value, d *Delta) bool {
	if v.Type() == fastjson.TypeNull {
		// a null element is a zero choice: index 0, nothing in it
		d.HasChoice = true
		return true
	}
	index := 0
	var text, finish, content, rc, reasoning *string
	var role string
	hasDelta, tools, seenDelta := false, false, false
	ok := members(v, choiceKeys, func(key string, v *fastjson.Value) bool {
		var ok bool
		switch key {
		case "index":
			return integer(v, &index)
		case "text":
			text, ok = str(v)
			return ok
		case "finish_reason":
			finish, ok = str(v)
			return ok
		}
		// delta
		if seenDelta {
			return false
		}
		seenDelta = true
		if v.Type() == fastjson.TypeNull {
			return true
		}
		hasDelta = true
		return members(v, deltaKeys, func(key string, v *fastjson.Value) bool {
			var ok bool
			switch key {
			case "role":
				var r *string
				if r, ok = str(v); r != nil {
					role = *r
				}
			case "content":
				content, ok = str(v)
			case "reasoning_content":
				rc, ok = str(v)
			case "reasoning":
				reasoning, ok = str(v)
			case "tool_calls":
				tools, ok = v.Type() != fastjson.TypeNull, true
			}
			return ok
		})
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

func usage(v *fastjson.Value, d *Delta) bool {
	if v.Type() == fastjson.TypeNull {
		d.Usage = nil
		return true
	}
	u := &Usage{}
	d.Usage = u
	return members(v, usageKeys, func(key string, v *fastjson.Value) bool {
		switch key {
		case "prompt_tokens":
			return integer(v, &u.PromptTokens)
		case "completion_tokens":
			return integer(v, &u.CompletionTokens)
		case "total_tokens":
			return integer(v, &u.TotalTokens)
		}
		if v.Type() == fastjson.TypeNull {
			u.ReasoningTokens = 0
			return true
		}
		return members(v, detailsKeys, func(_ string, v *fastjson.Value) bool {
			return integer(v, &u.ReasoningTokens)
		})
	})
}
