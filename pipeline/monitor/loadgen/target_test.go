package loadgen

import (
	"context"
	"net"
	"testing"
	"time"
)

// TestDriveInProcess drives an echo server and a monitor started inside
// this process: every message is taken in (as the echo server says, and
// the monitor's own count), the monitor's drains reach the subscriber, and
// Drive stops each target.
func TestDriveInProcess(t *testing.T) {
	t.Parallel()
	for _, echo := range []bool{true, false} {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		target, err := InProcess(echo, 5, ln)
		if err != nil {
			t.Fatal(err)
		}
		opts := Options{Sessions: 5, Rate: 50, Duration: 400 * time.Millisecond, TurnChunks: 10, StallAfter: 4, Stall: 200 * time.Millisecond}
		res, _, err := Drive(context.Background(), opts, target, echo)
		if err != nil {
			t.Fatalf("echo %v: %v", echo, err)
		}
		if res.Sent == 0 || res.Received != res.Sent || res.Lost != 0 {
			t.Errorf("echo %v: sent %d, received %d, lost %d; want all received", echo, res.Sent, res.Received, res.Lost)
		}
		if !echo && res.Drains == 0 {
			t.Errorf("the monitor raised no drain the subscriber saw")
		}
		if c, err := net.DialTimeout("tcp", ln.Addr().String(), time.Second); err == nil {
			c.Close()
			t.Errorf("echo %v: the target still listens after Drive", echo)
		}
	}
}
