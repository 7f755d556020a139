package p2p

import (
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// txRequests holds the transactions asked of one peer with getdata and not
// yet received or answered with notfound: at most max at once, each
// forgotten after expiry.
//
// Requests are kept in a map and, in the order they were made, in a FIFO
// queue, so that expiry pops from the front: every operation is amortised
// O(1), and an inv of 50,000 entries costs 50,000 steps, not 50,000 scans
// of the pending requests. A queue slot whose request has since been
// answered is skipped when it reaches the front; the queue is compacted
// when such slots make up half of it.
//
// Not safe for concurrent use (the peer's reader owns it).
type txRequests struct {
	max    int
	expiry time.Duration
	at     map[chainhash.Hash]pendingTx
	queue  []pendingTx
	seq    uint64
	head   int
	// visits counts queue slots examined, for tests that pin the cost down.
	visits int
}

// pendingTx is one request; seq tells a live queue slot (the same seq as
// in the map) from one of an earlier request for the same hash.
type pendingTx struct {
	hash chainhash.Hash
	at   time.Time
	seq  uint64
}

func newTxRequests(max int, expiry time.Duration) *txRequests {
	return &txRequests{max: max, expiry: expiry, at: make(map[chainhash.Hash]pendingTx)}
}

// Expire forgets requests made before now-expiry.
func (r *txRequests) Expire(now time.Time) {
	for r.head < len(r.queue) {
		r.visits++
		p := r.queue[r.head]
		if r.live(p) {
			if now.Sub(p.at) < r.expiry {
				break
			}
			delete(r.at, p.hash)
		}
		r.queue[r.head] = pendingTx{}
		r.head++
	}
	if r.head == len(r.queue) {
		r.queue, r.head = r.queue[:0], 0
	}
}

// Add records a request for hash made at now; false (nothing recorded)
// when max requests are outstanding or hash already is.
func (r *txRequests) Add(hash chainhash.Hash, now time.Time) bool {
	if len(r.at) >= r.max {
		return false
	}
	if _, dup := r.at[hash]; dup {
		return false
	}
	r.seq++
	p := pendingTx{hash: hash, at: now, seq: r.seq}
	r.at[hash] = p
	r.queue = append(r.queue, p)
	return true
}

// Remove forgets hash (received, or notfound).
func (r *txRequests) Remove(hash chainhash.Hash) {
	if _, ok := r.at[hash]; !ok {
		return
	}
	delete(r.at, hash)
	if live := len(r.at); len(r.queue)-r.head > 2*live+16 {
		r.compact()
	}
}

// compact drops queue slots of answered requests, keeping order.
func (r *txRequests) compact() {
	out := r.queue[:0]
	for _, p := range r.queue[r.head:] {
		r.visits++
		if r.live(p) {
			out = append(out, p)
		}
	}
	clear(r.queue[len(out):])
	r.queue, r.head = out, 0
}

// live reports whether queue slot p is the outstanding request for its hash.
func (r *txRequests) live(p pendingTx) bool {
	cur, ok := r.at[p.hash]
	return ok && cur.seq == p.seq
}
