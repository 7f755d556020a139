package blockproxy

import (
	"context"
	"slices"
	"sync"
)

// Requester names whom a node fetch is for: the gate takes turns between
// groups, then between the peers of a group. The server passes a peer's
// (keyed) network group and its connection id, so that a flood of peers
// from one /16 takes one turn in each round, as one peer does.
type Requester struct {
	Group uint64
	Peer  uint64
}

// Gate bounds node fetches in progress across peers: at most max, and one
// while busy reports true (the indexer is catching up and needs the node).
// A peer has at most one fetch in progress; its other requests wait. Slots
// are granted round-robin, by group, then by peer within the group, then
// in the order the peer asked: a peer with many requests queued waits its
// turn behind every other peer's first. Safe for concurrent use.
type Gate struct {
	max  int
	busy func() bool

	mu       sync.Mutex
	inFlight int
	// groups holds every group with a peer waiting or fetching; turns
	// the groups with a peer ready (waiting and not fetching), in turn
	// order.
	groups map[uint64]*gateGroup
	turns  []uint64
}

// gateGroup is one group's peers and the turn order of its ready ones.
type gateGroup struct {
	peers map[uint64]*gatePeer
	turns []uint64
}

// gatePeer is one peer's fetch in progress, if any, and its waiters.
type gatePeer struct {
	fetching bool
	waiters  []*gateWaiter
}

// gateWaiter is one Acquire waiting; ready is closed when granted.
type gateWaiter struct {
	ready   chan struct{}
	granted bool
}

// NewGate returns a gate of max slots, one while busy (which may be nil)
// reports true.
func NewGate(max int, busy func() bool) *Gate {
	return &Gate{max: max, busy: busy, groups: make(map[uint64]*gateGroup)}
}

// limit is the number of fetches allowed now.
func (g *Gate) limit() int {
	if g.busy != nil && g.busy() {
		return 1
	}
	return g.max
}

// Acquire waits for r's turn and a free slot, or the end of ctx. On
// success the caller fetches, then calls release once.
func (g *Gate) Acquire(ctx context.Context, r Requester) (release func(), err error) {
	w := &gateWaiter{ready: make(chan struct{})}
	g.mu.Lock()
	g.enqueueLocked(r, w)
	g.grantLocked()
	g.mu.Unlock()
	select {
	case <-w.ready:
		return g.releaser(r), nil
	case <-ctx.Done():
	}
	g.mu.Lock()
	defer g.mu.Unlock()
	if w.granted { // granted meanwhile: hand the slot on
		g.doneLocked(r)
	} else {
		g.dequeueLocked(r, w)
	}
	return nil, ctx.Err()
}

// releaser returns r's release, harmless if called again.
func (g *Gate) releaser(r Requester) func() {
	released := false
	return func() {
		g.mu.Lock()
		defer g.mu.Unlock()
		if !released {
			released = true
			g.doneLocked(r)
		}
	}
}

// enqueueLocked queues w behind r's other waiters; a peer that was idle
// becomes ready, at the back of its group's turns (its group at the back
// of the gate's if it had no peer ready).
func (g *Gate) enqueueLocked(r Requester, w *gateWaiter) {
	grp, ok := g.groups[r.Group]
	if !ok {
		grp = &gateGroup{peers: make(map[uint64]*gatePeer)}
		g.groups[r.Group] = grp
	}
	p, ok := grp.peers[r.Peer]
	if !ok {
		p = &gatePeer{}
		grp.peers[r.Peer] = p
	}
	p.waiters = append(p.waiters, w)
	if len(p.waiters) == 1 && !p.fetching {
		g.readyLocked(r, grp)
	}
}

// readyLocked puts r's peer at the back of its group's turns.
func (g *Gate) readyLocked(r Requester, grp *gateGroup) {
	grp.turns = append(grp.turns, r.Peer)
	if len(grp.turns) == 1 {
		g.turns = append(g.turns, r.Group)
	}
}

// grantLocked grants slots while there are some and peers are ready: the
// first ready peer of the group whose turn it is gets one for its oldest
// waiter; the group goes to the back if it has another peer ready.
func (g *Gate) grantLocked() {
	for len(g.turns) > 0 && g.inFlight < g.limit() {
		group := g.turns[0]
		g.turns = slices.Delete(g.turns, 0, 1)
		grp := g.groups[group]
		p := grp.peers[grp.turns[0]]
		grp.turns = slices.Delete(grp.turns, 0, 1)
		w := p.waiters[0]
		p.waiters = slices.Delete(p.waiters, 0, 1)
		p.fetching, w.granted = true, true
		g.inFlight++
		close(w.ready)
		if len(grp.turns) > 0 {
			g.turns = append(g.turns, group)
		}
	}
}

// doneLocked ends r's fetch: its peer is ready again if it has waiters
// (at the back), forgotten otherwise, and the freed slot is granted.
func (g *Gate) doneLocked(r Requester) {
	g.inFlight--
	grp := g.groups[r.Group]
	p := grp.peers[r.Peer]
	p.fetching = false
	if len(p.waiters) > 0 {
		g.readyLocked(r, grp)
	} else {
		g.forgetLocked(r, grp)
	}
	g.grantLocked()
}

// dequeueLocked removes a waiter that gave up; its peer leaves the turns
// when that was its last waiter and it is not fetching.
func (g *Gate) dequeueLocked(r Requester, w *gateWaiter) {
	grp := g.groups[r.Group]
	p := grp.peers[r.Peer]
	if i := slices.Index(p.waiters, w); i >= 0 {
		p.waiters = slices.Delete(p.waiters, i, i+1)
	}
	if len(p.waiters) > 0 || p.fetching {
		return
	}
	if i := slices.Index(grp.turns, r.Peer); i >= 0 {
		grp.turns = slices.Delete(grp.turns, i, i+1)
		if len(grp.turns) == 0 {
			g.turns = slices.DeleteFunc(g.turns, func(group uint64) bool { return group == r.Group })
		}
	}
	g.forgetLocked(r, grp)
}

// forgetLocked drops an idle peer, and its group once it has no peers, so
// that the gate holds only peers waiting or fetching.
func (g *Gate) forgetLocked(r Requester, grp *gateGroup) {
	delete(grp.peers, r.Peer)
	if len(grp.peers) == 0 {
		delete(g.groups, r.Group)
	}
}
