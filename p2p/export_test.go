package p2p

import (
	"net/netip"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// ConnCount returns the number of admitted connections, handshaking
// included.
func (s *Server) ConnCount() int {
	s.mu.Lock()
	defer s.mu.Unlock()
	return len(s.slots)
}

// Discouraged reports whether ip's address (an IPv4 address, an IPv6 /64)
// is discouraged: admitted while slots are free or in place of a long
// idle peer, evicted first.
func (s *Server) Discouraged(ip netip.Addr) bool {
	return s.discouraged.Has(ip, s.cfg.Now())
}

// Len returns the number of outstanding requests.
func (r *txRequests) Len() int { return len(r.at) }

// Has reports whether hash is outstanding.
func (r *txRequests) Has(hash chainhash.Hash) bool {
	_, ok := r.at[hash]
	return ok
}
