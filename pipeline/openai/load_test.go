package openai

import (
	"context"
	"errors"
	"strings"
	"sync"
	"testing"
	"time"
)

func TestLoad(t *testing.T) {
	t.Parallel()
	tests := []struct {
		name     string
		load     Load
		work     time.Duration
		cancel   time.Duration
		wantN    int // exact count, or -1
		maxN     int
		maxInFly int
		wantErr  error
	}{
		{"closed loop", Load{Concurrency: 3, Requests: 10}, 2 * time.Millisecond, 0, 10, 10, 3, nil},
		{"one at a time by default", Load{Requests: 4}, time.Millisecond, 0, 4, 4, 1, nil},
		{"rate", Load{Rate: 2000, Requests: 20, Seed: 1}, time.Millisecond, 0, 20, 20, 20, nil},
		{"rate capped", Load{Rate: 5000, Concurrency: 2, Requests: 10}, 3 * time.Millisecond, 0, 10, 10, 2, nil},
		{"duration", Load{Concurrency: 2, Duration: 30 * time.Millisecond}, 5 * time.Millisecond, 0, -1, 30, 2, nil},
		{"cancelled", Load{Concurrency: 1, Requests: 1000}, 5 * time.Millisecond, 20 * time.Millisecond, -1, 20, 1, context.Canceled},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			t.Parallel()
			ctx, cancel := context.WithCancel(context.Background())
			defer cancel()
			if tt.cancel > 0 {
				time.AfterFunc(tt.cancel, cancel)
			}
			var mu sync.Mutex
			n, inFly, most := 0, 0, 0
			seen := map[int]bool{}
			err := tt.load.Run(ctx, func(ctx context.Context, i int) {
				mu.Lock()
				n++
				inFly++
				most = max(most, inFly)
				seen[i] = true
				mu.Unlock()
				select {
				case <-time.After(tt.work):
				case <-ctx.Done():
				}
				mu.Lock()
				inFly--
				mu.Unlock()
			})
			if !errors.Is(err, tt.wantErr) {
				t.Fatalf("error %v, want %v", err, tt.wantErr)
			}
			if tt.wantN >= 0 && n != tt.wantN || n > tt.maxN || n == 0 {
				t.Errorf("%d requests, want %d (at most %d)", n, tt.wantN, tt.maxN)
			}
			if most > tt.maxInFly {
				t.Errorf("%d in flight, want at most %d", most, tt.maxInFly)
			}
			if len(seen) != n {
				t.Errorf("request indices repeat: %d distinct of %d", len(seen), n)
			}
		})
	}
}

func TestLoadValidate(t *testing.T) {
	t.Parallel()
	for _, l := range []Load{{}, {Requests: -1}, {Concurrency: -1, Requests: 1}, {Rate: -1, Requests: 1}, {Duration: -1}} {
		if err := l.Validate(); !errors.Is(err, ErrLoad) {
			t.Errorf("%+v: error %v, want ErrLoad", l, err)
		}
	}
}

func TestReadPrompts(t *testing.T) {
	t.Parallel()
	in := "# a comment\nplain line\n\n{\"prompt\":\"p\"}\n{\"text\":\"t\"}\n{\"messages\":[{\"role\":\"user\",\"content\":\"m\"}]}\n"
	ps, err := ReadPrompts(strings.NewReader(in), "p.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(ps) != 4 || ps[0].Text != "plain line" || ps[1].Text != "p" || ps[2].Text != "t" || ps[3].Messages[0].Content != "m" {
		t.Errorf("prompts %+v", ps)
	}
	for in, want := range map[string]string{
		"{\"x\":1}\n":   "p.jsonl:1: JSON line without",
		"ok\n{bad\n":    "p.jsonl:2:",
		"# only a note": "no prompts",
	} {
		if _, err := ReadPrompts(strings.NewReader(in), "p.jsonl"); err == nil || !strings.Contains(err.Error(), want) {
			t.Errorf("%q: error %v, want %q", in, err, want)
		}
	}
}
