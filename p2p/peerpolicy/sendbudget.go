package peerpolicy

import (
	"context"
	"errors"
	"sync"
	"sync/atomic"
	"time"
)

// ErrSendStalled is a peer's send queue that stayed full, without a single
// frame written, for the stall timeout: the peer does not read.
var ErrSendStalled = errors.New("send queue full and not draining")

// SendPool is the server-wide budget of response bytes queued for peers
// and not yet written (p2p's Config.SendBudget), in two parts: a reserve
// for each of up to as many peers as may connect (a 2·maxPeers-th of the
// budget, at most a peer's own budget), and the shared rest, granted to
// waiting peers least served first (FairPool). Reserves and the shared
// rest add up to at most the budget. Safe for concurrent use.
type SendPool struct {
	shared      *FairPool
	reserveEach int64
	maxReserves int64
	// reserves is the number of reserves peers hold.
	reserves atomic.Int64
}

// NewSendPool splits limit bytes into maxPeers reserves of at most
// peerLimit bytes each and the shared rest, whose service halves every
// halfLife of clock.
func NewSendPool(limit int64, maxPeers int, peerLimit int, halfLife time.Duration, clock Clock) *SendPool {
	peers := int64(max(maxPeers, 1))
	each := min(limit/(2*peers), int64(peerLimit))
	return &SendPool{
		shared:      NewFairPool(limit-peers*each, halfLife, clock),
		reserveEach: each,
		maxReserves: peers,
	}
}

// claimReserve returns a reserve for a peer, or 0 while all are held (the
// peers of freed slots have not ended yet).
func (p *SendPool) claimReserve() int64 {
	for {
		n := p.reserves.Load()
		if n >= p.maxReserves {
			return 0
		}
		if p.reserves.CompareAndSwap(n, n+1) {
			return p.reserveEach
		}
	}
}

// Shared returns the shared part of the pool.
func (p *SendPool) Shared() *FairPool { return p.shared }

// returnReserve gives back a reserve of claimReserve (0: none).
func (p *SendPool) returnReserve(r int64) {
	if r > 0 {
		p.reserves.Add(-1)
	}
}

// SendGrant is what one queued frame holds until it is written: n bytes,
// of which reserved came from the peer's reserve and pooled from the
// shared pool (the rest is the empty queue's overdraft).
type SendGrant struct {
	n, reserved, pooled int64
}

// SendBudget is one peer's budget of queued, unwritten response bytes
// (p2p's Config.PeerSendBudget), drawn from the peer's reserve first, then from
// the shared pool.
//
// An entry (a frame, or a chunk of cfilter frames) may be queued when the
// peer's queue has room for it and the reserve and the pool cover it, or,
// whatever the pool holds, when the peer's queue is empty (one entry's
// overdraft per peer, beyond its reserve). So a peer with little queued
// pipelines a reserve's worth of entries even while other peers hold the
// whole shared pool, and a peer that reads its answers always makes
// progress; what peers hold beyond the pool is at most one entry each. A handler that cannot queue waits, in the pool's line
// when the pool is what it lacks; if the peer's queue stays full for the
// stall timeout without one entry written, Take fails with ErrSendStalled.
//
// Safe for concurrent use: handlers and the ticker take (one at a time),
// the writer gives.
type SendBudget struct {
	pool    *SendPool
	account *PoolAccount
	limit   int64
	stall   time.Duration
	// turn is held by the one take deciding or waiting: the pool account
	// has one take waiting at most, and a take's split between reserve
	// and pool holds while it waits (the writer only frees bytes).
	turn chan struct{}

	mu          sync.Mutex
	queued      int64
	reserve     int64 // claimed at the first take; 0 while none is free
	reserveUsed int64
	// drained is closed (and replaced) when a queued frame is written while
	// someone waits.
	drained chan struct{}
}

// NewBudget returns the budget of a new peer: limit bytes queued at most
// (but for the overdraft), stall the longest its queue may stay full
// without one entry written.
func (p *SendPool) NewBudget(limit int64, stall time.Duration) *SendBudget {
	return &SendBudget{pool: p, account: p.shared.NewAccount(), limit: limit, stall: stall, turn: make(chan struct{}, 1)}
}

// Take blocks until a frame of n bytes may be queued, ctx ends, or the
// peer stalls. The grant is given back with Give once the frame is
// written or dropped.
func (b *SendBudget) Take(ctx context.Context, n int64) (SendGrant, error) {
	select {
	case b.turn <- struct{}{}:
	default:
		select {
		case b.turn <- struct{}{}:
		case <-ctx.Done():
			return SendGrant{}, ctx.Err()
		}
	}
	defer func() { <-b.turn }()
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		g, inLine, drained, ok := b.tryTake(n)
		if ok {
			return g, nil
		}
		var granted <-chan struct{}
		if inLine {
			granted = b.account.Granted()
		}
		if timer == nil {
			timer = time.NewTimer(b.stall)
		}
		select {
		case <-granted:
			return b.granted(g), nil
		case <-drained:
			// The peer read something: the stall clock starts again (Go ≥
			// 1.23 timers drop a stale expiry on Reset), and the reserve
			// or an empty queue may cover the frame now.
			timer.Reset(b.stall)
			if inLine && b.account.Cancel() {
				return b.granted(g), nil
			}
		case <-timer.C:
			b.leaveLine(inLine, g)
			return SendGrant{}, ErrSendStalled
		case <-ctx.Done():
			b.leaveLine(inLine, g)
			return SendGrant{}, ctx.Err()
		}
	}
}

// tryTake queues n bytes if it may now (ok). Otherwise g is the split the
// frame waits for: inLine when it waits in the pool's line for g.pooled
// bytes (granted then stands, the split holding while the take keeps its
// turn), and drained is closed when the peer's queue next drains.
func (b *SendBudget) tryTake(n int64) (g SendGrant, inLine bool, drained <-chan struct{}, ok bool) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.reserve == 0 {
		b.reserve = b.pool.claimReserve()
	}
	if b.queued == 0 || b.queued+n <= b.limit {
		g.n = n
		g.reserved = min(n, b.reserve-b.reserveUsed)
		rest := n - g.reserved
		switch {
		case rest == 0:
			ok = true
		case rest <= b.pool.shared.Limit() && b.account.Take(rest):
			g.pooled, ok = rest, true
		case rest <= b.pool.shared.Limit() && b.queued == 0:
			// In line, but the queue is empty: the overdraft unless the
			// pool granted the bytes meanwhile.
			if b.account.Cancel() {
				g.pooled = rest
			}
			ok = true
		case b.queued == 0:
			ok = true
		default:
			inLine = rest <= b.pool.shared.Limit()
			if inLine {
				g.pooled = rest
			}
		}
		if ok {
			b.queued += n
			b.reserveUsed += g.reserved
			return g, false, nil, true
		}
	}
	if b.drained == nil {
		b.drained = make(chan struct{})
	}
	return g, inLine, b.drained, false
}

// granted queues g, whose pooled bytes the pool has granted.
func (b *SendBudget) granted(g SendGrant) SendGrant {
	b.mu.Lock()
	b.queued += g.n
	b.reserveUsed += g.reserved
	b.mu.Unlock()
	return g
}

// leaveLine withdraws a take from the pool's line, giving back the bytes
// if they were granted meanwhile.
func (b *SendBudget) leaveLine(inLine bool, g SendGrant) {
	if inLine && b.account.Cancel() {
		b.pool.shared.Give(g.pooled)
	}
}

// Give returns a written (or dropped) frame's grant.
func (b *SendBudget) Give(g SendGrant) {
	if g.pooled > 0 {
		b.pool.shared.Give(g.pooled)
	}
	b.mu.Lock()
	b.queued -= g.n
	b.reserveUsed -= g.reserved
	if b.drained != nil {
		close(b.drained)
		b.drained = nil
	}
	b.mu.Unlock()
}

// Close returns the peer's reserve once nothing of it is queued (the
// peer's goroutines have ended and its queue was drained).
func (b *SendBudget) Close() {
	b.mu.Lock()
	defer b.mu.Unlock()
	b.pool.returnReserve(b.reserve)
	b.reserve = 0
}

// Queued returns the bytes queued and not yet written.
func (b *SendBudget) Queued() int64 {
	b.mu.Lock()
	defer b.mu.Unlock()
	return b.queued
}
