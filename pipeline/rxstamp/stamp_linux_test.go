//go:build linux

package rxstamp

import (
	"encoding/binary"
	"testing"
	"unsafe"

	"golang.org/x/sys/unix"
)

// cmsg builds one control message of level and type carrying data.
func cmsg(level, typ int32, data []byte) []byte {
	b := make([]byte, unix.CmsgSpace(len(data)))
	h := (*unix.Cmsghdr)(unsafe.Pointer(&b[0]))
	h.Level, h.Type = level, typ
	h.SetLen(unix.CmsgLen(len(data)))
	copy(b[unix.CmsgLen(0):], data)
	return b
}

func timespec(sec, nsec int64) []byte {
	b := make([]byte, 16)
	binary.NativeEndian.PutUint64(b[0:8], uint64(sec))
	binary.NativeEndian.PutUint64(b[8:16], uint64(nsec))
	return b
}

func TestStampOf(t *testing.T) {
	t.Parallel()
	ts := cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(1700000000, 123456789))
	other := cmsg(unix.SOL_IP, 1, []byte{1, 2, 3, 4})
	tests := []struct {
		name string
		oob  []byte
		want int64
	}{
		{"none", nil, 0},
		{"stamp", ts, 1700000000*1e9 + 123456789},
		{"after another message", append(append([]byte{}, other...), ts...), 1700000000*1e9 + 123456789},
		{"another message only", other, 0},
		{"truncated", ts[:len(ts)-9], 0},
		{"header only", ts[:unix.CmsgLen(0)], 0},
	}
	for _, tt := range tests {
		if got := stampOf(tt.oob); got != tt.want {
			t.Errorf("%s: stampOf = %d, want %d", tt.name, got, tt.want)
		}
	}
}

// FuzzStampOf: any control bytes give a stamp or 0, never a panic.
func FuzzStampOf(f *testing.F) {
	f.Add(cmsg(unix.SOL_SOCKET, unix.SCM_TIMESTAMPNS, timespec(1, 2)))
	f.Add(cmsg(unix.SOL_IP, 1, []byte{9}))
	f.Add([]byte{})
	f.Fuzz(func(t *testing.T, oob []byte) {
		stampOf(oob)
	})
}
