package p2p

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/dchest/siphash"

	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// errEvicted is the cause of a peer's context when it was evicted to make
// room for a new connection.
var errEvicted = errors.New("evicted for a new peer")

// peerSlot is one admitted connection as admission and eviction see it.
// Its fields are set at accept and then only read, except evicted
// (guarded by Server.mu) and what st's atomics hold.
type peerSlot struct {
	id        uint64
	ip        netip.Addr
	addr      uint64 // keyed AddrGroup
	netGroup  uint64 // keyed NetGroup
	connected time.Time
	// whitelisted peers are exempt from eviction and discouragement;
	// preferEvict marks a peer discouraged at accept.
	whitelisted bool
	preferEvict bool
	st          *peerState
	cancel      context.CancelCauseFunc
	evicted     bool
}

// admit applies the admission policy to a connection from ip, as Core's
// AcceptConnection does: no newcomer is refused while slots are free,
// whatever its address or netgroup holds; when the server is full, another
// peer is evicted (peerpolicy.SelectPeerToEvict, with MaxPeersPerIP and
// MaxPeersPerSubnet as the levels above which a group's peers go first)
// or the newcomer refused. A discouraged address takes a slot only while
// another stays free, or in place of a peer idle for
// peerpolicy.DiscouragedMinIdle. It returns the slot, or the reason for
// refusing (one of RefusalReasons).
func (s *Server) admit(ip netip.Addr, st *peerState, cancel context.CancelCauseFunc) (*peerSlot, string) {
	now := s.cfg.Now()
	slot := &peerSlot{
		ip:          ip,
		addr:        s.keyedGroup(peerpolicy.AddrGroup(ip)),
		netGroup:    s.keyedGroup(peerpolicy.NetGroup(ip)),
		connected:   now,
		whitelisted: s.whitelist.Contains(ip),
		st:          st,
		cancel:      cancel,
	}
	st.whitelisted = slot.whitelisted
	discouraged := !slot.whitelisted && s.discouraged.Has(ip, now)
	slot.preferEvict = discouraged

	s.mu.Lock()
	defer s.mu.Unlock()
	ev := peerpolicy.Eviction{
		NewAddr:        slot.addr,
		NewNetGroup:    slot.netGroup,
		MaxPerAddr:     s.cfg.MaxPeersPerIP,
		MaxPerNetGroup: s.cfg.MaxPeersPerSubnet,
		Grace:          peerpolicy.NewcomerGrace,
		Now:            now,
	}
	switch {
	case discouraged && len(s.slots)+1 >= s.cfg.MaxPeers:
		// Core keeps the last free slot from a discouraged address; here
		// it may still displace a peer idle for minutes.
		ev.MinIdle = peerpolicy.DiscouragedMinIdle
		if !s.evictLocked(ev, ip) {
			return nil, "discouraged"
		}
	case len(s.slots) >= s.cfg.MaxPeers:
		if !s.evictLocked(ev, ip) {
			return nil, "full"
		}
	}
	s.nextID++
	slot.id = s.nextID
	st.requester = requesterOf(slot)
	s.slots[slot.id] = slot
	return slot, ""
}

// requesterOf names an admitted peer to the node-fetch gate, which takes
// turns between network groups and then between their peers, and to the
// upload target, which gives each network group a share: its keyed
// netgroup, or, whitelisted (a reverse proxy or Tor, whose users all share
// its address), a group of its own, as eviction counts such peers in no
// group.
func requesterOf(slot *peerSlot) blockproxy.Requester {
	group := slot.netGroup
	if slot.whitelisted {
		group = ^slot.id // a collision with a keyed netgroup is as unlikely as between two of them
	}
	return blockproxy.Requester{Group: group, Peer: slot.id}
}

// evictLocked evicts the peer SelectPeerToEvict picks for a newcomer from
// ip, reporting whether there was one.
func (s *Server) evictLocked(ev peerpolicy.Eviction, ip netip.Addr) bool {
	victim, ok := peerpolicy.SelectPeerToEvict(s.candidatesLocked(), ev)
	if !ok {
		return false
	}
	v := s.slots[victim]
	delete(s.slots, v.id)
	v.evicted = true
	v.cancel(errEvicted)
	s.metrics.PeerEvicted()
	s.log.Debug().Stringer("ip", v.ip).Stringer("for", ip).Msg("evicted a peer to admit a new one")
	return true
}

// release frees the slot of an ended connection (an evicted one was freed
// at eviction).
func (s *Server) release(slot *peerSlot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slot.evicted {
		delete(s.slots, slot.id)
	}
}

// candidatesLocked describes every admitted peer for eviction.
func (s *Server) candidatesLocked() []peerpolicy.EvictionCandidate {
	out := make([]peerpolicy.EvictionCandidate, 0, len(s.slots))
	for _, slot := range s.slots {
		c := peerpolicy.EvictionCandidate{
			ID:          slot.id,
			Connected:   slot.connected,
			MinPing:     time.Duration(slot.st.minPing.Load()),
			Addr:        slot.addr,
			NetGroup:    slot.netGroup,
			PreferEvict: slot.preferEvict,
			NoBan:       slot.whitelisted,
		}
		if u := slot.st.lastUseful.Load(); u != 0 {
			c.LastUseful = time.Unix(0, u)
		}
		out = append(out, c)
	}
	return out
}

// keyedGroup hashes an address group with the server's secret key, so
// that nobody outside can tell which netgroups eviction will protect.
func (s *Server) keyedGroup(g netip.Prefix) uint64 {
	b := g.Addr().As16()
	return siphash.Hash(s.groupKey[0], s.groupKey[1], append(b[:], byte(g.Bits())))
}
