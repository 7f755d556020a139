package peerpolicy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// handshakeBuckets is how many rate buckets a HandshakeGate keeps: network
// groups share them by their keyed hash, so memory is fixed however many
// groups connect (32 bytes each).
const handshakeBuckets = 1024

// ErrHandshakeRate is the error of a v2 handshake refused because its
// network group started more than its rate of them.
var ErrHandshakeRate = errors.New("v2 handshakes from this network group over their rate")

// HandshakeGate bounds the CPU that BIP-324 v2 handshakes take from the
// peers being served. Each handshake does two elliptic-curve steps
// (creating an ElligatorSwift key, then the ECDH with the initiator's),
// milliseconds of one core in all (docs/performance.md), before its peer
// has proved anything. The gate lets at most Slots of those steps run at once,
// server-wide, so that a flood of handshakes from any number of addresses
// takes at most that many cores and the rest serve; and each network group
// (by its keyed hash) may start Rate handshakes a second, bursts of Burst,
// so that one group cannot keep the slots to itself.
//
// Bitcoin Core does neither: a v2 handshake there is admitted as any
// inbound connection, and its CPU is paid on the one message-handler
// thread. cfindexd serves light clients, who open many short connections,
// on small machines, and answers every filter request from many goroutines;
// its peers' slots already bound connections but not the CPU a stream of
// fresh connections costs, which is what the gate bounds.
type HandshakeGate struct {
	slots chan struct{}
	now   func() time.Time

	mu      sync.Mutex
	buckets [handshakeBuckets]TokenBucket
}

// NewHandshakeGate returns a gate of slots concurrent steps and a rate per
// network group (rate a second, bursts of burst); now is the clock.
func NewHandshakeGate(slots int, rate, burst float64, now func() time.Time) *HandshakeGate {
	g := &HandshakeGate{slots: make(chan struct{}, max(slots, 1)), now: now}
	for i := range g.buckets {
		g.buckets[i] = TokenBucket{Rate: rate, Burst: max(burst, 1)}
	}
	return g
}

// Start charges one handshake to group (a keyed network-group hash): it
// returns ErrHandshakeRate when the group has used its rate.
func (g *HandshakeGate) Start(group uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	if !g.buckets[group%handshakeBuckets].Take(g.now()) {
		return ErrHandshakeRate
	}
	return nil
}

// Acquire waits for a slot until ctx ends and returns its release. Hold
// it only across CPU work, never across network I/O.
func (g *HandshakeGate) Acquire(ctx context.Context) (release func(), err error) {
	select {
	case g.slots <- struct{}{}:
		return func() { <-g.slots }, nil
	case <-ctx.Done():
		return nil, fmt.Errorf("waiting for a handshake slot: %w", context.Cause(ctx))
	}
}

// InUse returns how many slots are taken now.
func (g *HandshakeGate) InUse() int { return len(g.slots) }
