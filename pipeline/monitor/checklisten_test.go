package monitor

import (
	"errors"
	"testing"
)

func TestCheckListen(t *testing.T) {
	t.Parallel()
	tests := []struct {
		addr, token string
		exposed     bool
		bad         bool
	}{
		{"127.0.0.1:8765", "", false, false},
		{"[::1]:0", "", false, false},
		{"localhost:8765", "", false, false},
		{"unix:/run/m.sock", "", false, false},
		{"0.0.0.0:8765", "", true, false},
		{"10.0.0.1:8765", "", true, false},
		{"0.0.0.0:8765", "secret", false, false},
		{"127.0.0.1", "", false, true}, // no port
	}
	for _, tc := range tests {
		err := CheckListen(tc.addr, tc.token)
		if got := errors.Is(err, ErrExposed); got != tc.exposed {
			t.Errorf("CheckListen(%q, %q) = %v, want exposed %v", tc.addr, tc.token, err, tc.exposed)
		}
		if got := err != nil && !errors.Is(err, ErrExposed); got != tc.bad {
			t.Errorf("CheckListen(%q, %q) = %v, want a refused address: %v", tc.addr, tc.token, err, tc.bad)
		}
	}
}
