package httpapi

import (
	"net/netip"
	"sync"
)

// bulkSlots bounds the bulk downloads in flight: at most total at once and
// at most perAddr from one client address. When every slot is taken, a
// newcomer may take over a download of the network group (IPv4 /16, IPv6
// /32, as Core's netgroups) holding the most slots, if that group holds at
// least two more than the newcomer's: a few hosts in one network reading
// just fast enough to keep their slots cannot lock every other client
// out, and two groups cannot take slots from each other back and forth
// (after the takeover the victim's group still holds at least as many as
// the newcomer's).
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
		victim := b.takeoverVictim(group)
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

// takeoverVictim is the youngest download of the group holding the most
// slots, if that group holds at least two more than group; else nil.
func (b *bulkSlots) takeoverVictim(group netip.Prefix) *bulkSlot {
	var victim *bulkSlot
	for s := range b.slots {
		n := b.byGroup[s.group]
		if n < b.byGroup[group]+2 {
			continue
		}
		if victim == nil {
			victim = s
			continue
		}
		if v := b.byGroup[victim.group]; n > v || (n == v && s.seq > victim.seq) {
			victim = s
		}
	}
	return victim
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
