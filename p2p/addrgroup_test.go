package p2p

import (
	"net"
	"net/netip"
	"testing"
	"time"
)

// IPv4 addresses are their own group; IPv6 addresses group by /64; an
// IPv4-mapped address is its IPv4 address.
func TestAddrGroup(t *testing.T) {
	for _, c := range []struct{ ip, want string }{
		{"203.0.113.7", "203.0.113.7/32"},
		{"::ffff:203.0.113.7", "203.0.113.7/32"},
		{"2001:db8:1:2:aaaa::1", "2001:db8:1:2::/64"},
		{"2001:db8:1:2:ffff:ffff:ffff:ffff", "2001:db8:1:2::/64"},
		{"::1", "::/64"},
	} {
		if got := addrGroup(netip.MustParseAddr(c.ip)); got != netip.MustParsePrefix(c.want) {
			t.Errorf("%s: %s, want %s", c.ip, got, c.want)
		}
	}
	if got := addrGroup(netip.Addr{}); got.IsValid() {
		t.Errorf("zero address: %s", got)
	}
}

// A ban covers the banned address's whole group and nothing beyond it.
func TestBanCoversAddressGroup(t *testing.T) {
	b := newBanList()
	now := time.Unix(1_700_000_000, 0)
	b.Ban(netip.MustParseAddr("2001:db8:1:2::1"), time.Hour, now)
	b.Ban(netip.MustParseAddr("198.51.100.1"), time.Hour, now)
	for ip, want := range map[string]bool{
		"2001:db8:1:2::1":          true,
		"2001:db8:1:2:dead:beef::": true, // same /64, another address
		"2001:db8:1:3::1":          false,
		"198.51.100.1":             true,
		"198.51.100.2":             false, // IPv4 neighbours are not banned
	} {
		if got := b.Banned(netip.MustParseAddr(ip), now.Add(time.Minute)); got != want {
			t.Errorf("%s banned %v, want %v", ip, got, want)
		}
	}
	if b.Banned(netip.MustParseAddr("2001:db8:1:2::7"), now.Add(2*time.Hour)) {
		t.Error("ban outlived its duration")
	}
}

// addrConn is a net.Conn that reports a chosen remote address.
type addrConn struct {
	net.Conn
	remote net.Addr
}

func (c addrConn) RemoteAddr() net.Addr { return c.remote }

// MaxPeersPerIP counts IPv6 peers by /64: rotating addresses within one
// subscriber's prefix does not get more connections.
func TestPerIPLimitGroupsIPv6(t *testing.T) {
	cfg := testConfig(newFakeView(5, 14))
	cfg.MaxPeersPerIP = 2
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	conn := func(ip string) net.Conn {
		a, b := net.Pipe()
		t.Cleanup(func() { a.Close(); b.Close() })
		return addrConn{Conn: a, remote: &net.TCPAddr{IP: net.ParseIP(ip), Port: 8333}}
	}
	for i, c := range []struct {
		ip   string
		want bool
	}{
		{"2001:db8:1:2::1", true},
		{"2001:db8:1:2::2", true},
		{"2001:db8:1:2::3", false}, // third from the same /64
		{"2001:db8:1:3::1", true},  // another /64
		{"198.51.100.1", true},
		{"198.51.100.2", true},
		{"198.51.100.3", true}, // IPv4 addresses each count alone
	} {
		if _, ok := srv.admit(conn(c.ip)); ok != c.want {
			t.Errorf("connection %d from %s admitted %v, want %v", i, c.ip, ok, c.want)
		}
	}
}
