package trace

import (
	"reflect"
	"testing"
)

var deltaSamples = []string{
	`{"id":"chatcmpl-1","object":"chat.completion.chunk","created":1,"model":"m","choices":[{"index":0,"delta":{"role":"assistant","content":""},"logprobs":null,"finish_reason":null}]}`,
	`{"id":"c","object":"chat.completion.chunk","choices":[{"index":0,"delta":{"content":" Hello\n\"x\" \u00e9 \ud83d\ude00"},"logprobs":null,"finish_reason":null,"stop_reason":null}]}`,
	`{"choices":[{"index":0,"delta":{"reasoning_content":"hm","reasoning":"no"}}]}`,
	`{"choices":[{"index":0,"delta":{"reasoning":"so"}}]}`,
	`{"choices":[{"index":0,"text":"One","finish_reason":"length"}],"usage":null}`,
	`{"choices":[],"usage":{"prompt_tokens":5,"total_tokens":9,"completion_tokens":4,"completion_tokens_details":{"reasoning_tokens":1}}}`,
	`{"choices":[{"index":1,"delta":{"content":"no"}},{"index":0,"delta":{"tool_calls":[{"id":"x","function":{"arguments":"{}"}}]}}]}`,
	`{"error":{"message":"boom","type":"T"}}`,
	`{"object":"error","message":"m","code":400}`,
	`{"Choices":[{"index":0,"delta":{"content":"case"}}]}`,
	`{"choices":[{"index":0,"delta":{"content":"a"}}],"choices":[{"index":0,"delta":{"role":"r"}}]}`,
	`{"choices":[null,{"index":2.0}]}`,
	`{"choices":[{"index":0,"delta":null,"text":null}],"x":[1,-2.5e3,true,false,null,{"a":"\\"}]}`,
	`{"choices":[{"index":-0,"delta":{"content":null,"role":null}}]}  `,
	`null`,
	`{"choices":[{"index":0,"delta":{"content":"\ud800"}}]}`,
}

func TestFastDeltaMatchesParseDelta(t *testing.T) {
	t.Parallel()
	fast := 0
	for _, s := range deltaSamples {
		var d Delta
		if fastDelta([]byte(s), &d) {
			fast++
			want, err := ParseDelta([]byte(s))
			if err != nil || !reflect.DeepEqual(d, want) {
				t.Errorf("%s:\nfast %+v\nslow %+v (%v)", s, d, want, err)
			}
		}
		got, gotErr := decodeDelta([]byte(s))
		want, wantErr := ParseDelta([]byte(s))
		if (gotErr == nil) != (wantErr == nil) || !reflect.DeepEqual(got, want) {
			t.Errorf("%s: decodeDelta %+v %v, ParseDelta %+v %v", s, got, gotErr, want, wantErr)
		}
	}
	if fast < 8 {
		t.Errorf("the fast path took only %d of the common samples", fast)
	}
}

// FuzzDecodeDelta checks that whenever the fast decoder accepts a chunk,
// it decodes it exactly as encoding/json does.
func FuzzDecodeDelta(f *testing.F) {
	for _, s := range deltaSamples {
		f.Add([]byte(s))
	}
	f.Fuzz(func(t *testing.T, data []byte) {
		var d Delta
		if !fastDelta(data, &d) {
			return
		}
		want, err := ParseDelta(data)
		if err != nil {
			t.Fatalf("fast path accepted %q, encoding/json says %v", data, err)
		}
		if !reflect.DeepEqual(d, want) {
			t.Fatalf("%q:\nfast %+v\nslow %+v", data, d, want)
		}
	})
}

func BenchmarkDecodeDelta(b *testing.B) {
	data := []byte(deltaSamples[1])
	for _, bc := range []struct {
		name string
		f    func([]byte) (Delta, error)
	}{{"fast", decodeDelta}, {"encoding-json", ParseDelta}} {
		b.Run(bc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if _, err := bc.f(data); err != nil {
					b.Fatal(err)
				}
			}
		})
	}
}
