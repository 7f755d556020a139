package peerpolicy

import "net/netip"

// Prefix lengths of the two ways a peer's address is grouped.
const (
	// ipv6AddrBits is the prefix an IPv6 peer counts under as one address
	// (eviction's per-address level, Discouragement): a subscriber is
	// usually handed a whole /64, so an address within it costs an
	// attacker nothing, and telling single IPv6 addresses apart would be
	// void.
	ipv6AddrBits = 64
	// ipv4NetGroupBits and ipv6NetGroupBits are Bitcoin Core's netgroups
	// (GetGroup): what eviction keeps diverse and evicts from.
	ipv4NetGroupBits = 16
	ipv6NetGroupBits = 32
)

// AddrGroup is the key eviction's per-address level and the
// Discouragement list count a peer under: its IPv4 address itself (many
// users share one behind NAT), or the /64 its IPv6 address is in.
// IPv4-mapped IPv6 addresses count as IPv4.
func AddrGroup(ip netip.Addr) netip.Prefix { return groupOf(ip, 32, ipv6AddrBits) }

// NetGroup is the eviction netgroup: IPv4 /16, IPv6 /32. Unlike Core,
// which puts every local and every unroutable address into one group each,
// every address is grouped by its prefix: clients on a LAN are not one
// group, and loopback addresses can stand in for many hosts in tests.
func NetGroup(ip netip.Addr) netip.Prefix { return groupOf(ip, ipv4NetGroupBits, ipv6NetGroupBits) }

// groupOf masks ip (unmapped) to v4 or v6 bits; the zero Addr (no remote
// address) gives the zero Prefix, a group of its own.
func groupOf(ip netip.Addr, v4, v6 int) netip.Prefix {
	ip = ip.Unmap()
	bits := v4
	if ip.Is6() {
		bits = v6
	}
	p, err := ip.WithZone("").Prefix(bits)
	if err != nil {
		return netip.Prefix{}
	}
	return p
}
