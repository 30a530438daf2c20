package outfile

import (
	"errors"
	"fmt"
	"io/fs"
	"net"
	"os"
	"time"
)

// ClearStaleSocket makes way for a server's Unix socket at path: it
// removes a socket there that nothing answers on (left by a server that
// died), and refuses anything else (a file that is not a socket, or a
// socket a server listens on). Nothing there is fine.
func ClearStaleSocket(path string) error {
	fi, err := os.Lstat(path)
	if errors.Is(err, fs.ErrNotExist) {
		return nil
	}
	if err != nil {
		return err
	}
	if fi.Mode()&fs.ModeSocket == 0 {
		return fmt.Errorf("%s exists and is not a socket: not replacing it", path)
	}
	if c, err := net.DialTimeout("unix", path, time.Second); err == nil {
		c.Close()
		return fmt.Errorf("%s: a server already listens there", path)
	}
	if err := os.Remove(path); err != nil && !errors.Is(err, fs.ErrNotExist) {
		return err
	}
	return nil
}

// TempDir makes a new directory of this run's own under the system's
// temporary folder, and returns it with the function that removes it and
// all it holds.
func TempDir(pattern string) (string, func(), error) {
	dir, err := os.MkdirTemp("", pattern)
	if err != nil {
		return "", nil, err
	}
	return dir, func() { os.RemoveAll(dir) }, nil
}
