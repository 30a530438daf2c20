package loadgen

import (
	"io"
	"net/http"
	"strconv"
	"time"

	"github.com/gorilla/websocket"
)

// echoPrefix begins an echo server's count: {"type":"echo","messages":N}.
const echoPrefix = `{"type":"echo","messages":`

// EchoHandler is a bare gorilla websocket server, the ceiling a monitor's
// ingestion is measured against: it reads every message through the
// websocket layer, as the monitor does, drops it, and when the client
// closes the session echoes how many it read ({"type":"echo","messages":N})
// before closing in turn. It does not echo each message: the monitor sends
// nothing back per message, and reading 125,000 echoes a second (5,000
// sessions) would make the load generator measure itself.
func EchoHandler() http.Handler {
	up := websocket.Upgrader{ReadBufferSize: 4096, WriteBufferSize: 4096}
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		c, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		defer c.Close()
		var read int64
		c.SetCloseHandler(func(code int, text string) error {
			c.WriteMessage(websocket.TextMessage, append(strconv.AppendInt([]byte(echoPrefix), read, 10), '}'))
			c.WriteControl(websocket.CloseMessage, websocket.FormatCloseMessage(code, ""), time.Now().Add(time.Second))
			return nil
		})
		for {
			_, m, err := c.NextReader()
			if err != nil {
				return
			}
			if _, err := io.Copy(io.Discard, m); err != nil {
				return
			}
			read++
		}
	})
}
