package loadgen

import (
	"context"
	"fmt"
	"io"
	"net"
	"runtime"
	"sync"
	"sync/atomic"
	"time"
)

// Sink accepts connections on ln and reads and drops every byte they
// send, until ctx ends: the receiving end of WriteFloor.
func Sink(ctx context.Context, ln net.Listener) error {
	go func() {
		<-ctx.Done()
		ln.Close()
	}()
	for {
		c, err := ln.Accept()
		if err != nil {
			if ctx.Err() != nil {
				return nil
			}
			return err
		}
		go func() {
			defer c.Close()
			io.Copy(io.Discard, c)
		}()
	}
}

// floorMessage is what WriteFloor writes: about a load chunk's frame.
var floorMessage = make([]byte, 60)

// Floor is what a bare loop does on this machine, the floor under a load
// run's figures (WriteFloor).
type Floor struct {
	// Rate is the most messages per second the loop writes.
	Rate float64
	// LagP99 and LagMax are how late the loop's messages went out when it
	// kept the load's schedule: the send lag no load generator goes below
	// here, however little it does per message.
	LagP99, LagMax time.Duration
}

// WriteFloor measures the floor under a load run here: a bare loop (one
// per CPU it may use) writing a 60-byte message to each of opts.Sessions
// connections to the Sink at addr (host:port over TCP, or unix:PATH; Unix
// sockets are written outside the network poller, as a load session's
// are) in turn, one write(2) each, first as fast as it can for d, then on
// the schedule of opts (as Run keeps it, for at most 3 s). On loopback
// the kernel's work for the receiving socket is done by the writer too, so
// the rate is the floor under the cost of any load generator's message:
// none sends faster on these CPUs; and the schedule's lag is the floor
// under the load's send lag.
func WriteFloor(ctx context.Context, addr string, opts Options, d time.Duration) (Floor, error) {
	var f Floor
	loadDefaults(&opts)
	cs := make([]*loadConn, 0, opts.Sessions)
	defer func() {
		for _, c := range cs {
			c.raw.Close()
		}
	}()
	for range opts.Sessions {
		c, err := dialFloor(ctx, addr)
		if err != nil {
			return f, fmt.Errorf("write floor: %w", err)
		}
		cs = append(cs, &loadConn{raw: c})
	}
	workers := min(len(cs), senderCount(opts, runtime.GOMAXPROCS(0)))
	var wg sync.WaitGroup
	var total atomic.Int64
	var werr atomic.Pointer[error]
	start := time.Now()
	end := start.Add(d)
	for w := range workers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			var n int64
			defer func() { total.Add(n) }()
			mine := cs[w*len(cs)/workers : (w+1)*len(cs)/workers]
			for time.Now().Before(end) && ctx.Err() == nil {
				for _, c := range mine {
					if _, err := c.raw.Write(floorMessage); err != nil {
						err = fmt.Errorf("write floor: %w", err)
						werr.CompareAndSwap(nil, &err)
						return
					}
				}
				n += int64(len(mine))
			}
		}()
	}
	wg.Wait()
	if p := werr.Load(); p != nil {
		return f, *p
	}
	f.Rate = float64(total.Load()) / time.Since(start).Seconds()
	opts.Duration = min(opts.Duration, 3*time.Second)
	st, err := stream(ctx, time.Now().Add(10*time.Millisecond), opts, cs)
	if err != nil {
		return f, fmt.Errorf("write floor: %w", err)
	}
	f.LagP99, f.LagMax = st.lags.quantile(0.99), time.Duration(st.lags.maxNanos)
	return f, ctx.Err()
}
