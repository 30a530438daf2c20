//go:build !unix

package outfile

import (
	"errors"
	"io/fs"
	"os"
)

// writable reports whether the caller may write the file at path.
func writable(path string) error {
	f, err := os.OpenFile(path, os.O_WRONLY, 0)
	if err != nil {
		return err
	}
	return f.Close()
}

// links returns how many names the file has (one, where the system does
// not say).
func links(fs.FileInfo) uint64 { return 1 }

// chown does nothing where files have no Unix owner.
func chown(*os.File, fs.FileInfo) {}

// isPermission reports an error that another way of writing may avoid.
func isPermission(err error) bool { return errors.Is(err, fs.ErrPermission) }
