package httpapi

import (
	"net/netip"
	"sync"
)

// bulkSlots bounds the bulk downloads in flight: at most total at once and
// at most perAddr from one client address. When every slot is taken, a
// newcomer may take one over, as Core evicts peers: from the network group
// (IPv4 /16, IPv6 /32) holding the most slots, and within it from the
// address holding the most (see takeable for when). A few hosts in one
// network reading just fast enough to keep their slots cannot lock out the
// clients of other networks, nor those behind other addresses of their own
// network; one address holding many slots loses one to an address holding
// none.
//
// Two clients cannot take slots from each other back and forth: every
// takeover strictly lowers the pair (sum over groups of their slot count
// squared, sum over addresses of theirs), compared group sum first, so a
// run of takeovers among any fixed set of clients ends.
type bulkSlots struct {
	total, perAddr int
	inFlight       func(n int) // told the number in use after each change

	mu      sync.Mutex
	slots   map[*bulkSlot]struct{}
	byAddr  map[clientKey]int
	byGroup map[netip.Prefix]int
}

// bulkSlot is one download holding a slot.
type bulkSlot struct {
	key   clientKey
	group netip.Prefix
	seq   uint64 // order of acquisition: the youngest of a group is taken over
	cut   func() // ends the download early (its slot was taken over)
	taken bool   // taken over: release has nothing left to give back
}

func newBulkSlots(total, perAddr int, inFlight func(n int)) *bulkSlots {
	return &bulkSlots{total: total, perAddr: perAddr, inFlight: inFlight,
		slots: make(map[*bulkSlot]struct{}), byAddr: make(map[clientKey]int), byGroup: make(map[netip.Prefix]int)}
}

// bulkGroup is the network group of a client key: its IPv4 /16 or IPv6
// /32 (the zero prefix for the zero key).
func bulkGroup(key clientKey) netip.Prefix {
	bits := 32
	if key.Is4() {
		bits = 16
	}
	p, err := key.Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}

// acquire takes a slot for key, taking one over when all are in use (see
// bulkSlots); cut is called, at most once and from another request's
// goroutine, if this download's slot is taken over later. It returns the
// function that gives the slot back, or a nil function and the cap that
// refused it ("total" or "per_address").
func (b *bulkSlots) acquire(key clientKey, cut func()) (release func(), refused string) {
	b.mu.Lock()
	defer b.mu.Unlock()
	if b.byAddr[key] >= b.perAddr {
		return nil, "per_address"
	}
	group := bulkGroup(key)
	if len(b.slots) >= b.total {
		victim := b.takeoverVictim(key, group)
		if victim == nil {
			return nil, "total"
		}
		b.remove(victim)
		victim.taken = true
		victim.cut()
	}
	s := &bulkSlot{key: key, group: group, cut: cut}
	for o := range b.slots {
		s.seq = max(s.seq, o.seq+1)
	}
	b.slots[s] = struct{}{}
	b.byAddr[key]++
	b.byGroup[group]++
	b.inFlight(len(b.slots))
	var once sync.Once
	return func() {
		once.Do(func() {
			b.mu.Lock()
			defer b.mu.Unlock()
			if s.taken {
				return
			}
			b.remove(s)
			b.inFlight(len(b.slots))
		})
	}, ""
}

// takeoverVictim is the slot a newcomer from key and group takes over
// when every slot is in use, or nil: among the takeable ones, that of the
// group holding the most, then of the address holding the most, then the
// youngest (the download that has cost the least so far).
func (b *bulkSlots) takeoverVictim(key clientKey, group netip.Prefix) *bulkSlot {
	var victim *bulkSlot
	for s := range b.slots {
		if !b.takeable(s, key, group) {
			continue
		}
		if victim == nil || b.victimBefore(s, victim) {
			victim = s
		}
	}
	return victim
}

// takeable reports whether a newcomer from key and group may take s over:
// s's group holds at least two more slots than the newcomer's (after the
// takeover it still holds at least as many), or s's address holds at least
// two more than the newcomer's (after it, still at least as many) and s's
// group is the newcomer's own or holds more. Either way the takeover
// lowers the potential in bulkSlots' doc: the first lowers the group sum,
// the second keeps it and lowers the address sum.
func (b *bulkSlots) takeable(s *bulkSlot, key clientKey, group netip.Prefix) bool {
	sg, ng := b.byGroup[s.group], b.byGroup[group]
	if s.group != group && sg >= ng+2 {
		return true
	}
	return (s.group == group || sg > ng) && b.byAddr[s.key] >= b.byAddr[key]+2
}

// victimBefore reports whether a is taken over before b: its group holds
// more, or as many and its address more, or as many and it is younger.
func (b *bulkSlots) victimBefore(a, v *bulkSlot) bool {
	if ga, gv := b.byGroup[a.group], b.byGroup[v.group]; ga != gv {
		return ga > gv
	}
	if na, nv := b.byAddr[a.key], b.byAddr[v.key]; na != nv {
		return na > nv
	}
	return a.seq > v.seq
}

// remove gives s's slot back; b.mu is held.
func (b *bulkSlots) remove(s *bulkSlot) {
	delete(b.slots, s)
	if b.byAddr[s.key]--; b.byAddr[s.key] <= 0 {
		delete(b.byAddr, s.key)
	}
	if b.byGroup[s.group]--; b.byGroup[s.group] <= 0 {
		delete(b.byGroup, s.group)
	}
}
