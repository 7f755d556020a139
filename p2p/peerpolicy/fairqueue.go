package peerpolicy

import (
	"container/heap"
	"context"
	"sync"
	"time"
)

// FairQueue grants a fixed number of slots (pieces of work that may run
// at once) to shares, one share per peer: a free slot goes to the waiting
// share with the least recent service, so a peer that asks now and then
// is served ahead of peers that pull continuously, and peers that pull
// continuously share equally what is left, whatever the size of their
// requests.
//
// Service is what the holder of a slot reports when it releases it (bytes
// read, time spent), decayed by half every half-life (serviceLedger); the
// waiting shares are a heap ordered once at push time (ties in arrival
// order). A new share starts at the service of the share that released a
// slot last, so that a peer gains nothing by reconnecting.
//
// A share has at most one entry waiting: other goroutines of the same
// peer wait for the share's turn, outside the queue. Safe for concurrent
// use.
type FairQueue struct {
	slots int

	mu      sync.Mutex
	ledger  serviceLedger
	running int
	waiting serviceHeap[*Share]
	seq     uint64
}

// Share is one peer's account in a FairQueue. Acquire a slot with
// Acquire and give it back with Release; a share may be used from several
// goroutines (they take turns).
type Share struct {
	q *FairQueue
	// turn is held by the share's one goroutine that is queued or
	// deciding whether to queue.
	turn chan struct{}
	// granted receives the slot granted to the waiting entry.
	granted chan struct{}

	// Guarded by q.mu.
	waitPlace
}

// NewFairQueue returns a queue of slots slots (at least one) whose
// service halves every halfLife of clock.
func NewFairQueue(slots int, halfLife time.Duration, clock Clock) *FairQueue {
	return &FairQueue{slots: max(1, slots), ledger: newServiceLedger(halfLife, clock)}
}

// NewShare returns a share for a new peer, starting at the service of the
// share that released a slot last.
func (q *FairQueue) NewShare() *Share {
	q.mu.Lock()
	defer q.mu.Unlock()
	return &Share{
		q:         q,
		turn:      make(chan struct{}, 1),
		granted:   make(chan struct{}, 1),
		waitPlace: waitPlace{svc: q.ledger.newKey(), index: -1},
	}
}

// Acquire waits for a slot; on nil the caller holds it and must Release
// it exactly once. An error (ctx's) means no slot is held.
func (s *Share) Acquire(ctx context.Context) error { return s.acquire(ctx, false) }

// AcquireAhead is Acquire for work done for every peer rather than for
// this share's (bounded by its caller: a recent block's first decoding):
// it waits ahead of every share's own work, behind other such work only.
func (s *Share) AcquireAhead(ctx context.Context) error { return s.acquire(ctx, true) }

// acquire is Acquire, queued ahead of the shares' own work when ahead.
func (s *Share) acquire(ctx context.Context, ahead bool) error {
	q := s.q
	q.mu.Lock()
	if q.running < q.slots && len(q.waiting) == 0 {
		// A free slot and nobody waiting: no turn to take.
		q.running++
		q.mu.Unlock()
		return nil
	}
	q.mu.Unlock()
	select {
	case s.turn <- struct{}{}:
	default:
		select {
		case s.turn <- struct{}{}:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
	defer func() { <-s.turn }()
	q.mu.Lock()
	if q.running < q.slots && len(q.waiting) == 0 {
		q.running++
		q.mu.Unlock()
		return nil
	}
	q.seq++
	s.seq = q.seq
	s.ahead = ahead
	q.ledger.rescale(&s.svc)
	heap.Push(&q.waiting, s)
	q.mu.Unlock()
	select {
	case <-s.granted:
		return nil
	case <-ctx.Done():
	}
	q.mu.Lock()
	if s.index >= 0 {
		heap.Remove(&q.waiting, s.index)
		q.mu.Unlock()
		return ctx.Err()
	}
	// Granted meanwhile: pass the slot on.
	<-s.granted
	q.running--
	q.grantLocked()
	q.mu.Unlock()
	return ctx.Err()
}

// Release gives back the slot taken with Acquire and charges cost (bytes,
// nanoseconds: the queue's one unit) to the share.
func (s *Share) Release(cost float64) {
	q := s.q
	q.mu.Lock()
	q.chargeLocked(s, cost)
	q.ledger.floor = s.svc.key
	q.running--
	q.grantLocked()
	q.mu.Unlock()
}

// Charge adds cost spent outside a slot (an answer's frames written, say)
// to the share's service.
func (s *Share) Charge(cost float64) {
	s.q.mu.Lock()
	s.q.chargeLocked(s, cost)
	s.q.mu.Unlock()
}

// chargeLocked adds cost to s's decayed service at the current time.
func (q *FairQueue) chargeLocked(s *Share, cost float64) {
	if q.ledger.charge(&s.svc, cost) {
		for _, w := range q.waiting {
			q.ledger.rescale(&w.svc)
		}
	}
}

// grantLocked hands free slots to the waiting shares with the least
// service.
func (q *FairQueue) grantLocked() {
	for q.running < q.slots && len(q.waiting) > 0 {
		s := heap.Pop(&q.waiting).(*Share)
		q.running++
		s.granted <- struct{}{}
	}
}

// Waiting returns the number of shares waiting for a slot.
func (q *FairQueue) Waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}
