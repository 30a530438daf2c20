package monitor

import (
	"testing"

	"github.com/valyala/fastjson"
)

func BenchmarkParse(b *testing.B) {
	msg := []byte(`{"type":"chunk","turn":"t12","text":" tomorrow","tokens":1,"t_ms":1234.5}`)
	var p fastjson.Parser
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := Parse(&p, msg); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkParseKnownTurn parses as a connection does: the turn named is
// the previous message's.
func BenchmarkParseKnownTurn(b *testing.B) {
	msg := []byte(`{"type":"chunk","turn":"t12","text":" tomorrow","tokens":1,"t_ms":1234.5}`)
	var p fastjson.Parser
	b.ReportAllocs()
	b.SetBytes(int64(len(msg)))
	for b.Loop() {
		if _, err := parse(&p, msg, "t12"); err != nil {
			b.Fatal(err)
		}
	}
}
