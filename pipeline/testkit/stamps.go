package testkit

import (
	"net"
	"testing"
	"time"

	"github.com/speech-pipeline/underrun/pipeline/rxstamp"
)

// KeepStamps turns the kernel's receive stamps on for the rest of the test
// and waits until they come: the kernel enables them a moment after the
// first socket asks (a worker thread does, later on a busy machine) and
// off again when the last one closes, so one stamping socket stays open.
// Where the system has none, it returns at once.
func KeepStamps(t testing.TB) {
	t.Helper()
	if !rxstamp.Supported() {
		return
	}
	client, srv := stampedConn(t)
	buf := make([]byte, 1)
	for {
		if _, err := client.Write(buf); err != nil {
			t.Fatal(err)
		}
		if _, err := srv.Read(buf); err != nil {
			t.Fatal(err)
		}
		if _, ok := rxstamp.Stamp(srv); ok {
			return
		}
		time.Sleep(time.Millisecond)
	}
}

// stampedConn returns both ends of a loopback TCP connection whose server
// end asks for receive stamps, closed when the test ends.
func stampedConn(t testing.TB) (client, srv net.Conn) {
	t.Helper()
	plain, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	ln := rxstamp.Listener(plain)
	t.Cleanup(func() { ln.Close() })
	client, err = net.Dial("tcp", ln.Addr().String())
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { client.Close() })
	srv, err = ln.Accept()
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { srv.Close() })
	return client, srv
}
