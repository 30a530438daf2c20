package monitor

import (
	"errors"
	"fmt"
	"net"
	"strings"
)

// ErrExposed says a monitor would listen beyond this machine without a
// token: anyone who reaches it could feed and watch it.
var ErrExposed = errors.New("not a loopback address, and no token")

// CheckListen refuses a listen address (host:port, or unix:PATH) other
// than loopback when token is empty, with ErrExposed. A Unix socket is
// local: its file's permissions say who may connect. An address that is
// not host:port is refused with the reason.
func CheckListen(addr, token string) error {
	if IsUnix(addr) {
		return nil
	}
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		return err
	}
	if token != "" {
		return nil
	}
	if strings.EqualFold(host, "localhost") {
		return nil
	}
	if ip := net.ParseIP(host); ip != nil && ip.IsLoopback() {
		return nil
	}
	return fmt.Errorf("listen %q: %w", addr, ErrExposed)
}
