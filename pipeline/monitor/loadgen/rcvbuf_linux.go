package loadgen

import (
	"net"

	"golang.org/x/sys/unix"
)

// growReceiveBuffer asks for a receive buffer of n bytes on c where the
// process may go past the system's limit (SO_RCVBUFFORCE: root or
// CAP_NET_ADMIN); elsewhere it leaves c to the kernel's autotuning, which
// a smaller fixed buffer would turn off.
func growReceiveBuffer(c *net.TCPConn, n int) {
	raw, err := c.SyscallConn()
	if err != nil {
		return
	}
	raw.Control(func(fd uintptr) {
		unix.SetsockoptInt(int(fd), unix.SOL_SOCKET, unix.SO_RCVBUFFORCE, n)
	})
}
