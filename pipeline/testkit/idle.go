package testkit

import (
	"bufio"
	"fmt"
	"io"
	"net"
	"net/http"
	"testing"
)

// IdleClosed opens conns keep-alive connections to the server at addr,
// sends one GET of path with that Host on each, reads the answer, and
// fails the test unless the server then closes every connection (the
// reader's EOF). It waits for each close, not for any time.
func IdleClosed(t testing.TB, addr, path, host string, conns int) {
	t.Helper()
	closed := make(chan error, conns)
	for range conns {
		c, err := net.Dial("tcp", addr)
		if err != nil {
			t.Fatal(err)
		}
		defer c.Close()
		fmt.Fprintf(c, "GET %s HTTP/1.1\r\nHost: %s\r\n\r\n", path, host)
		go func() {
			br := bufio.NewReader(c)
			resp, err := http.ReadResponse(br, nil)
			if err != nil {
				closed <- fmt.Errorf("the answer: %w", err)
				return
			}
			io.ReadAll(resp.Body)
			resp.Body.Close()
			if _, err := br.ReadByte(); err != io.EOF { // until the server closes the idle connection
				closed <- fmt.Errorf("after the answer: %v, want the connection closed by the server (EOF)", err)
				return
			}
			closed <- nil
		}()
	}
	for range conns {
		if err := <-closed; err != nil {
			t.Fatal(err)
		}
	}
}
