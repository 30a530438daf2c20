package monitor

import (
	"bufio"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/gorilla/websocket"
)

// chromium returns the headless browser's path, or skips the test.
func chromium(t *testing.T) string {
	t.Helper()
	for _, name := range []string{"chromium", "chromium-browser", "google-chrome"} {
		if p, err := exec.LookPath(name); err == nil {
			return p
		}
	}
	if p := "/usr/bin/chromium"; fileExists(p) {
		return p
	}
	t.Skip("chromium is not installed (apt-get install chromium): the live page test needs a headless browser")
	return ""
}

func fileExists(p string) bool {
	_, err := os.Stat(p)
	return err == nil
}

// TestLivePageInBrowser loads the live page in headless Chromium while a
// session streams into the monitor, and checks that the page lists the
// session, marks the underrun the test caused, and shows the player dry.
func TestLivePageInBrowser(t *testing.T) {
	// not parallel: the browser is heavy, and the timing tests of the
	// package run after it, not beside it
	bin := chromium(t)
	s, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 0), SnapshotInterval: 50 * time.Millisecond})
	ev := subscribe(t, ts)
	c := ingest(t, ts, "browser-test")
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":"Hello","t_ms":0}`)
	time.Sleep(300 * time.Millisecond)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":" again","t_ms":300}`) // ends a 200 ms gap
	// (shorter when the monitor took turn_start late on a busy machine:
	// t_ms runs at most 25 ms ahead of its clock)
	gap := ev.wait(t, "underrun", nil)["duration_ms"].(float64)
	// the second token plays out and the player stays dry: a live gap
	ev.wait(t, "underrun_started", func(m map[string]any) bool { return m["at_ms"].(float64) > 350 })
	if rows := s.Sessions(); len(rows) != 1 || rows[0].State != StateUnderrun {
		t.Fatalf("table %+v", rows)
	}

	wants := []*regexp.Regexp{
		regexp.MustCompile(`<tr data-session="browser-test" data-state="underrun" class="sel">`),
		regexp.MustCompile(fmt.Sprintf(`<li data-turn="t1" data-class="interruption">turn t1: interruption %.0f ms`, gap)),
		regexp.MustCompile(`<li data-turn="t1" data-class="dry">turn t1: player dry for`),
		regexp.MustCompile(`id="chart-summary" data-turns="1" data-open="1" data-tokens="2" data-gaps="2" data-dry="1"`),
		regexp.MustCompile(`<div id="status" data-state="open">`),
	}
	dom := loadPage(t, bin, ts.URL+"/?session=browser-test")
	for _, want := range wants {
		if !want.MatchString(dom) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if t.Failed() {
		logPage(t, dom)
	}
}

// TestLivePageClosedSession: a session that has closed stays on the page:
// listed among the sessions that closed last, and, selected, its turns
// with their gaps and its events, drawn up to its close, where before the
// page said "no data for this session yet".
func TestLivePageClosedSession(t *testing.T) {
	bin := chromium(t) // not parallel, as TestLivePageInBrowser
	_, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 0), SnapshotInterval: 50 * time.Millisecond})
	ev := subscribe(t, ts)
	c := ingest(t, ts, "gone")
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":"Hello","t_ms":0}`)
	time.Sleep(300 * time.Millisecond)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":" again","t_ms":300}`)
	sendT(t, c, `{"type":"turn_end","turn":"t1"}`)
	gap := ev.wait(t, "underrun", nil)["duration_ms"].(float64)
	ev.wait(t, "turn", nil)
	c.Close()
	ev.wait(t, "session_close", nil)
	dom := loadPage(t, bin, ts.URL+"/?session=gone")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<table id="closed">`),
		regexp.MustCompile(`<tr data-session="gone" data-state="closed" class="sel"><td>gone</td><td>\d\d:\d\d:\d\d\.\d{3}</td><td class="num">1</td><td class="num">1</td><td class="num">0</td>`),
		regexp.MustCompile(fmt.Sprintf(`<li data-turn="t1" data-class="interruption">turn t1: interruption %.0f ms`, gap)),
		regexp.MustCompile(`id="chart-summary" data-turns="1" data-open="0" data-tokens="2" data-gaps="1" data-dry="0" data-closed="true">closed at \d\d:\d\d:\d\d\.\d{3}: 1 turn`),
		regexp.MustCompile(`<li data-kind="turn"[^>]*>[^<]*gone/t1 turn ok, 1 interruptions, 0 glitches</li>`),
	} {
		if !want.MatchString(dom) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(dom, "no data for this session yet") {
		t.Errorf("the page forgot the closed session")
	}
	if t.Failed() {
		logPage(t, dom)
	}
}

// TestLivePageToolCall: the page's event log shows a tool call, and the
// silence it causes as the tool's, not as an underrun.
func TestLivePageToolCall(t *testing.T) {
	bin := chromium(t) // not parallel, as TestLivePageInBrowser
	_, ts := startServer(t, Options{Config: tokenConfig(100*time.Millisecond, 0), SnapshotInterval: 50 * time.Millisecond})
	ev := subscribe(t, ts)
	c := ingest(t, ts, "tool-test")
	sendT(t, c, `{"type":"turn_start","turn":"t1"}`)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":"Checking","t_ms":0}`)
	sendT(t, c, `{"type":"tool_call","turn":"t1","name":"get_weather","t_ms":1}`)
	time.Sleep(300 * time.Millisecond)
	sendT(t, c, `{"type":"tool_result","turn":"t1","t_ms":290}`)
	sendT(t, c, `{"type":"chunk","turn":"t1","text":" sunny","t_ms":300}`)
	sendT(t, c, `{"type":"turn_end","turn":"t1"}`)
	ev.wait(t, "turn", nil)
	dom := loadPage(t, bin, ts.URL+"/?session=tool-test")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<li data-kind="tool_call"[^>]*>[^<]*tool-test/t1 tool_call get_weather at 1 ms</li>`),
		regexp.MustCompile(`<li data-kind="underrun_started"[^>]*>[^<]*after token 0 \(a tool call is running\)</li>`),
		regexp.MustCompile(`<li data-kind="tool_silence"[^>]*>[^<]*tool_silence \d+ ms while a tool ran \(no underrun\)</li>`),
		regexp.MustCompile(`<li data-kind="turn"[^>]*>[^<]*ok, 0 interruptions, 0 glitches, 1 tool-call silences \(\d+ ms\)</li>`),
	} {
		if !want.MatchString(dom) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if strings.Contains(dom, `data-kind="underrun"`) {
		t.Errorf("the page lists an underrun")
	}
	if t.Failed() {
		logPage(t, dom)
	}
}

// loadPage loads url in headless Chromium and returns the page's DOM once
// the page is live: its websocket open and four messages taken (the hello,
// the history and snapshots), so that what it shows is the server's state
// after the page connected. The page runs in real time and is watched over
// the DevTools protocol: a busy machine makes it slow, not the test wrong
// (a dump after a budget of virtual time came before the websocket had
// opened).
func loadPage(t *testing.T, bin, url string) string {
	t.Helper()
	cmd := exec.Command(bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--user-data-dir="+filepath.Join(t.TempDir(), "profile"),
		"--remote-debugging-port=0", "about:blank")
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	ownGroup(cmd)
	if err := cmd.Start(); err != nil {
		t.Fatalf("chromium: %v", err)
	}
	defer stopGroup(cmd)
	// "DevTools listening on ws://127.0.0.1:PORT/devtools/browser/ID"
	lines := bufio.NewScanner(stderr)
	port := ""
	for port == "" && lines.Scan() {
		if m := devtoolsRe.FindStringSubmatch(lines.Text()); m != nil {
			port = m[1]
		}
	}
	if port == "" {
		t.Fatal("chromium did not say where its DevTools listen")
	}
	go io.Copy(io.Discard, stderr)
	conn, _, err := websocket.DefaultDialer.Dial(devtoolsPage(t, port), nil)
	if err != nil {
		t.Fatalf("DevTools: %v", err)
	}
	defer conn.Close()
	dt := &devtools{t: t, conn: conn}
	// count the messages the page's websockets take, before its scripts run
	dt.call("Page.enable", map[string]any{})
	dt.call("Page.addScriptToEvaluateOnNewDocument", map[string]any{"source": countMessages})
	dt.call("Page.navigate", map[string]any{"url": url})
	for {
		state := dt.eval(`(document.getElementById('status') ? document.getElementById('status').dataset.state : 'loading') + ' ' + (window.__messages || 0)`)
		var messages int
		var status string
		fmt.Sscan(state, &status, &messages)
		if status == "open" && messages >= 5 {
			break
		}
		if status == "closed" { // the page's websocket was refused or dropped
			dom := dt.eval("document.documentElement.outerHTML")
			logPage(t, dom)
			t.Fatalf("the page's websocket closed (%s)", state)
		}
		time.Sleep(10 * time.Millisecond)
	}
	return dt.eval("document.documentElement.outerHTML")
}

// countMessages counts, in window.__messages, the messages every websocket
// of the page receives (before the page's own handler sees each).
const countMessages = `(() => {
  const Native = window.WebSocket;
  window.__messages = 0;
  window.WebSocket = function (url, protocols) {
    const ws = protocols === undefined ? new Native(url) : new Native(url, protocols);
    ws.addEventListener('message', () => { window.__messages++; });
    return ws;
  };
  window.WebSocket.prototype = Native.prototype;
  Object.assign(window.WebSocket, { CONNECTING: 0, OPEN: 1, CLOSING: 2, CLOSED: 3 });
})();`

// devtools is a DevTools protocol connection to one page.
type devtools struct {
	t    *testing.T
	conn *websocket.Conn
	id   int
}

// call sends a command and returns its result.
func (d *devtools) call(method string, params map[string]any) json.RawMessage {
	d.t.Helper()
	d.id++
	if err := d.conn.WriteJSON(map[string]any{"id": d.id, "method": method, "params": params}); err != nil {
		d.t.Fatalf("DevTools %s: %v", method, err)
	}
	for {
		var resp struct {
			ID     int             `json:"id"`
			Result json.RawMessage `json:"result"`
			Error  *struct {
				Message string `json:"message"`
			} `json:"error"`
		}
		if err := d.conn.ReadJSON(&resp); err != nil {
			d.t.Fatalf("DevTools %s: %v", method, err)
		}
		if resp.ID != d.id {
			continue // an event
		}
		if resp.Error != nil {
			d.t.Fatalf("DevTools %s: %s", method, resp.Error.Message)
		}
		return resp.Result
	}
}

// eval runs a JavaScript expression in the page and returns its value, a
// string.
func (d *devtools) eval(expr string) string {
	d.t.Helper()
	var r struct {
		Result struct {
			Value string `json:"value"`
		} `json:"result"`
	}
	if err := json.Unmarshal(d.call("Runtime.evaluate", map[string]any{"expression": expr, "returnByValue": true}), &r); err != nil {
		d.t.Fatalf("DevTools: %v", err)
	}
	return r.Result.Value
}

var devtoolsRe = regexp.MustCompile(`DevTools listening on ws://127\.0\.0\.1:(\d+)/`)

// devtoolsPage returns the DevTools websocket of the browser's page, once
// there is one.
func devtoolsPage(t *testing.T, port string) string {
	t.Helper()
	for {
		resp, err := http.Get("http://127.0.0.1:" + port + "/json/list")
		if err != nil {
			t.Fatalf("DevTools: %v", err)
		}
		var targets []struct {
			Type string `json:"type"`
			WS   string `json:"webSocketDebuggerUrl"`
		}
		err = json.NewDecoder(resp.Body).Decode(&targets)
		resp.Body.Close()
		if err != nil {
			t.Fatalf("DevTools targets: %v", err)
		}
		for _, tg := range targets {
			if tg.Type == "page" && tg.WS != "" {
				return tg.WS
			}
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// logPage logs the page from <body>, status line included.
func logPage(t *testing.T, dom string) {
	t.Helper()
	i := strings.Index(dom, "<body") // the status line is above <main>
	t.Logf("page:\n%s", dom[max(0, i):])
}
