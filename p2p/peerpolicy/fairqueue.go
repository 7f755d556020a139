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
// continuously share equally what is left.
//
// Service is counted in one of two ways, fixed when the queue is made:
//
//   - NewFairQueue: the cost the holder of a slot reports when it
//     releases it (bytes read, time spent), so that peers share the work
//     equally whatever the size of their requests;
//   - NewTurnQueue: turns, as deficit round robin with a quantum counts
//     them. A request (the pieces from a share's Acquire to its Release,
//     with Yield between pieces) costs one turn, or, when its work is
//     more than a quantum, a turn per quantum of it (work/quantum): a
//     one-block request and a request of a quantum cost one turn each, a
//     request of ten quanta ten. So a peer's place in line is by the
//     requests it made, as Bitcoin Core serves peers a message each in
//     turn, but no request takes more than a quantum of work per turn: a
//     light client asking for a hundred filters is not held behind peers
//     that keep many one-block requests in flight (their requests are
//     cheap in bytes and costly in grants), nor served ahead of peers
//     that pull as much as it does.
//
// Service is decayed by half every half-life (serviceLedger); the
// waiting shares are a heap ordered once at push time (ties in arrival
// order). A new share starts at the service of the share that released a
// slot last, so that a peer gains nothing by reconnecting.
//
// A share has at most one entry waiting: other goroutines of the same
// peer wait for the share's turn, outside the queue. Safe for concurrent
// use.
type FairQueue struct {
	slots int
	// quantum is the work one turn covers; zero: service is the cost
	// reported (NewFairQueue).
	quantum float64

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
	// work is the cost of the request in progress so far and turns the
	// turns charged for it (turn queues only).
	work, turns float64
}

// NewFairQueue returns a queue of slots slots (at least one) whose
// service halves every halfLife of clock.
func NewFairQueue(slots int, halfLife time.Duration, clock Clock) *FairQueue {
	return &FairQueue{slots: max(1, slots), ledger: newServiceLedger(halfLife, clock)}
}

// NewTurnQueue returns a queue of slots slots (at least one) whose
// service is turns of quantum work each (the unit of the costs reported),
// halving every halfLife of clock.
func NewTurnQueue(slots int, quantum float64, halfLife time.Duration, clock Clock) *FairQueue {
	q := NewFairQueue(slots, halfLife, clock)
	q.quantum = max(quantum, 1)
	return q
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
// nanoseconds: the queue's one unit) to the share. In a turn queue it
// ends the share's request: the next Acquire begins a new one.
func (s *Share) Release(cost float64) { s.release(cost, true) }

// Yield gives back the slot taken with Acquire between two pieces of one
// request and charges cost to the share: in a turn queue, the next
// Acquire continues the request, which is charged no further turn until
// its work passes a quantum. In a queue of NewFairQueue it is Release. A request
// abandoned after a Yield (its peer gone) is counted with the share's
// next one.
func (s *Share) Yield(cost float64) { s.release(cost, false) }

func (s *Share) release(cost float64, end bool) {
	q := s.q
	q.mu.Lock()
	q.chargeLocked(s, cost, end)
	q.ledger.floor = s.svc.key
	q.running--
	q.grantLocked()
	q.mu.Unlock()
}

// Charge adds cost spent outside a slot (an answer's frames written, say)
// to the share's service; in a turn queue, cost/quantum turns.
func (s *Share) Charge(cost float64) {
	q := s.q
	q.mu.Lock()
	if q.quantum > 0 {
		cost /= q.quantum
	}
	q.serveLocked(s, cost)
	q.mu.Unlock()
}

// chargeLocked charges a piece of work of cost to s: the cost itself, or
// in a turn queue the turns it adds to its request (a request costs
// work/quantum turns, at least one), end telling whether the piece ends
// the request.
func (q *FairQueue) chargeLocked(s *Share, cost float64, end bool) {
	if q.quantum <= 0 {
		q.serveLocked(s, cost)
		return
	}
	s.work += max(cost, 0)
	turns := max(1, s.work/q.quantum)
	q.serveLocked(s, turns-s.turns)
	s.turns = turns
	if end {
		s.work, s.turns = 0, 0
	}
}

// serveLocked adds service to s's decayed service at the current time.
func (q *FairQueue) serveLocked(s *Share, service float64) {
	if q.ledger.charge(&s.svc, service) {
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

// Overtaken reports whether a share with less service than s, or work
// for everyone, waits for a slot: what the holder of a slot that has not
// started its work yet (it waited for something else meanwhile) asks to
// know whether to give the slot up (Release, then Acquire again).
func (s *Share) Overtaken() bool {
	q := s.q
	q.mu.Lock()
	defer q.mu.Unlock()
	if len(q.waiting) == 0 {
		return false
	}
	q.ledger.rescale(&s.svc)
	first := q.waiting[0]
	return first.ahead || first.svc.key < s.svc.key
}

// Waiting returns the number of shares waiting for a slot.
func (q *FairQueue) Waiting() int {
	q.mu.Lock()
	defer q.mu.Unlock()
	return len(q.waiting)
}
