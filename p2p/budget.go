package p2p

import (
	"context"
	"fmt"
	"sync"
	"time"
)

// errSendStalled ends a peer whose send queue stayed full, without a
// single frame written, for Config.SendStallTimeout: it does not read.
var errSendStalled = fmt.Errorf("%w: send queue full and not draining", errDisconnect)

// sendPool is the server-wide budget of response bytes queued for peers and
// not yet written (Config.SendBudget). Safe for concurrent use.
type sendPool struct {
	mu    sync.Mutex
	limit int64
	used  int64
	// freed is closed (and replaced) when bytes are returned while
	// someone waits for them.
	freed chan struct{}
}

func newSendPool(limit int64) *sendPool { return &sendPool{limit: limit} }

// tryTake takes n bytes if they are free.
func (p *sendPool) tryTake(n int64) bool {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.used+n > p.limit {
		return false
	}
	p.used += n
	return true
}

// give returns n bytes taken with tryTake.
func (p *sendPool) give(n int64) {
	p.mu.Lock()
	p.used -= n
	if p.freed != nil {
		close(p.freed)
		p.freed = nil
	}
	p.mu.Unlock()
}

// waitFreed returns a channel closed when bytes are next returned.
func (p *sendPool) waitFreed() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.freed == nil {
		p.freed = make(chan struct{})
	}
	return p.freed
}

// sendGrant is what one queued frame holds until it is written.
type sendGrant struct {
	n      int64
	pooled bool // n was also taken from the server-wide pool
}

// peerBudget is one peer's budget of queued, unwritten response bytes
// (Config.PeerSendBudget), drawn also from the server-wide sendPool.
//
// An entry (a frame, or a chunk of cfilter frames) may be queued when the
// peer's queue has room for it and the pool has its bytes, or, whatever
// the pool holds, when the peer's queue is empty (one entry's overdraft per
// peer). So a peer that reads its answers always makes progress, one entry
// at a time, even while slow readers hold the whole pool; and what peers
// hold beyond the pool is at most one entry each (maxQueueEntry). A handler
// that cannot queue waits; if the peer's queue stays full for the stall
// timeout without one entry written, take fails with errSendStalled.
//
// Safe for concurrent use: handlers and the ticker take, the writer gives.
type peerBudget struct {
	pool  *sendPool
	limit int64
	stall time.Duration

	mu     sync.Mutex
	queued int64
	// drained is closed (and replaced) when a queued frame is written while
	// someone waits.
	drained chan struct{}
}

func newPeerBudget(pool *sendPool, limit int64, stall time.Duration) *peerBudget {
	return &peerBudget{pool: pool, limit: limit, stall: stall}
}

// take blocks until a frame of n bytes may be queued, ctx ends, or the
// peer stalls.
func (b *peerBudget) take(ctx context.Context, n int64) (sendGrant, error) {
	var timer *time.Timer
	defer func() {
		if timer != nil {
			timer.Stop()
		}
	}()
	for {
		b.mu.Lock()
		var poolFreed <-chan struct{}
		if b.queued == 0 || b.queued+n <= b.limit {
			pooled := b.pool.tryTake(n)
			if pooled || b.queued == 0 {
				b.queued += n
				b.mu.Unlock()
				return sendGrant{n: n, pooled: pooled}, nil
			}
			poolFreed = b.pool.waitFreed()
		}
		if b.drained == nil {
			b.drained = make(chan struct{})
		}
		drained := b.drained
		b.mu.Unlock()

		if timer == nil {
			timer = time.NewTimer(b.stall)
		}
		select {
		case <-drained:
			// The peer read something: the stall clock starts again (Go ≥
			// 1.23 timers drop a stale expiry on Reset).
			timer.Reset(b.stall)
		case <-poolFreed:
		case <-timer.C:
			return sendGrant{}, errSendStalled
		case <-ctx.Done():
			return sendGrant{}, ctx.Err()
		}
	}
}

// give returns a written (or dropped) frame's grant.
func (b *peerBudget) give(g sendGrant) {
	if g.pooled {
		b.pool.give(g.n)
	}
	b.mu.Lock()
	b.queued -= g.n
	if b.drained != nil {
		close(b.drained)
		b.drained = nil
	}
	b.mu.Unlock()
}
