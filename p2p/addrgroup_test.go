package p2p

import (
	"context"
	"net/netip"
	"testing"
	"time"
)

// admitIP runs admission for a connection from ip.
func admitIP(t *testing.T, srv *Server, ip string) (*peerSlot, string) {
	t.Helper()
	_, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	return srv.admit(netip.MustParseAddr(ip), newPeerState(1, 2), cancel)
}

// The per-address cap counts IPv6 peers by /64 and IPv4 peers by address;
// the per-subnet cap counts IPv4 /16s and IPv6 /48s; whitelisted peers
// count against neither.
func TestAdmissionCaps(t *testing.T) {
	cfg := testConfig(newFakeView(5, 14))
	cfg.MaxPeersPerIP = 2
	cfg.MaxPeersPerSubnet = 3
	cfg.Whitelist = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	for i, c := range []struct {
		ip   string
		want string // refusal reason, "" = admitted
	}{
		{"2001:db8:1:2::1", ""},
		{"2001:db8:1:2::2", ""},
		{"2001:db8:1:2::3", "per_address"}, // third from the same /64
		{"2001:db8:1:3::1", ""},            // another /64, same /48
		{"2001:db8:1:4::1", "per_subnet"},  // a fourth in the /48
		{"2001:db8:2::1", ""},              // another /48
		{"198.51.100.1", ""},
		{"198.51.100.1", ""},
		{"198.51.100.1", "per_address"},
		{"198.51.7.7", ""},
		{"198.51.8.8", "per_subnet"}, // a fourth in 198.51/16
		{"192.0.2.1", ""},            // whitelisted: no caps
		{"192.0.2.1", ""},
		{"192.0.2.1", ""},
		{"192.0.2.1", ""},
	} {
		slot, reason := admitIP(t, srv, c.ip)
		if reason != c.want || (slot == nil) != (c.want != "") {
			t.Errorf("connection %d from %s: refused %q, want %q", i, c.ip, reason, c.want)
		}
	}
}

// A full server evicts a peer for a newcomer from another netgroup; a
// discouraged address is admitted only while two or more slots are free.
func TestAdmissionEvictsAndDiscourages(t *testing.T) {
	cfg := testConfig(newFakeView(5, 15))
	cfg.MaxPeers = 4
	m := newCountingMetrics()
	cfg.Metrics = m
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	now := time.Now()
	srv.discouraged.Add(netip.MustParseAddr("10.1.9.9"), now)
	var slots []*peerSlot
	for _, ip := range []string{"10.1.0.1", "10.1.0.2"} {
		s, reason := admitIP(t, srv, ip)
		if s == nil {
			t.Fatalf("%s refused: %s", ip, reason)
		}
		slots = append(slots, s)
	}
	// 2 of 4 taken: a discouraged address still gets in (slots free)...
	d, reason := admitIP(t, srv, "10.1.9.9")
	if d == nil || !d.preferEvict {
		t.Fatalf("discouraged address with free slots: refused %q or not marked", reason)
	}
	// ...but not with 3 of 4 taken.
	if _, reason := admitIP(t, srv, "10.1.9.9"); reason != "discouraged" {
		t.Fatalf("discouraged address with one slot free: %q", reason)
	}
	if s, _ := admitIP(t, srv, "10.2.0.1"); s == nil {
		t.Fatal("fourth peer refused")
	}
	// Full: a newcomer evicts, and the discouraged peer goes first.
	if s, reason := admitIP(t, srv, "10.3.0.1"); s == nil {
		t.Fatalf("newcomer to a full server refused: %s", reason)
	}
	if !d.evicted || m.count("evicted") != 1 {
		t.Fatalf("discouraged peer not evicted first (evicted %v, %d evictions)", d.evicted, m.count("evicted"))
	}
	for _, s := range slots {
		if s.evicted {
			t.Errorf("peer from %s evicted instead of the discouraged one", s.ip)
		}
	}
	if srv.ConnCount() != 4 {
		t.Fatalf("%d connections after an eviction, want 4", srv.ConnCount())
	}
	srv.release(d) // its goroutine ends: the slot was freed at eviction
	if srv.ConnCount() != 4 {
		t.Fatalf("%d connections after the evicted peer left, want 4", srv.ConnCount())
	}
}
