package blockproxy

import (
	"context"
	"maps"
	"math"
	"slices"
	"sync"
)

// Requester names whom a node fetch is for: the gate serves the group
// with the least recent service, then takes turns between its peers. The server passes a peer's
// (keyed) network group and its connection id, so that a flood of peers
// from one /16 takes one turn in each round, as one peer does.
type Requester struct {
	Group uint64
	Peer  uint64
}

// Gate bounds node fetches in progress across peers: at most max, and one
// while busy reports true (the indexer is catching up and needs the node).
// A peer has at most one fetch in progress; its other requests wait. A
// free slot goes to the ready group with the least recent service (the
// fetches it was granted, decayed by half every gateHalfLife grants; ties
// in turn order), then to the group's peers in turn, each peer's requests
// in the order it asked: a wallet that asks now and then is served ahead
// of groups downloading continuously, and a peer with many requests
// queued waits its turn behind every other peer's first. Service decays
// with the gate's grants rather than with time, as FairQueue's does: a
// fetch is the gate's unit of work whatever it costs the node, and the
// order then depends on nothing but the requests. Safe for concurrent
// use.
type Gate struct {
	max  int
	busy func() bool

	mu       sync.Mutex
	inFlight int
	// historical counts the fetches in flight of blocks that are not
	// recent: they may hold every slot but one (historicalLimit).
	historical int
	// groups holds every group with a peer waiting or fetching; turns
	// the groups with a peer ready (waiting and not fetching), in turn
	// order.
	groups map[uint64]*gateGroup
	turns  []uint64
	// grants counts the grants since keys were last rescaled: a grant's
	// charge is 2^(grants/gateHalfLife), so that a key compares as
	// decayed service does.
	grants float64
	// idle keeps the keys of groups with nothing waiting or fetching, so
	// that a group asking now and then keeps its low service.
	idle map[uint64]float64
}

// Gate fairness: service halves every gateHalfLife grants; at most
// maxIdleGroups idle groups' keys are kept (then those below one recent
// fetch are forgotten, which is next to what they would count).
const (
	gateHalfLife  = 256
	maxIdleGroups = 4096
	// gateRebase is how many half-lives keys grow before they are
	// rescaled (2^64 times a count stays far inside a float64).
	gateRebase = 64
)

// gateGroup is one group's peers and the turn order of its ready ones.
type gateGroup struct {
	peers map[uint64]*gatePeer
	turns []uint64
	key   float64 // decayed service (Gate.grants)
}

// gatePeer is one peer's fetch in progress, if any, and its waiters.
type gatePeer struct {
	fetching bool
	// fetchingHistorical: the fetch in progress is of a historical block.
	fetchingHistorical bool
	waiters            []*gateWaiter
}

// gateWaiter is one Acquire waiting; ready is closed when granted.
type gateWaiter struct {
	ready   chan struct{}
	granted bool
	recent  bool // for a recent block (AcquireRecent)
}

// NewGate returns a gate of max slots, one while busy (which may be nil)
// reports true.
func NewGate(max int, busy func() bool) *Gate {
	return &Gate{max: max, busy: busy, groups: make(map[uint64]*gateGroup), idle: make(map[uint64]float64)}
}

// limit is the number of fetches allowed now.
func (g *Gate) limit() int {
	if g.busy != nil && g.busy() {
		return 1
	}
	return g.max
}

// historicalLimit is the number of fetches of historical blocks allowed
// now: every slot but one when there are two or more, so that a flood of
// historical downloads never makes a recent block (what every wallet
// following the chain asks for, first) wait for a slot to free.
func (g *Gate) historicalLimit() int {
	if l := g.limit(); l >= 2 {
		return l - 1
	}
	return 1
}

// Acquire waits for r's turn and a free slot, or the end of ctx. On
// success the caller fetches, then calls release once.
func (g *Gate) Acquire(ctx context.Context, r Requester) (release func(), err error) {
	return g.acquire(ctx, r, false)
}

// AcquireRecent is Acquire for a recent block (Recency): a group whose
// next fetch is of a recent block is served ahead of groups fetching
// historical blocks, whatever their service. Recent blocks are what
// wallets following the chain need, and the caches keep them, so peers
// asking them again do not come back to the gate.
func (g *Gate) AcquireRecent(ctx context.Context, r Requester) (release func(), err error) {
	return g.acquire(ctx, r, true)
}

// acquire is Acquire, for a recent block or not.
func (g *Gate) acquire(ctx context.Context, r Requester, recent bool) (release func(), err error) {
	w := &gateWaiter{ready: make(chan struct{}), recent: recent}
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
		grp = &gateGroup{peers: make(map[uint64]*gatePeer), key: g.idle[r.Group]}
		delete(g.idle, r.Group)
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
// ready group with the least service gets one for its first ready peer's
// oldest waiter, is charged, and goes to the back of the turns if it has
// another peer ready; a historical block only within historicalLimit
// (recent blocks go first, so when the best is historical no recent
// block waits).
func (g *Gate) grantLocked() {
	for len(g.turns) > 0 && g.inFlight < g.limit() {
		i := g.leastServedLocked()
		group := g.turns[i]
		if !g.nextRecentLocked(group) && g.historical >= g.historicalLimit() {
			return // the slot left is kept for a recent block
		}
		g.turns = slices.Delete(g.turns, i, i+1)
		grp := g.groups[group]
		p := grp.peers[grp.turns[0]]
		grp.turns = slices.Delete(grp.turns, 0, 1)
		w := p.waiters[0]
		p.waiters = slices.Delete(p.waiters, 0, 1)
		p.fetching, p.fetchingHistorical, w.granted = true, !w.recent, true
		g.inFlight++
		if !w.recent {
			g.historical++
		}
		close(w.ready)
		g.chargeLocked(grp)
		if len(grp.turns) > 0 {
			g.turns = append(g.turns, group)
		}
	}
}

// leastServedLocked returns the index in turns of the ready group to
// serve: one whose next fetch is of a recent block first, then the least
// service, then the first in turn order of equals.
func (g *Gate) leastServedLocked() int {
	best, bestRecent := 0, g.nextRecentLocked(g.turns[0])
	for i, group := range g.turns[1:] {
		recent := g.nextRecentLocked(group)
		if recent != bestRecent {
			if recent {
				best, bestRecent = i+1, true
			}
			continue
		}
		if g.groups[group].key < g.groups[g.turns[best]].key {
			best = i + 1
		}
	}
	return best
}

// nextRecentLocked reports whether a ready group's next fetch is of a
// recent block.
func (g *Gate) nextRecentLocked(group uint64) bool {
	grp := g.groups[group]
	return grp.peers[grp.turns[0]].waiters[0].recent
}

// chargeLocked charges grp one fetch, rescaling every key once the charge
// has grown gateRebase half-lives.
func (g *Gate) chargeLocked(grp *gateGroup) {
	grp.key += math.Exp2(g.grants / gateHalfLife)
	g.grants++
	if g.grants < gateRebase*gateHalfLife {
		return
	}
	g.grants -= gateRebase * gateHalfLife
	for _, other := range g.groups {
		other.key = math.Ldexp(other.key, -gateRebase)
	}
	for group, key := range g.idle {
		g.idle[group] = math.Ldexp(key, -gateRebase)
	}
}

// doneLocked ends r's fetch: its peer is ready again if it has waiters
// (at the back), forgotten otherwise, and the freed slot is granted.
func (g *Gate) doneLocked(r Requester) {
	g.inFlight--
	grp := g.groups[r.Group]
	p := grp.peers[r.Peer]
	if p.fetchingHistorical {
		g.historical--
	}
	p.fetching, p.fetchingHistorical = false, false
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
	if len(grp.peers) > 0 {
		return
	}
	delete(g.groups, r.Group)
	if grp.key > 0 {
		g.idle[r.Group] = grp.key
	}
	if len(g.idle) > maxIdleGroups {
		recent := math.Exp2(g.grants / gateHalfLife)
		maps.DeleteFunc(g.idle, func(_ uint64, key float64) bool { return key < recent })
		if len(g.idle) > maxIdleGroups {
			clear(g.idle)
		}
	}
}
