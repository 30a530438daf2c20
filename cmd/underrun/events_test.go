package main

import (
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// TestEventsFollowOneRule: --events FILE follows the recordings' rule on
// every command (issue 45: speak, capture and analyze overwrote what was
// there): an existing non-empty file is refused, naming --force, and left
// as it was; --force replaces it.
func TestEventsFollowOneRule(t *testing.T) {
	t.Parallel()
	in := "testdata/analyze/handcheck.jsonl"
	// an address in use: a server that got past its files would fail there
	busy, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { busy.Close() })
	inUse := busy.Addr().String()
	for _, tc := range []struct {
		name   string
		args   []string
		forced bool // a run with --force completes here, replacing the file
	}{
		{"root", []string{}, true},
		{"analyze", []string{"analyze", in}, true},
		{"sim", []string{"sim", "tpot-50ms", "--turns", "1", "--monte-carlo", "1"}, true},
		{"replay", []string{"replay", "--speed", "1000", in}, true},
		{"speak", []string{"speak"}, false},
		{"capture", []string{"capture", "--url", "http://127.0.0.1:1", "--model", "m"}, false},
		{"proxy", []string{"proxy", "--url", "http://127.0.0.1:1", "--listen", inUse}, false},
		{"mock", []string{"mock", "--listen", inUse}, false},
		{"monitor", []string{"monitor", "--listen", inUse}, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			t.Parallel()
			ev := filepath.Join(t.TempDir(), "events.jsonl")
			mustWrite(t, ev, userData)
			code, _, stderr := runCLI(t, "", append(tc.args, "--events", ev)...)
			if code != exitUsage || !strings.Contains(stderr, "--events: "+ev+" already exists and is not empty") || !strings.Contains(stderr, "--force") {
				t.Errorf("exit %d, stderr %q; want %d refusing the file, naming --force", code, stderr, exitUsage)
			}
			if b, _ := os.ReadFile(ev); string(b) != userData {
				t.Errorf("the refused file now holds %q", b)
			}
			if !tc.forced {
				return
			}
			code, _, stderr = runCLI(t, "", append(tc.args, "--events", ev, "--force")...)
			b, _ := os.ReadFile(ev)
			if code == exitUsage || strings.Contains(string(b), userData) || !strings.Contains(string(b), `"event":"turn"`) {
				t.Errorf("--force: exit %d, the file holds %.200q; stderr %s", code, b, stderr)
			}
		})
	}
}
