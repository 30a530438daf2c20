//go:build unix

package outfile

import (
	"errors"
	"io/fs"
	"os"
	"syscall"

	"golang.org/x/sys/unix"
)

// writable reports whether the caller may write the file at path.
func writable(path string) error { return unix.Access(path, unix.W_OK) }

// links returns how many names the file has.
func links(fi fs.FileInfo) uint64 {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		return uint64(st.Nlink)
	}
	return 1
}

// chown gives f the owner and group of the file fi describes, where the
// caller may (root may; others only keep their own).
func chown(f *os.File, fi fs.FileInfo) {
	if st, ok := fi.Sys().(*syscall.Stat_t); ok {
		_ = f.Chown(int(st.Uid), int(st.Gid))
	}
}

// isPermission reports an error that another way of writing may avoid: no
// permission in the folder, a sticky folder, a file mounted in place, a
// rename across file systems.
func isPermission(err error) bool {
	return errors.Is(err, syscall.EACCES) || errors.Is(err, syscall.EPERM) ||
		errors.Is(err, syscall.EROFS) || errors.Is(err, syscall.EBUSY) || errors.Is(err, syscall.EXDEV)
}
