package peerpolicy

import (
	"math"
	"time"
)

// serviceLedger keeps the decayed service of accounts (FairQueue's shares,
// FairPool's accounts): what each was given (bytes, nanoseconds: one unit
// per ledger), decayed by half every half-life, Σ cost·2^(−age/halfLife).
//
// It is kept as the time-invariant key service·2^(now/halfLife), which
// orders accounts as their decayed service at any common instant does, so
// waiters can sit in a heap ordered once when they arrive. Every
// maxHalfLives half-lives the base of the exponent moves on and keys are
// rescaled: the owner rescales its waiters (charge says when), an account
// not waiting is rescaled when next used. A new account starts at the
// floor, the key of the account its owner served last, so that a peer gains
// nothing by reconnecting; an idle account's service decays towards zero,
// which is the credit a quiet peer has earned.
//
// Not safe for concurrent use: its owner guards it with its own lock.
type serviceLedger struct {
	halfLife float64 // nanoseconds
	clock    Clock
	// epoch is when base half-lives had passed since the clock's origin;
	// keys are scaled by 2^(half-lives since epoch).
	epoch time.Duration
	base  int64
	floor float64
	// at and scale cache the last charge's half-lives since the epoch and
	// 2^at: a coarse clock reads the same for many charges.
	at, scale float64
}

// serviceKey is one account's decayed service in a serviceLedger.
type serviceKey struct {
	key  float64 // decayed service · 2^(half-lives since the epoch of base)
	base int64   // the ledger's base when key was last scaled
}

// maxHalfLives is how far keys are scaled before the base moves on:
// 2^maxHalfLives times any cost stays far inside a float64.
const maxHalfLives = 512

func newServiceLedger(halfLife time.Duration, clock Clock) serviceLedger {
	return serviceLedger{halfLife: float64(max(halfLife, time.Millisecond)), clock: clock, epoch: clock()}
}

// newKey returns the key of a new account: the floor.
func (l *serviceLedger) newKey() serviceKey { return serviceKey{key: l.floor, base: l.base} }

// charge adds cost to k's decayed service at the current time. moved
// reports that the base moved on: the owner must rescale the keys of its
// waiters (rescale) before comparing them again.
func (l *serviceLedger) charge(k *serviceKey, cost float64) (moved bool) {
	if cost <= 0 {
		l.rescale(k)
		return false
	}
	at := float64(l.clock()-l.epoch) / l.halfLife
	if at > maxHalfLives {
		shift := int64(at) - 1
		l.epoch += time.Duration(float64(shift) * l.halfLife)
		l.base += shift
		at -= float64(shift)
		l.floor = math.Ldexp(l.floor, -int(shift))
		moved = true
	}
	if at != l.at || l.scale == 0 {
		l.at, l.scale = at, math.Exp2(at)
	}
	l.rescale(k)
	k.key += cost * l.scale
	return moved
}

// rescale brings k to the ledger's base.
func (l *serviceLedger) rescale(k *serviceKey) {
	if k.base != l.base {
		k.key = math.Ldexp(k.key, -int(min(l.base-k.base, 2*maxHalfLives)))
		k.base = l.base
	}
}

// waitPlace is what a waiter (a FairQueue's Share, a FairPool's
// PoolAccount) keeps for its place among the waiting: its service, its
// index in the heap (−1 when not waiting), its arrival order, for ties,
// and whether it waits for work done for everyone, which goes first.
type waitPlace struct {
	svc   serviceKey
	index int
	seq   uint64
	ahead bool
}

func (w *waitPlace) place() *waitPlace { return w }

// serviceHeap is a container/heap of waiters, work for everyone first,
// then least service, then first come.
type serviceHeap[T interface{ place() *waitPlace }] []T

func (h serviceHeap[T]) Len() int { return len(h) }
func (h serviceHeap[T]) Less(i, j int) bool {
	a, b := h[i].place(), h[j].place()
	if a.ahead != b.ahead {
		return a.ahead
	}
	if a.svc.key != b.svc.key {
		return a.svc.key < b.svc.key
	}
	return a.seq < b.seq
}
func (h serviceHeap[T]) Swap(i, j int) {
	h[i], h[j] = h[j], h[i]
	h[i].place().index, h[j].place().index = i, j
}
func (h *serviceHeap[T]) Push(x any) {
	w := x.(T)
	w.place().index = len(*h)
	*h = append(*h, w)
}
func (h *serviceHeap[T]) Pop() any {
	old := *h
	w := old[len(old)-1]
	var zero T
	old[len(old)-1] = zero
	w.place().index = -1
	*h = old[:len(old)-1]
	return w
}
