//go:build !unix

package loadgen

import (
	"context"
	"net"

	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

// loadDialer is how a load session connects to base: a paced connection
// through the network poller (loadsock_unix.go keeps Unix sockets out of
// it).
func loadDialer(base string) func(ctx context.Context, network, addr string) (net.Conn, error) {
	return pacedDialer(base)
}

// dialFloor connects WriteFloor to the Sink at addr.
func dialFloor(ctx context.Context, addr string) (net.Conn, error) {
	var d net.Dialer
	if path, ok := monitor.SocketPath(addr), monitor.IsUnix(addr); ok {
		return d.DialContext(ctx, "unix", path)
	}
	return d.DialContext(ctx, "tcp", addr)
}
