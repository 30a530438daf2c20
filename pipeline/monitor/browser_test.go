package monitor

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"
	"time"
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
	gap := ev.wait(t, "underrun", 2*time.Second, nil)["duration_ms"].(float64)
	// the second token plays out and the player stays dry: a live gap
	ev.wait(t, "underrun_started", 2*time.Second, func(m map[string]any) bool { return m["at_ms"].(float64) > 350 })
	if rows := s.Sessions(); len(rows) != 1 || rows[0].State != StateUnderrun {
		t.Fatalf("table %+v", rows)
	}

	dom := loadPage(t, bin, ts.URL+"/?session=browser-test")
	for _, want := range []*regexp.Regexp{
		regexp.MustCompile(`<tr data-session="browser-test" data-state="underrun" class="sel">`),
		regexp.MustCompile(fmt.Sprintf(`<li data-turn="t1" data-class="interruption">turn t1: interruption %.0f ms`, gap)),
		regexp.MustCompile(`<li data-turn="t1" data-class="dry">turn t1: player dry for`),
		regexp.MustCompile(`id="chart-summary" data-turns="1" data-open="1" data-tokens="2" data-gaps="2" data-dry="1"`),
		regexp.MustCompile(`<div id="status" data-state="open">`),
	} {
		if !want.MatchString(dom) {
			t.Errorf("the page lacks %s", want)
		}
	}
	if t.Failed() {
		logPage(t, dom)
	}
}

// loadPage loads url in headless Chromium and returns the page's DOM
// once its scripts have run.
func loadPage(t *testing.T, bin, url string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, bin, "--headless", "--no-sandbox", "--disable-gpu",
		"--disable-background-networking", "--disable-component-update", "--disable-sync",
		"--no-first-run", "--user-data-dir="+filepath.Join(t.TempDir(), "profile"),
		"--virtual-time-budget=3000", "--dump-dom", url)
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("chromium: %v", err)
	}
	return string(out)
}

// logPage logs the page from <body>, status line included.
func logPage(t *testing.T, dom string) {
	t.Helper()
	i := strings.Index(dom, "<body") // the status line is above <main>
	t.Logf("page:\n%s", dom[max(0, i):])
}
