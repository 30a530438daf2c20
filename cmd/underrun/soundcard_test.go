//go:build speaker

package main

import (
	"strings"
	"testing"
)

// TestPlayWithoutSoundCard: on a machine with no sound card, replay
// --play exits 2 at once, saying so, before it replays anything (it
// printed ALSA's errors and carried on).
func TestPlayWithoutSoundCard(t *testing.T) {
	t.Parallel()
	if soundCard() == nil {
		t.Skip("this machine has a sound card")
	}
	code, out, errOut := runCLI(t, "", "replay", "--play", defaultTrace(t))
	if code != exitUsage || !strings.Contains(errOut, "no sound card") || out != "" {
		t.Errorf("exit %d, stdout %q, stderr %q; want 2 with nothing replayed", code, out, errOut)
	}
}
