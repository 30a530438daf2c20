package pipeline

import (
	"context"
	"errors"
	"testing"
	"time"
)

// TestSleepUntil: a time past returns at once, a time ahead waits for it,
// and a context done ends the wait with its error.
func TestSleepUntil(t *testing.T) {
	t.Parallel()
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	if err := SleepUntil(context.Background(), timer, time.Now().Add(-time.Second)); err != nil {
		t.Errorf("past: %v", err)
	}
	until := time.Now().Add(5 * time.Millisecond)
	if err := SleepUntil(context.Background(), timer, until); err != nil || time.Now().Before(until) {
		t.Errorf("ahead: %v, woke before the time", err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	cancel()
	if err := SleepUntil(ctx, timer, time.Now().Add(time.Hour)); !errors.Is(err, context.Canceled) {
		t.Errorf("cancelled: %v", err)
	}
}
