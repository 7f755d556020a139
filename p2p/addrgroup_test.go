package p2p

import (
	"context"
	"net/netip"
	"sync/atomic"
	"testing"
	"time"

	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// admitIP runs admission for a connection from ip.
func admitIP(t *testing.T, srv *Server, ip string) (*peerSlot, string) {
	t.Helper()
	_, cancel := context.WithCancelCause(context.Background())
	t.Cleanup(func() { cancel(nil) })
	return srv.admit(netip.MustParseAddr(ip), newPeerState(1, 2), cancel)
}

// steppingClock is a clock for Config.Now that moves a second each time it
// is read, so that peers admitted one after another are ordered, and that
// a test can move further.
type steppingClock struct{ ns atomic.Int64 }

func newSteppingClock() *steppingClock {
	c := &steppingClock{}
	c.ns.Store(time.Unix(1_700_000_000, 0).UnixNano())
	return c
}

func (c *steppingClock) now() time.Time { return time.Unix(0, c.ns.Add(int64(time.Second))) }

func (c *steppingClock) advance(d time.Duration) { c.ns.Add(int64(d)) }

// No newcomer is refused while slots are free, however many peers its
// address (IPv4 address, IPv6 /64) or netgroup holds. Once full, the idle
// peers an address holds beyond MaxPeersPerIP (or a netgroup beyond
// MaxPeersPerSubnet) go first, the one idle longest first; whitelisted
// peers count in no group and are never evicted.
func TestAdmissionLevelsEvictNotRefuse(t *testing.T) {
	cfg := testConfig(newFakeView(5, 14))
	cfg.MaxPeers = 8
	cfg.MaxPeersPerIP = 2
	cfg.MaxPeersPerSubnet = 3
	cfg.Whitelist = []netip.Prefix{netip.MustParsePrefix("192.0.2.0/24")}
	cfg.Now = newSteppingClock().now
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	var same []*peerSlot
	for i, ip := range []string{"198.51.100.1", "198.51.100.1", "198.51.100.1", "198.51.100.1", "198.51.100.1",
		"2001:db8:1:2::1", "2001:db8:1:2::2", "192.0.2.1"} {
		slot, reason := admitIP(t, srv, ip)
		if slot == nil {
			t.Fatalf("connection %d from %s refused (%s) with slots free", i, ip, reason)
		}
		if ip == "198.51.100.1" {
			same = append(same, slot)
		}
	}
	// Full: 198.51.100.1 holds five, beyond the level of two. It keeps its
	// peer served last and its newest; of the others, never served, the
	// one connected longest goes first, then the next. The /64's two and
	// the whitelisted one stay.
	same[0].st.markUseful(cfg.Now())
	for k, want := range []*peerSlot{same[1], same[2]} {
		if s, reason := admitIP(t, srv, "203.0.113.9"); s == nil {
			t.Fatalf("newcomer %d to a full server refused: %s", k, reason)
		}
		if !want.evicted {
			t.Fatalf("newcomer %d: peer %d of the crowded address not evicted", k, want.id)
		}
	}
	for _, s := range srv.slots {
		if s.evicted {
			t.Errorf("peer %d from %s evicted", s.id, s.ip)
		}
	}
	if srv.ConnCount() != cfg.MaxPeers {
		t.Fatalf("%d connections, want %d", srv.ConnCount(), cfg.MaxPeers)
	}
}

// A discouraged address is admitted while two or more slots are free; with
// fewer, only in place of a peer idle for minutes, and it is evicted first.
func TestAdmissionEvictsAndDiscourages(t *testing.T) {
	cfg := testConfig(newFakeView(5, 15))
	cfg.MaxPeers = 4
	m := newCountingMetrics()
	cfg.Metrics = m
	clock := newSteppingClock()
	cfg.Now = clock.now
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	srv.discouraged.Add(netip.MustParseAddr("10.1.9.9"), clock.now())
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
	// ...but not with 3 of 4 taken and nobody idle for minutes.
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
	// Once peers have been idle for minutes, the discouraged address takes
	// the place of one of them.
	if _, reason := admitIP(t, srv, "10.1.9.9"); reason != "discouraged" {
		t.Fatalf("discouraged address on a full server of busy peers: %q", reason)
	}
	clock.advance(peerpolicy.DiscouragedMinIdle)
	if s, reason := admitIP(t, srv, "10.1.9.9"); s == nil {
		t.Fatalf("discouraged address refused (%s) with peers idle for minutes", reason)
	}
	if m.count("evicted") != 2 || srv.ConnCount() != 4 {
		t.Fatalf("%d evictions, %d connections", m.count("evicted"), srv.ConnCount())
	}
}
