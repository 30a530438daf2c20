// Package outfile creates the files underrun writes so that nothing a user
// already had at a path is lost.
//
// Two kinds of output, two rules:
//
//   - A whole output (a converted trace, a WAV file, a plot, an event log
//     of a finished run, a voice profile) is written with [Create] to a new
//     temporary file beside the path and put in place by [File.Commit]
//     only when it is complete. On an error, [File.Abort] removes the
//     temporary file and the path is left exactly as it was.
//   - A recording that must be on disk as it goes (capture, proxy and
//     monitor recordings, a server's event log), so that a crash keeps what
//     was written, is opened in place with [OpenStream], which refuses a
//     non-empty existing file unless the caller asks to replace it.
//
// Neither ever removes or replaces what it did not create: a symbolic link
// stays a link (the file it names is written), and a device or named pipe
// (/dev/null, a FIFO) is written through, never replaced; a directory, a
// socket or a block device is refused.
package outfile

import (
	"crypto/rand"
	"encoding/hex"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
)

// ErrExists reports a non-empty file where a recording was to start.
var ErrExists = errors.New("already exists and is not empty")

// ErrNotWritable reports a path that names something underrun will not
// write over: a directory, a socket or a block device.
var ErrNotWritable = errors.New("not a file to write to")

// tempSuffix marks the name of every temporary file, so that an
// interrupted run's leftover is easy to tell: ".NAME.underrun-tmp-XXXXXXXX".
const tempSuffix = ".underrun-tmp-"

// File is a whole output being written: its writes go to a temporary file
// (or, for a device or named pipe, straight through), and the path holds
// the new content only after Commit.
type File struct {
	path   string   // the path as given
	target string   // where the content lands: path with symbolic links followed
	f      *os.File // the temporary file, or the target itself when written through
	temp   string   // the temporary file's name; "" when written through
	copyIn bool     // Commit copies the content into target instead of renaming over it
	done   bool
}

// Create starts a whole output at path. The path may name nothing yet (its
// folder must exist), a regular file the caller may write, a symbolic link
// to either, or a device or named pipe (written through). Create fails at
// once when the output could not be written, before any work is done.
func Create(path string) (*File, error) {
	if path == "" {
		return nil, errors.New("no file name given")
	}
	target, fi, err := resolve(path)
	if err != nil {
		return nil, err
	}
	out := &File{path: path, target: target}
	if fi != nil {
		switch kind(fi) {
		case kindRegular:
			if err := writable(target); err != nil {
				return nil, &fs.PathError{Op: "write", Path: path, Err: err}
			}
			// replacing the file would split it from its other names
			out.copyIn = links(fi) > 1
		case kindThrough:
			f, err := os.OpenFile(path, os.O_WRONLY, 0)
			if err != nil {
				return nil, err
			}
			out.f = f
			return out, nil
		default:
			return nil, refuse(path, fi)
		}
	} else if err := folderExists(path, target); err != nil {
		return nil, err
	}
	dir := filepath.Dir(target)
	f, err := createTemp(dir, filepath.Base(target))
	if err != nil && fi != nil && isPermission(err) {
		// a file the caller may write in a folder it may not create in:
		// stage the content elsewhere, copy it in on Commit
		f, err = createTemp(os.TempDir(), filepath.Base(target))
		out.copyIn = true
	}
	if err != nil {
		return nil, fmt.Errorf("%s: cannot create a temporary file beside it: %w", path, err)
	}
	out.f, out.temp = f, f.Name()
	if fi != nil {
		// the new content keeps the old file's permissions and owner
		if err := f.Chmod(fi.Mode().Perm()); err != nil {
			out.Abort()
			return nil, err
		}
		chown(f, fi)
	}
	return out, nil
}

// Name returns the path as given to Create.
func (f *File) Name() string { return f.path }

// Write writes to the output.
func (f *File) Write(p []byte) (int, error) { return f.f.Write(p) }

// Seek moves the write offset (a WAV encoder goes back to fill in sizes).
// A named pipe cannot seek.
func (f *File) Seek(offset int64, whence int) (int64, error) { return f.f.Seek(offset, whence) }

// Commit puts the complete output in place: the temporary file is synced
// and renamed over the path (or copied into it, where renaming would split
// hard links or the folder does not allow it). After Commit, Abort does
// nothing. On an error the path is left as it was, where it can be.
func (f *File) Commit() error {
	if f.done {
		return errors.New("outfile: commit after commit or abort")
	}
	f.done = true
	if f.temp == "" {
		return f.f.Close()
	}
	err := f.f.Sync()
	if cerr := f.f.Close(); err == nil {
		err = cerr
	}
	if err != nil {
		os.Remove(f.temp)
		return fmt.Errorf("%s: %w", f.path, err)
	}
	if !f.copyIn {
		err := os.Rename(f.temp, f.target)
		if err == nil {
			return nil
		}
		if !isPermission(err) {
			os.Remove(f.temp)
			return err
		}
		// a sticky folder (/tmp) lets the owner of a file replace it, and
		// anyone allowed to write it fill it: fill it
	}
	err = copyInto(f.target, f.temp)
	os.Remove(f.temp)
	if err != nil {
		return fmt.Errorf("%s: %w", f.path, err)
	}
	return nil
}

// Abort drops the output: the temporary file is removed and the path is
// left as it was (a device or pipe written through keeps what it was
// sent). After Commit, Abort does nothing; it may be called more than once.
func (f *File) Abort() {
	if f.done {
		return
	}
	f.done = true
	f.f.Close()
	if f.temp != "" {
		os.Remove(f.temp)
	}
}

// OpenStream opens path for a recording written as it happens, in place,
// so that whatever was written before a crash stays on disk. A new file is
// created; an empty regular file is written; a non-empty one is refused
// with ErrExists unless replace is set, when it is truncated. A symbolic
// link is followed, a device or named pipe written through; a directory,
// socket or block device is refused.
func OpenStream(path string, replace bool) (*os.File, error) {
	if path == "" {
		return nil, errors.New("no file name given")
	}
	target, fi, err := resolve(path)
	if err != nil {
		return nil, err
	}
	if fi == nil {
		if err := folderExists(path, target); err != nil {
			return nil, err
		}
		// O_EXCL: a file that appears meanwhile is not truncated
		return os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_EXCL, 0o666)
	}
	switch kind(fi) {
	case kindRegular:
		if err := nonEmpty(path, fi); err != nil && !replace {
			return nil, err
		}
		return os.OpenFile(path, os.O_WRONLY|os.O_TRUNC, 0)
	case kindThrough:
		return os.OpenFile(path, os.O_WRONLY, 0)
	}
	return nil, refuse(path, fi)
}

// NotEmpty returns an error wrapping ErrExists when path names a regular
// file (a symbolic link to one counts) that is not empty: a whole output
// that must not replace a user's file unless asked checks it before it
// starts. Anything else, a path that names nothing included, is nil.
func NotEmpty(path string) error {
	fi, err := os.Stat(path)
	if err != nil {
		return nil
	}
	return nonEmpty(path, fi)
}

// nonEmpty is NotEmpty for a file whose info is known.
func nonEmpty(path string, fi fs.FileInfo) error {
	if kind(fi) == kindRegular && fi.Size() > 0 {
		return fmt.Errorf("%s %w (%d bytes)", path, ErrExists, fi.Size())
	}
	return nil
}

// Kinds of what a path names, by what an output may do with it.
const (
	kindRegular = iota // replaced on success (Create) or refused when not empty (OpenStream)
	kindThrough        // a character device or named pipe: written through
	kindRefused        // a directory, socket, block device
)

func kind(fi fs.FileInfo) int {
	m := fi.Mode()
	switch {
	case m.IsRegular():
		return kindRegular
	case m&fs.ModeNamedPipe != 0, m&fs.ModeCharDevice != 0:
		return kindThrough
	}
	return kindRefused
}

func refuse(path string, fi fs.FileInfo) error {
	what := "a socket or device"
	switch m := fi.Mode(); {
	case m.IsDir():
		what = "a directory"
	case m&fs.ModeSocket != 0:
		what = "a socket"
	case m&fs.ModeDevice != 0:
		what = "a block device"
	}
	return fmt.Errorf("%s: %w: it is %s", path, ErrNotWritable, what)
}

// resolve follows path to what it names: the file's info (nil when nothing
// is there yet) and the name to write at, with symbolic links followed (a
// dangling link names the file it would create).
func resolve(path string) (string, fs.FileInfo, error) {
	fi, err := os.Stat(path)
	switch {
	case err == nil:
		if kind(fi) != kindRegular {
			return path, fi, nil // opened by its own name, links and all
		}
		target, err := filepath.EvalSymlinks(path)
		if err != nil {
			return "", nil, err
		}
		return target, fi, nil
	case !errors.Is(err, fs.ErrNotExist):
		return "", nil, err
	}
	target := path
	for hops := 0; ; hops++ {
		li, err := os.Lstat(target)
		if errors.Is(err, fs.ErrNotExist) {
			return target, nil, nil
		}
		if err != nil {
			return "", nil, err
		}
		if li.Mode()&fs.ModeSymlink == 0 || hops == 40 {
			return "", nil, fmt.Errorf("%s: cannot resolve its symbolic links", path)
		}
		link, err := os.Readlink(target)
		if err != nil {
			return "", nil, err
		}
		if !filepath.IsAbs(link) {
			link = filepath.Join(filepath.Dir(target), link)
		}
		target = link
	}
}

// folderExists checks that the folder a new file goes into is there.
func folderExists(path, target string) error {
	dir := filepath.Dir(target)
	st, err := os.Stat(dir)
	if err != nil {
		if errors.Is(err, fs.ErrNotExist) {
			return fmt.Errorf("%s: the folder %s does not exist: %w", path, dir, fs.ErrNotExist)
		}
		return err
	}
	if !st.IsDir() {
		return fmt.Errorf("%s: %s is not a folder", path, dir)
	}
	return nil
}

// createTemp creates a new file in dir for the content of base, with the
// permissions a new file gets (0666 less the umask).
func createTemp(dir, base string) (*os.File, error) {
	var b [8]byte
	for range 100 {
		rand.Read(b[:])
		name := filepath.Join(dir, "."+base+tempSuffix+hex.EncodeToString(b[:]))
		f, err := os.OpenFile(name, os.O_RDWR|os.O_CREATE|os.O_EXCL, 0o666)
		if !errors.Is(err, fs.ErrExist) {
			return f, err
		}
	}
	return nil, fmt.Errorf("%s: no free temporary name", dir)
}

// copyInto fills target with the content of the file named from.
func copyInto(target, from string) error {
	src, err := os.Open(from)
	if err != nil {
		return err
	}
	defer src.Close()
	dst, err := os.OpenFile(target, os.O_WRONLY|os.O_CREATE|os.O_TRUNC, 0o666)
	if err != nil {
		return err
	}
	_, err = io.Copy(dst, src)
	if serr := dst.Sync(); err == nil {
		err = serr
	}
	if cerr := dst.Close(); err == nil {
		err = cerr
	}
	return err
}
