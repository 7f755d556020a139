package peerpolicy

import (
	"context"
	"errors"
	"runtime"
	"testing"
	"time"
)

// TestHandshakeGateRatePerGroup: with the clock still, each group starts
// exactly its burst of handshakes, whatever the others do; time refills it
// at the rate.
func TestHandshakeGateRatePerGroup(t *testing.T) {
	now := time.Unix(1e9, 0)
	g := NewHandshakeGate(1, 2, 5, func() time.Time { return now })
	for _, tc := range []struct {
		name     string
		group    uint64
		tries    int
		admitted int
	}{
		{"first group takes its burst", 1, 8, 5},
		{"a second group is not affected", 2, 8, 5},
		{"first group stays refused", 1, 3, 0},
	} {
		t.Run(tc.name, func(t *testing.T) {
			admitted := 0
			for range tc.tries {
				switch err := g.Start(tc.group); {
				case err == nil:
					admitted++
				case !errors.Is(err, ErrHandshakeRate):
					t.Fatalf("Start: %v", err)
				}
			}
			if admitted != tc.admitted {
				t.Fatalf("%d of %d admitted, want %d", admitted, tc.tries, tc.admitted)
			}
		})
	}
	now = now.Add(time.Second) // two more at 2 a second
	started := 0
	for range 3 {
		if g.Start(1) == nil {
			started++
		}
	}
	if started != 2 {
		t.Fatalf("a second later the group started %d more, want 2", started)
	}
}

// TestHandshakeGateSlots: no more than the slots run at once; a waiter
// gets the slot released, and one whose context ends gets its cause.
func TestHandshakeGateSlots(t *testing.T) {
	g := NewHandshakeGate(2, 1, 1, time.Now)
	ctx := context.Background()
	r1, err1 := g.Acquire(ctx)
	r2, err2 := g.Acquire(ctx)
	if err1 != nil || err2 != nil || g.InUse() != 2 {
		t.Fatalf("two slots: %v %v, in use %d", err1, err2, g.InUse())
	}
	cause := errors.New("handshake deadline")
	ended, cancel := context.WithCancelCause(ctx)
	cancel(cause)
	if _, err := g.Acquire(ended); !errors.Is(err, cause) {
		t.Fatalf("full gate, ended context: %v, want its cause", err)
	}
	got := make(chan error, 1)
	go func() {
		r3, err := g.Acquire(ctx)
		if err == nil {
			r3()
		}
		got <- err
	}()
	r1()
	if err := <-got; err != nil {
		t.Fatalf("waiter: %v", err)
	}
	r2()
	if g.InUse() != 0 {
		t.Fatalf("%d slots in use after every release", g.InUse())
	}
}

// TestHandshakeGateGroupsNeverShare: however many groups a flood comes
// from, a group that has not used its burst is admitted (groups have
// buckets of their own, not shared by hash), and the buckets kept stay
// bounded: refilled ones go first, then the least recently used.
func TestHandshakeGateGroupsNeverShare(t *testing.T) {
	now := time.Unix(1e9, 0)
	g := NewHandshakeGate(1, 1, 2, func() time.Time { return now })
	// Exhaust the buckets of handshakeGroups groups.
	for group := range uint64(handshakeGroups) {
		for range 2 {
			if err := g.Start(group); err != nil {
				t.Fatalf("group %d refused within its burst: %v", group, err)
			}
		}
		if g.Start(group) == nil {
			t.Fatalf("group %d admitted past its burst", group)
		}
	}
	if got := g.Groups(); got != handshakeGroups {
		t.Fatalf("%d groups kept, want %d", got, handshakeGroups)
	}
	// Every other group, whatever its number, gets its own burst.
	for _, group := range []uint64{handshakeGroups, handshakeGroups + 1024, 1 << 40} {
		for range 2 {
			if err := g.Start(group); err != nil {
				t.Fatalf("fresh group %d refused: %v", group, err)
			}
		}
	}
	if got := g.Groups(); got > handshakeGroups {
		t.Fatalf("%d groups kept, over the bound %d", got, handshakeGroups)
	}
	// Once time refilled them, the buckets are dropped to make room.
	now = now.Add(10 * time.Second)
	if err := g.Start(1 << 41); err != nil {
		t.Fatalf("new group after the refill: %v", err)
	}
	if got := g.Groups(); got > 8 {
		t.Fatalf("%d groups kept after every bucket refilled, want the few in use", got)
	}
}

// TestHandshakeGateBytes holds HandshakeGateBytes to the heap a full
// gate takes.
func TestHandshakeGateBytes(t *testing.T) {
	now := time.Unix(1e9, 0)
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	g := NewHandshakeGate(1, 1, 1, func() time.Time { return now })
	for group := range uint64(handshakeGroups) {
		_ = g.Start(group)
	}
	runtime.GC()
	runtime.ReadMemStats(&after)
	if used := int64(after.HeapAlloc) - int64(before.HeapAlloc); used > HandshakeGateBytes {
		t.Fatalf("a full gate takes %d bytes of heap, over HandshakeGateBytes %d", used, HandshakeGateBytes)
	}
	runtime.KeepAlive(g)
}
