package p2p

import (
	"context"
	"testing"
	"time"
)

func TestRunListensUntilCancelled(t *testing.T) {
	view := newFakeView(3, 41)
	tests := []struct {
		name    string
		addr    string
		wantErr bool
	}{
		{"empty address disables", "", false},
		{"loopback until cancel", "127.0.0.1:0", false},
		{"bad address", "256.0.0.1:x", true},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			cfg := testConfig(view)
			cfg.ListenAddr = tc.addr
			s, err := New(cfg)
			if err != nil {
				t.Fatal(err)
			}
			ctx, cancel := context.WithCancel(context.Background())
			done := make(chan error, 1)
			go func() { done <- s.Run(ctx) }()
			if tc.addr == "127.0.0.1:0" {
				select {
				case err := <-done:
					t.Fatalf("Run returned before cancel: %v", err)
				default:
				}
			}
			cancel()
			select {
			case err := <-done:
				if (err != nil) != tc.wantErr {
					t.Fatalf("Run: %v, want error %v", err, tc.wantErr)
				}
			case <-time.After(ioTimeout):
				t.Fatal("Run did not return")
			}
		})
	}
}
