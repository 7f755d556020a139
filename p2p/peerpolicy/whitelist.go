package peerpolicy

import (
	"fmt"
	"net/netip"
	"strings"
)

// ParseWhitelist parses a comma-separated list of addresses and netmasks
// ("127.0.0.1, 10.0.0.0/8, ::1, 2001:db8::/32"), as Bitcoin Core's
// -whitelist takes them (without permission flags): a bare address is a
// /32 or /128. Peers from these networks are exempt from eviction (and
// count in none of its groups), from Discouragement and from the upload
// target: use it for a trusted reverse proxy or a local Tor daemon,
// whose many clients all arrive from one address. An empty string is an
// empty list.
func ParseWhitelist(s string) ([]netip.Prefix, error) {
	var out []netip.Prefix
	for _, field := range strings.Split(s, ",") {
		field = strings.TrimSpace(field)
		if field == "" {
			continue
		}
		var p netip.Prefix
		if strings.Contains(field, "/") {
			var err error
			if p, err = netip.ParsePrefix(field); err != nil {
				return nil, fmt.Errorf("whitelist entry %q is not an address or network: %w", field, err)
			}
		} else {
			a, err := netip.ParseAddr(field)
			if err != nil {
				return nil, fmt.Errorf("whitelist entry %q is not an address or network: %w", field, err)
			}
			p = netip.PrefixFrom(a, a.BitLen())
		}
		if p.Addr().Zone() != "" {
			return nil, fmt.Errorf("whitelist entry %q: zones are not supported", field)
		}
		p = p.Masked()
		if p.Addr().Is4In6() && p.Bits() >= 96 {
			p = netip.PrefixFrom(p.Addr().Unmap(), p.Bits()-96)
		}
		out = append(out, p)
	}
	return out, nil
}

// Whitelist answers whether an address is in one of its networks.
type Whitelist []netip.Prefix

// Contains reports whether ip (IPv4-mapped addresses unmapped) is listed.
func (w Whitelist) Contains(ip netip.Addr) bool {
	ip = ip.Unmap().WithZone("")
	for _, p := range w {
		if p.Contains(ip) {
			return true
		}
	}
	return false
}
