package loadgen

import (
	"context"
	"net/http/httptest"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

// BenchmarkLoad is a bounded loopback load run: 200 sessions at 25 chunks/s
// for 2 s against a bare echo server (the ceiling) and a monitor. The full
// target (2,000 sessions) is `underrun monitor load`.
func BenchmarkLoad(b *testing.B) {
	for _, target := range []string{"echo", "monitor"} {
		b.Run(target, func(b *testing.B) {
			for b.Loop() {
				opts := Options{Sessions: 200, Duration: 2 * time.Second, StallAfter: DefaultStallAfter, Stall: DefaultStall}
				var s *monitor.Server
				var ts *httptest.Server
				if target == "echo" {
					ts = httptest.NewServer(EchoHandler())
					opts.Echo = true
				} else {
					var err error
					if s, err = monitor.New(monitor.Options{Config: Config()}); err != nil {
						b.Fatal(err)
					}
					ts = httptest.NewServer(s)
					opts.Received = func() int64 { return s.Stats().Received }
				}
				opts.URL = ts.URL
				r, err := Run(context.Background(), opts)
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
