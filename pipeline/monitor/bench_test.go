package monitor

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"
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

// ingestServer starts a monitor for the ingest benchmarks and connects a
// session to it, whose replies are read and dropped; both close when the
// benchmark ends.
func ingestServer(b *testing.B) (*Server, *websocket.Conn) {
	s, err := New(Options{Config: LoadConfig(), Rate: 1e9, Burst: 1 << 30})
	if err != nil {
		b.Fatal(err)
	}
	ts := httptest.NewServer(s)
	b.Cleanup(ts.Close)
	b.Cleanup(func() { s.Shutdown(context.Background()) })
	c, _, err := websocket.DefaultDialer.Dial("ws"+ts.URL[4:]+"/ingest", nil)
	if err != nil {
		b.Fatal(err)
	}
	b.Cleanup(func() { c.Close() })
	go func() {
		for {
			if _, _, err := c.ReadMessage(); err != nil {
				return
			}
		}
	}()
	return s, c
}

// BenchmarkIngest measures one session's chunks through websocket, parser,
// guard and metrics.
func BenchmarkIngest(b *testing.B) {
	s, c := ingestServer(b)
	msg := []byte(`{"type":"chunk","turn":"t1","text":" tok","tokens":1}`)
	b.ReportAllocs()
	cpu := processCPU()
	turn := 0
	for i := 0; b.Loop(); i++ {
		if i%200 == 0 {
			if i > 0 {
				c.WriteMessage(websocket.TextMessage, []byte(`{"type":"turn_end","turn":"t1"}`))
			}
			c.WriteMessage(websocket.TextMessage, []byte(`{"type":"turn_start","turn":"t1"}`))
			turn += 2
		}
		if err := c.WriteMessage(websocket.TextMessage, msg); err != nil {
			b.Fatal(err)
		}
	}
	want := int64(b.N + turn - 1)
	for s.Stats().Received < want {
		time.Sleep(100 * time.Microsecond)
	}
	// the process's CPU (the client's writes too): unlike ns/op, it does
	// not fall when a slower monitor lets messages queue and reads many
	// at a time
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N), "cpu-ns/op")
}

// BenchmarkIngestBatch measures the monitor's own work per message: each
// turn's messages (a turn_start, 198 chunks, a turn_end) go in one write,
// taken before the next turn's, so that the monitor reads them from a full
// buffer however fast it is. (In BenchmarkIngest a monitor that keeps up
// waits for each message, and each write wakes it; one that falls behind
// reads many at a time: the faster monitor can show the higher figures.)
// cpu-ns/op is the process's CPU per message, the writer's included.
func BenchmarkIngestBatch(b *testing.B) {
	s, c := ingestServer(b)
	// a client's text frame, masked (with the key 0: the payload as it is)
	frame := func(msg string) []byte {
		return append([]byte{0x81, 0x80 | byte(len(msg)), 0, 0, 0, 0}, msg...)
	}
	const turn = 200
	var batch []byte
	batch = append(batch, frame(`{"type":"turn_start","turn":"t1"}`)...)
	for range turn - 2 {
		batch = append(batch, frame(`{"type":"chunk","turn":"t1","text":" tok","tokens":1}`)...)
	}
	batch = append(batch, frame(`{"type":"turn_end","turn":"t1"}`)...)
	b.ReportAllocs()
	cpu := processCPU()
	sent := int64(0)
	for b.Loop() {
		if _, err := c.NetConn().Write(batch); err != nil {
			b.Fatal(err)
		}
		sent += turn
		for s.Stats().Received < sent {
			time.Sleep(50 * time.Microsecond)
		}
	}
	b.ReportMetric(float64(processCPU()-cpu)/float64(b.N*turn), "cpu-ns/msg")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turn), "ns/msg")
}

// BenchmarkLoad is a bounded loopback load run: 200 sessions at 25 chunks/s
// for 2 s against a bare echo server (the ceiling) and a monitor. The full
// target (2,000 sessions) is `underrun monitor load`.
func BenchmarkLoad(b *testing.B) {
	for _, target := range []string{"echo", "monitor"} {
		b.Run(target, func(b *testing.B) {
			for b.Loop() {
				opts := LoadOptions{Sessions: 200, Duration: 2 * time.Second, StallAfter: DefaultStallAfter, Stall: DefaultStall}
				var s *Server
				var ts *httptest.Server
				if target == "echo" {
					ts = httptest.NewServer(EchoHandler())
					opts.Echo = true
				} else {
					var err error
					if s, err = New(Options{Config: LoadConfig()}); err != nil {
						b.Fatal(err)
					}
					ts = httptest.NewServer(s)
					opts.Received = func() int64 { return s.Stats().Received }
				}
				opts.URL = ts.URL
				r, err := Load(context.Background(), opts)
				if s != nil {
					s.Shutdown(context.Background())
				}
				ts.Close()
				if err != nil {
					b.Fatal(err)
				}
				if r.Lost != 0 {
					b.Errorf("%d of %d messages lost", r.Lost, r.Sent)
				}
				b.ReportMetric(r.Rate, "msgs/s")
				b.ReportMetric(float64(r.Lost), "lost")
				b.ReportMetric(r.Cores*100, "cpu%")
				if r.Drains > 0 {
					b.ReportMetric(float64(r.DrainLatency.P99)/1e6, "drain-p99-ms")
				}
			}
		})
	}
}
