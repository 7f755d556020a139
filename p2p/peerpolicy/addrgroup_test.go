package peerpolicy

import (
	"net/netip"
	"testing"
)

// The two groupings of an address: per-address (IPv4 address, IPv6 /64)
// and netgroup (IPv4 /16, IPv6 /32); IPv4-mapped addresses count as IPv4.
func TestAddressGroups(t *testing.T) {
	for _, c := range []struct{ ip, addr, netgroup string }{
		{"203.0.113.7", "203.0.113.7/32", "203.0.0.0/16"},
		{"::ffff:203.0.113.7", "203.0.113.7/32", "203.0.0.0/16"},
		{"127.3.4.5", "127.3.4.5/32", "127.3.0.0/16"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64", "2001:db8::/32"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64", "2001:db8::/32"},
		{"fe80::1%eth0", "fe80::/64", "fe80::/32"},
		{"::1", "::/64", "::/32"},
	} {
		ip := netip.MustParseAddr(c.ip)
		for _, g := range []struct {
			name string
			got  netip.Prefix
			want string
		}{
			{"AddrGroup", AddrGroup(ip), c.addr},
			{"NetGroup", NetGroup(ip), c.netgroup},
		} {
			if g.got != netip.MustParsePrefix(g.want) {
				t.Errorf("%s(%s) = %s, want %s", g.name, c.ip, g.got, g.want)
			}
		}
	}
	if got := AddrGroup(netip.Addr{}); got.IsValid() {
		t.Errorf("zero address: %s", got)
	}
}
