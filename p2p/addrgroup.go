package p2p

import "net/netip"

// ipv6GroupBits is the prefix an IPv6 peer is grouped by: a subscriber is
// usually handed a whole /64, so an address within it costs an attacker
// nothing, and limiting or banning single IPv6 addresses would be void.
const ipv6GroupBits = 64

// addrGroup is the key the per-IP limit and the ban list count a peer
// under: its IPv4 address itself (many users share one behind NAT, and
// MaxPeersPerIP leaves room for them), or the /64 its IPv6 address is in.
// IPv4-mapped IPv6 addresses count as IPv4.
func addrGroup(ip netip.Addr) netip.Prefix {
	ip = ip.Unmap()
	bits := 32
	if ip.Is6() {
		bits = ipv6GroupBits
	}
	p, err := ip.Prefix(bits)
	if err != nil { // the zero Addr (no remote address)
		return netip.Prefix{}
	}
	return p
}
