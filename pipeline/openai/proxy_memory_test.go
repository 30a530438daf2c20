package openai

import (
	"bufio"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"runtime"
	"strings"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/memtest"
	"github.com/speech-pipeline/underrun/pipeline/testkit"
	"github.com/speech-pipeline/underrun/pipeline/trace"
)

// TestProxyMemoryBounded streams answers of 300,000 and 600,000 chunks
// through a guarded proxy (issue 45: 1.7 KB a chunk, out of memory at 2
// million). Every byte reaches the client; the turn stops being recorded
// at the limit (262,144 tokens) and ends as an error; the chunks past the
// limit cost the proxy next to nothing (what it allocates for the second
// answer is within 16 MB of the first's); and once the turn has ended the
// proxy holds no more than an ordinary turn's memory (its guard's engine
// trimmed). Not parallel: it measures allocation; skipped under -race,
// which adds its own (20 MB for the 300,000 chunks past the limit), and
// run by .ci/run without it.
func TestProxyMemoryBounded(t *testing.T) {
	if testkit.Race {
		t.Skip("the race detector allocates beside the proxy: run without -race")
	}
	cfg := testkit.Config(t, "word", 100*time.Millisecond, 0.1)
	var allocs []uint64
	for _, n := range []int{300_000, 600_000} {
		upstream := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			w.Header().Set("Content-Type", "text/event-stream")
			bw := bufio.NewWriterSize(w, 64<<10)
			for k := range n {
				fmt.Fprintf(bw, "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\" w%d\"}}]}\n\n", k%10)
			}
			bw.WriteString(testkit.Done)
			bw.Flush()
		}))
		g, err := pipeline.NewGuard(cfg, pipeline.GuardOptions{})
		if err != nil {
			t.Fatal(err)
		}
		var got *pipeline.Turn
		proxy := proxyTo(t, upstream.URL, func(p *Proxy) {
			p.Guard = g
			p.OnTurn = func(tn *pipeline.Turn) { got = tn }
		})
		var before, after runtime.MemStats
		runtime.GC()
		runtime.ReadMemStats(&before)
		forwarded := int64(0)
		alloc := memtest.Allocated(func() {
			resp, err := http.Post(proxy.URL+"/v1/chat/completions", "application/json", strings.NewReader(`{"model":"m","stream":true}`))
			if err != nil {
				t.Fatal(err)
			}
			forwarded, _ = io.Copy(io.Discard, resp.Body)
			resp.Body.Close()
			for got == nil { // the turn ends once the proxy's handler returns
				time.Sleep(time.Millisecond)
			}
		})
		proxy.Close()
		upstream.Close()
		runtime.GC()
		runtime.ReadMemStats(&after)
		want := int64(n)*int64(len(`data: {"choices":[{"index":0,"delta":{"content":" w0"}}]}`+"\n\n")) + int64(len(testkit.Done))
		if forwarded != want {
			t.Errorf("%d chunks: the client got %d bytes, want %d", n, forwarded, want)
		}
		if len(got.Chunks) != trace.MaxTurnTokens || got.Status != pipeline.StatusError || !strings.Contains(got.Error, "refused at the limits") {
			t.Errorf("%d chunks: the turn has %d chunks, %s %q; want %d, ended at the limit", n, len(got.Chunks), got.Status, got.Error, trace.MaxTurnTokens)
		}
		held := int64(after.HeapAlloc) - int64(before.HeapAlloc) - int64(len(got.Chunks))*int64(40) // less the turn the test holds
		t.Logf("%d chunks: %.1f MB allocated (%.0f B a chunk), %.1f MB held after the turn", n, float64(alloc)/1e6, float64(alloc)/float64(n), float64(held)/1e6)
		if held > 32<<20 {
			t.Errorf("%d chunks: the proxy holds %.1f MB after the turn; want an ordinary turn's", n, float64(held)/1e6)
		}
		allocs = append(allocs, alloc)
		g.Close()
	}
	if d := int64(allocs[1]) - int64(allocs[0]); d > 16<<20 {
		t.Errorf("300,000 chunks more, past the limit, cost %.1f MB; want next to nothing", float64(d)/1e6)
	}
}
