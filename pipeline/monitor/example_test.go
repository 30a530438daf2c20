package monitor_test

import (
	"context"
	"encoding/json"
	"fmt"
	"net/http/httptest"
	"strings"
	"time"

	"github.com/gorilla/websocket"

	"github.com/speech-pipeline/underrun/pipeline"
	"github.com/speech-pipeline/underrun/pipeline/monitor"
)

// A voice app's side of the protocol: one websocket per session on
// /ingest, one JSON message per event of the LLM stream. A second
// websocket on /events receives what the monitor makes of it.
func Example_client() {
	srv, err := monitor.New(monitor.Options{Config: pipeline.DefaultConfig()})
	if err != nil {
		panic(err)
	}
	web := httptest.NewServer(srv) // your monitor: ws://127.0.0.1:8765
	defer web.Close()
	defer srv.Shutdown(context.Background())
	base := "ws" + strings.TrimPrefix(web.URL, "http")

	events, _, err := websocket.DefaultDialer.Dial(base+"/events", nil)
	if err != nil {
		panic(err)
	}
	defer events.Close()
	events.ReadMessage() // {"type":"hello",...}: events flow from now on
	app, _, err := websocket.DefaultDialer.Dial(base+"/ingest?session=kitchen-speaker", nil)
	if err != nil {
		panic(err)
	}
	defer app.Close()

	send := func(msg any) {
		if err := app.WriteJSON(msg); err != nil {
			panic(err)
		}
	}
	type M = map[string]any
	send(M{"type": "turn_start", "turn": "t1"}) // the LLM request is sent
	for _, tok := range []string{"Sure,", " the", " oven", " is", " preheating."} {
		time.Sleep(30 * time.Millisecond) // tokens arrive
		send(M{"type": "chunk", "turn": "t1", "text": tok, "tokens": 1})
	}
	send(M{"type": "tts", "text": "Sure,", "audio_ms": 410}) // optional: what the real TTS produced
	send(M{"type": "turn_end", "turn": "t1", "status": "ok"})

	for {
		var e struct {
			Type    string `json:"type"`
			Session string `json:"session"`
			Turn    string `json:"turn"`
			Status  string `json:"status"`
			Tokens  int    `json:"tokens"`
		}
		_, data, err := events.ReadMessage()
		if err != nil {
			panic(err)
		}
		if json.Unmarshal(data, &e) == nil && e.Type == "turn" {
			fmt.Printf("%s/%s ended %s after %d tokens\n", e.Session, e.Turn, e.Status, e.Tokens)
			return
		}
	}
	// Output: kitchen-speaker/t1 ended ok after 5 tokens
}
