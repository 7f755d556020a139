package blockproxy

import (
	"context"
	"sync"
)

// Gate bounds node fetches in progress across peers: at most max, and one
// while busy reports true (the indexer is catching up and needs the node).
// Waiters are served in arrival order. Safe for concurrent use.
type Gate struct {
	max  int
	busy func() bool

	mu       sync.Mutex
	inFlight int
	waiters  []chan struct{}
}

// NewGate returns a gate of max slots, one while busy (which may be nil)
// reports true.
func NewGate(max int, busy func() bool) *Gate { return &Gate{max: max, busy: busy} }

// limit is the number of fetches allowed now.
func (g *Gate) limit() int {
	if g.busy != nil && g.busy() {
		return 1
	}
	return g.max
}

// Acquire waits for a slot or the end of ctx.
func (g *Gate) Acquire(ctx context.Context) error {
	g.mu.Lock()
	if len(g.waiters) == 0 && g.inFlight < g.limit() {
		g.inFlight++
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	g.waiters = append(g.waiters, ch)
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, w := range g.waiters {
			if w == ch {
				g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// Granted meanwhile: hand the slot on.
		g.inFlight--
		g.grantLocked()
		return ctx.Err()
	}
}

// Release returns a slot.
func (g *Gate) Release() {
	g.mu.Lock()
	g.inFlight--
	g.grantLocked()
	g.mu.Unlock()
}

func (g *Gate) grantLocked() {
	for len(g.waiters) > 0 && g.inFlight < g.limit() {
		ch := g.waiters[0]
		g.waiters[0] = nil
		g.waiters = g.waiters[1:]
		g.inFlight++
		close(ch)
	}
}
