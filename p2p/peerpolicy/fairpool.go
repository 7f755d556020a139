package peerpolicy

import (
	"container/heap"
	"sync"
	"time"
)

// FairPool is a budget of units (bytes queued for peers) that accounts,
// one per peer, take and give back. A take is granted at once when its
// units are free and no take of less served account waits; otherwise it
// waits, and waiting takes are granted in order of their accounts' least
// recent service (the units each was granted, decayed as FairQueue's
// service is), each as soon as the units given back cover it. Only the
// takes granted are woken, never all the waiters. A take at the head
// that does not fit yet holds back the takes behind it, so no stream of
// small takes starves a large one.
//
// Safe for concurrent use; an account has at most one take waiting.
type FairPool struct {
	limit int64

	mu      sync.Mutex
	used    int64
	ledger  serviceLedger
	waiting serviceHeap[*PoolAccount]
	seq     uint64
}

// PoolAccount is one peer's account in a FairPool.
type PoolAccount struct {
	p *FairPool
	// granted receives a token when the waiting take is granted.
	granted chan struct{}

	// Guarded by p.mu.
	waitPlace
	need int64 // the waiting take's units
}

// NewFairPool returns a pool of limit units whose service halves every
// halfLife of clock.
func NewFairPool(limit int64, halfLife time.Duration, clock Clock) *FairPool {
	return &FairPool{limit: limit, ledger: newServiceLedger(halfLife, clock)}
}

// Limit returns the pool's units; a take of more is never granted.
func (p *FairPool) Limit() int64 { return p.limit }

// NewAccount returns the account of a new peer, starting at the service
// of the account granted last.
func (p *FairPool) NewAccount() *PoolAccount {
	p.mu.Lock()
	defer p.mu.Unlock()
	return &PoolAccount{p: p, granted: make(chan struct{}, 1), waitPlace: waitPlace{svc: p.ledger.newKey(), index: -1}}
}

// Take takes n units (at most Limit) for the account if they can be
// granted now, and reports so. Otherwise the take waits in the pool:
// Granted receives once its units are taken, unless Cancel withdraws it
// first. The account must have no other take waiting.
func (a *PoolAccount) Take(n int64) bool {
	p := a.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if len(p.waiting) == 0 && p.used+n <= p.limit {
		p.grantLocked(a, n)
		return true
	}
	p.seq++
	a.need, a.seq = n, p.seq
	p.ledger.rescale(&a.svc)
	heap.Push(&p.waiting, a)
	p.grantHeadsLocked()
	if a.index < 0 {
		<-a.granted // granted on arrival: this call's token
		return true
	}
	return false
}

// Granted receives a token when the account's waiting take is granted.
func (a *PoolAccount) Granted() <-chan struct{} { return a.granted }

// Cancel withdraws the account's waiting take, if any, whose token has not
// been received from Granted. granted reports that it was granted
// meanwhile: the caller holds its units and gives them back with Give.
func (a *PoolAccount) Cancel() (granted bool) {
	p := a.p
	p.mu.Lock()
	defer p.mu.Unlock()
	if a.index < 0 {
		select {
		case <-a.granted:
			return true
		default:
			return false
		}
	}
	heap.Remove(&p.waiting, a.index)
	// The head may have been what held the others back.
	p.grantHeadsLocked()
	return false
}

// Give returns n units taken for any account.
func (p *FairPool) Give(n int64) {
	p.mu.Lock()
	p.used -= n
	p.grantHeadsLocked()
	p.mu.Unlock()
}

// grantLocked takes n units for a and charges them to its service.
func (p *FairPool) grantLocked(a *PoolAccount, n int64) {
	p.used += n
	if p.ledger.charge(&a.svc, float64(n)) {
		for _, w := range p.waiting {
			p.ledger.rescale(&w.svc)
		}
	}
	p.ledger.floor = a.svc.key
}

// grantHeadsLocked grants the least served waiting takes while the free
// units cover the first of them, waking each.
func (p *FairPool) grantHeadsLocked() {
	for len(p.waiting) > 0 && p.used+p.waiting[0].need <= p.limit {
		a := heap.Pop(&p.waiting).(*PoolAccount)
		p.grantLocked(a, a.need)
		a.granted <- struct{}{}
	}
}

// Used returns the units taken and not given back.
func (p *FairPool) Used() int64 {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.used
}

// Waiting returns the number of takes waiting.
func (p *FairPool) Waiting() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	return len(p.waiting)
}
