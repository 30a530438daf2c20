package monitor_test

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline/monitor"
	"github.com/speech-pipeline/underrun/pipeline/monitor/loadgen"
)

// ingestServer starts a monitor for the ingest benchmarks and connects a
// session to it, whose replies are read and dropped; both close when the
// benchmark ends.
func ingestServer(b *testing.B) (*monitor.Server, *websocket.Conn) {
	s, err := monitor.New(monitor.Options{Config: loadgen.Config(), Rate: 1e9, Burst: 1 << 30})
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
	cpu := loadgen.ProcessCPU()
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
	b.ReportMetric(float64(loadgen.ProcessCPU()-cpu)/float64(b.N), "cpu-ns/op")
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
	cpu := loadgen.ProcessCPU()
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
	b.ReportMetric(float64(loadgen.ProcessCPU()-cpu)/float64(b.N*turn), "cpu-ns/msg")
	b.ReportMetric(float64(b.Elapsed().Nanoseconds())/float64(b.N*turn), "ns/msg")
}
