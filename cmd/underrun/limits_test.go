package main

import (
	"os"
	"path/filepath"
	"testing"
)

// TestRefusesRatesNoOneSpeaks: the values that hung the engine in
// minPreroll, deaf to SIGINT (issue 45), are usage errors naming the flag,
// or the file and field.
func TestRefusesRatesNoOneSpeaks(t *testing.T) {
	t.Parallel()
	dir := t.TempDir()
	voice := filepath.Join(dir, "slow.yaml")
	scenario := filepath.Join(dir, "slow-scenario.yaml")
	if err := os.WriteFile(voice, []byte("format: underrun-voice\nversion: 1\nvoice:\n  wpm: 1e-10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(scenario, []byte("generator:\n  kind: constant\n  tpot: 50ms\ntts:\n  wpm: 1e-10\n"), 0o644); err != nil {
		t.Fatal(err)
	}
	checkUsage(t, []usageCase{
		{[]string{"--wpm", "1e-8"}, "--wpm: want a speaking rate from 10 to 2000 words per minute, got 1e-08"},
		{[]string{"analyze", "--wpm", "1e-8", "testdata/analyze/handcheck.jsonl"}, "--wpm"},
		{[]string{"--token-audio", "2562047h"}, "--token-audio: want how long one token is spoken, from 0 to 10s"},
		{[]string{"--voice", voice}, "slow.yaml: voice: invalid voice: wpm must be a speaking rate"},
		{[]string{"sim", scenario}, "slow-scenario.yaml: line 5: tts.wpm"},
	})
}
