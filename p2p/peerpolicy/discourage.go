package peerpolicy

import (
	"net/netip"
	"sync"
	"time"

	"github.com/dchest/siphash"
)

// DefaultMaxDiscouraged is Bitcoin Core's size of its discouragement filter
// (BanMan's rolling Bloom filter of 50,000 addresses).
const DefaultMaxDiscouraged = 50_000

// Discouragement is the list of address groups (AddrGroup: an IPv4
// address, an IPv6 /64) that misbehaved, as Core's BanMan keeps
// discouraged addresses: a discouraged group is not refused, it is admitted
// while slots are free or in place of a peer idle DiscouragedMinIdle, and
// evicted first. The list holds at most max groups; when full, adding one
// forgets the group discouraged longest ago, so a flood of misbehaving
// addresses can neither grow it nor stop new entries. An entry also lapses
// after ttl. Groups are kept as keyed SipHash values (8 bytes each), so the
// list costs a few dozen bytes per entry; the key is random per server, so
// nobody can craft a collision.
//
// Safe for concurrent use.
type Discouragement struct {
	mu      sync.Mutex
	k0, k1  uint64
	max     int
	ttl     time.Duration
	entries map[uint64]discouraged
	// ring holds keys in the order they were (re)discouraged; a slot whose
	// seq differs from the map's is stale (the group was discouraged again
	// later, or has been forgotten).
	ringKeys []uint64
	ringSeqs []uint32
	head     int // index of the oldest slot once the ring is full
	seq      uint32
}

type discouraged struct {
	seq   uint32
	until int64 // unix nanoseconds
}

// NewDiscouragement returns an empty list of at most max groups, each kept
// for ttl, keyed by k0, k1.
func NewDiscouragement(max int, ttl time.Duration, k0, k1 uint64) *Discouragement {
	return &Discouragement{k0: k0, k1: k1, max: max, ttl: ttl, entries: make(map[uint64]discouraged)}
}

func (d *Discouragement) key(ip netip.Addr) uint64 {
	g := AddrGroup(ip)
	b := g.Addr().As16()
	return siphash.Hash(d.k0, d.k1, append(b[:], byte(g.Bits())))
}

// Add discourages ip's group from now for the list's ttl.
func (d *Discouragement) Add(ip netip.Addr, now time.Time) {
	k := d.key(ip)
	d.mu.Lock()
	defer d.mu.Unlock()
	d.seq++
	if len(d.ringKeys) < d.max {
		d.ringKeys = append(d.ringKeys, k)
		d.ringSeqs = append(d.ringSeqs, d.seq)
	} else {
		// Overwrite the oldest slot, forgetting its group unless the group
		// was discouraged again since (its live slot is newer).
		old := d.ringKeys[d.head]
		if e, ok := d.entries[old]; ok && e.seq == d.ringSeqs[d.head] {
			delete(d.entries, old)
		}
		d.ringKeys[d.head], d.ringSeqs[d.head] = k, d.seq
		d.head = (d.head + 1) % d.max
	}
	d.entries[k] = discouraged{seq: d.seq, until: now.Add(d.ttl).UnixNano()}
}

// Has reports whether ip's group is discouraged at now.
func (d *Discouragement) Has(ip netip.Addr, now time.Time) bool {
	k := d.key(ip)
	d.mu.Lock()
	defer d.mu.Unlock()
	e, ok := d.entries[k]
	if ok && now.UnixNano() >= e.until {
		delete(d.entries, k)
		return false
	}
	return ok
}
