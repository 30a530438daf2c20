package otlp

import (
	"bufio"
	"bytes"
	"math/rand/v2"
	"os"
	"reflect"
	"strconv"
	"testing"
	"time"

	"go.opentelemetry.io/otel/attribute"
)

// randomSpec is a span spec of random names, times and attributes of the
// four kinds underrun sets.
func randomSpec(r *rand.Rand) *spec {
	attrs := func() []attribute.KeyValue {
		var kvs []attribute.KeyValue
		for i := range r.IntN(12) {
			k := attribute.Key("k" + strconv.Itoa(i))
			switch r.IntN(4) {
			case 0:
				kvs = append(kvs, k.Bool(r.IntN(2) == 1))
			case 1:
				kvs = append(kvs, k.Int64(r.Int64()-r.Int64()))
			case 2:
				kvs = append(kvs, k.Float64(r.NormFloat64()*1e3))
			default:
				kvs = append(kvs, k.String(string(rune('a'+r.IntN(26)))+"é\x00"))
			}
		}
		return kvs
	}
	sp := &spec{name: "speech turn", call: r.IntN(2) == 1, length: time.Duration(r.Int64N(1e12)), attrs: attrs(),
		failed: r.IntN(2) == 1, errText: "boom", traceparent: "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01", tracestate: "a=1"}
	for range r.IntN(4) {
		sp.events = append(sp.events, eventSpec{name: "underrun", at: time.Duration(r.Int64N(1e10)), attrs: attrs()})
	}
	return sp
}

// TestSpillRoundTrip: what the spill keeps reads back as it was, in order.
func TestSpillRoundTrip(t *testing.T) {
	t.Parallel()
	r := rand.New(rand.NewPCG(3, 4))
	var s spill
	var want []*spec
	for range 500 {
		sp := randomSpec(r)
		want = append(want, sp)
		if err := s.add(sp); err != nil {
			t.Fatal(err)
		}
	}
	name := s.f.Name()
	var got []*spec
	if err := s.each(func(sp *spec) { got = append(got, sp) }); err != nil {
		t.Fatal(err)
	}
	if _, err := os.Stat(name); !os.IsNotExist(err) {
		t.Errorf("the spill file %s is still there (%v)", name, err)
	}
	if len(got) != len(want) {
		t.Fatalf("%d specs back, want %d", len(got), len(want))
	}
	for i := range want {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Fatalf("spec %d: got %+v, want %+v", i, got[i], want[i])
		}
	}
}

// FuzzDecodeSpec: a damaged spill file is an error, never a panic, and
// what it reads encodes back to the bytes it read.
func FuzzDecodeSpec(f *testing.F) {
	r := rand.New(rand.NewPCG(5, 6))
	for range 8 {
		f.Add(encodeSpec(nil, randomSpec(r)))
	}
	f.Add([]byte{0, 0xff, 0xff, 0xff, 0xff, 0x0f})
	f.Fuzz(func(t *testing.T, data []byte) {
		sp, err := decodeSpec(bufio.NewReader(bytes.NewReader(data)))
		if err != nil {
			return
		}
		again, err := decodeSpec(bufio.NewReader(bytes.NewReader(encodeSpec(nil, sp))))
		if err != nil || !reflect.DeepEqual(again, sp) {
			t.Fatalf("a decoded spec does not round trip: %+v, %v", again, err)
		}
	})
}
