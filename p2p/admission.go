package p2p

import (
	"context"
	"errors"
	"net/netip"
	"time"

	"github.com/dchest/siphash"

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
	addr      netip.Prefix // addrGroup: per-address cap
	subnet    netip.Prefix // subnetGroup: per-subnet cap
	netGroup  uint64       // keyed netGroup: eviction
	connected time.Time
	// whitelisted peers are exempt from the caps, eviction and
	// discouragement; preferEvict marks a peer discouraged at accept.
	whitelisted bool
	preferEvict bool
	st          *peerState
	cancel      context.CancelCauseFunc
	evicted     bool
}

// admit applies the admission policy to a connection from ip, as Core's
// AcceptConnection does: a discouraged address only while slots are free
// (all but one), the per-address and per-subnet caps unless whitelisted,
// and when the server is full, the eviction of another peer
// (selectPeerToEvict) or a refusal. It returns the slot, or the reason for
// refusing (one of RefusalReasons).
func (s *Server) admit(ip netip.Addr, st *peerState, cancel context.CancelCauseFunc) (*peerSlot, string) {
	now := s.cfg.Now()
	slot := &peerSlot{
		ip:          ip,
		addr:        peerpolicy.AddrGroup(ip),
		subnet:      peerpolicy.SubnetGroup(ip),
		netGroup:    s.keyedNetGroup(ip),
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
	switch {
	case discouraged && len(s.slots)+1 >= s.cfg.MaxPeers:
		return nil, "discouraged"
	case !slot.whitelisted && s.perAddr[slot.addr] >= s.cfg.MaxPeersPerIP:
		return nil, "per_address"
	case !slot.whitelisted && s.perSubnet[slot.subnet] >= s.cfg.MaxPeersPerSubnet:
		return nil, "per_subnet"
	}
	if len(s.slots) >= s.cfg.MaxPeers {
		victim, ok := peerpolicy.SelectPeerToEvict(s.candidatesLocked())
		if !ok {
			return nil, "full"
		}
		v := s.slots[victim]
		s.removeLocked(v)
		v.evicted = true
		v.cancel(errEvicted)
		s.metrics.PeerEvicted()
		s.log.Debug().Stringer("ip", v.ip).Stringer("for", ip).Msg("evicted a peer to admit a new one")
	}
	s.nextID++
	slot.id = s.nextID
	s.slots[slot.id] = slot
	if !slot.whitelisted {
		s.perAddr[slot.addr]++
		s.perSubnet[slot.subnet]++
	}
	return slot, ""
}

// release frees the slot of an ended connection (an evicted one was freed
// at eviction).
func (s *Server) release(slot *peerSlot) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if !slot.evicted {
		s.removeLocked(slot)
	}
}

func (s *Server) removeLocked(slot *peerSlot) {
	delete(s.slots, slot.id)
	if slot.whitelisted {
		return
	}
	if s.perAddr[slot.addr]--; s.perAddr[slot.addr] <= 0 {
		delete(s.perAddr, slot.addr)
	}
	if s.perSubnet[slot.subnet]--; s.perSubnet[slot.subnet] <= 0 {
		delete(s.perSubnet, slot.subnet)
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

// keyedNetGroup hashes ip's netgroup with the server's secret key, so that
// nobody outside can tell which netgroups eviction will protect.
func (s *Server) keyedNetGroup(ip netip.Addr) uint64 {
	g := peerpolicy.NetGroup(ip)
	b := g.Addr().As16()
	return siphash.Hash(s.groupKey[0], s.groupKey[1], append(b[:], byte(g.Bits())))
}
