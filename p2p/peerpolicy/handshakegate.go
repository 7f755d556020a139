package peerpolicy

import (
	"context"
	"errors"
	"fmt"
	"sync"
	"time"
)

// handshakeGroups bounds the network groups a HandshakeGate keeps a rate
// bucket for, so memory is fixed however many groups connect. Each group
// has a bucket of its own (groups never share one: a group sharing a
// flooding group's bucket would be refused for the flood); past the bound,
// buckets that have refilled are dropped first (they hold nothing a fresh
// one would not), then the one used least recently, which at worst gives
// that group a fresh burst.
const handshakeGroups = 4096

// HandshakeGateBytes bounds the heap a HandshakeGate's buckets take: a
// map entry (key, pointer, overhead) and a TokenBucket per group kept.
const HandshakeGateBytes = handshakeGroups * 128

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

	rate, burst float64

	mu     sync.Mutex
	groups map[uint64]*TokenBucket
}

// NewHandshakeGate returns a gate of slots concurrent steps and a rate per
// network group (rate a second, bursts of burst); now is the clock.
func NewHandshakeGate(slots int, rate, burst float64, now func() time.Time) *HandshakeGate {
	return &HandshakeGate{
		slots: make(chan struct{}, max(slots, 1)), now: now,
		rate: rate, burst: max(burst, 1),
		groups: make(map[uint64]*TokenBucket),
	}
}

// Start charges one handshake to group (a keyed network-group hash): it
// returns ErrHandshakeRate when the group has used its rate.
func (g *HandshakeGate) Start(group uint64) error {
	g.mu.Lock()
	defer g.mu.Unlock()
	now := g.now()
	b, ok := g.groups[group]
	if !ok {
		if len(g.groups) >= handshakeGroups {
			g.pruneLocked(now)
		}
		b = &TokenBucket{Rate: g.rate, Burst: g.burst}
		g.groups[group] = b
	}
	if !b.Take(now) {
		return ErrHandshakeRate
	}
	return nil
}

// pruneLocked makes room for a new group's bucket: it drops every bucket
// that has refilled by now, and if none has, the one used least recently.
func (g *HandshakeGate) pruneLocked(now time.Time) {
	var oldest uint64
	var oldestAt time.Time
	dropped := false
	for group, b := range g.groups {
		if b.fullAt(now) {
			delete(g.groups, group)
			dropped = true
			continue
		}
		if oldestAt.IsZero() || b.last.Before(oldestAt) {
			oldest, oldestAt = group, b.last
		}
	}
	if !dropped {
		delete(g.groups, oldest)
	}
}

// Groups returns how many network groups have a bucket now.
func (g *HandshakeGate) Groups() int {
	g.mu.Lock()
	defer g.mu.Unlock()
	return len(g.groups)
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
