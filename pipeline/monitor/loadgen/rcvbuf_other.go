//go:build !linux

package loadgen

import "net"

// growReceiveBuffer leaves c to the system's autotuning (rcvbuf_linux.go
// grows it where the process may).
func growReceiveBuffer(*net.TCPConn, int) {}
