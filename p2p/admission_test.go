package p2p

import (
	"fmt"
	"sync/atomic"
	"testing"
	"time"
)

// eviction-churn at admission: a full server of idle peers, one /16
// holding an idle peer (shielded by uptime), a churn peer with the lowest
// ping (shielded by it) and a good client admitted moments ago, still in
// its handshake. The next newcomer, from another /16, does not take the
// good client's slot (its /16 holds the most, and it is the one peer of
// it not protected) but that of an idle peer; once the client's grace has
// passed unserved, it may go.
func TestAdmissionSparesNewcomerInHandshake(t *testing.T) {
	cfg := testConfig(newFakeView(5, 14))
	cfg.MaxPeers = 16
	var ns atomic.Int64
	ns.Store(time.Unix(1_700_000_000, 0).UnixNano())
	cfg.Now = func() time.Time { return time.Unix(0, ns.Load()) }
	advance := func(d time.Duration) { ns.Add(int64(d)) }
	srv, err := New(cfg)
	if err != nil {
		t.Fatal(err)
	}
	admit := func(ip string, ping time.Duration) *peerSlot {
		t.Helper()
		slot, reason := admitIP(t, srv, ip)
		if slot == nil {
			t.Fatalf("%s refused: %s", ip, reason)
		}
		slot.st.minPing.Store(int64(ping))
		return slot
	}
	var idle []*peerSlot
	for i := range 14 {
		idle = append(idle, admit(fmt.Sprintf("127.%d.0.1", 1+i), time.Duration(10+i)*time.Millisecond))
		advance(time.Second)
	}
	advance(100 * time.Second)
	admit("127.1.5.1", time.Millisecond) // the churn peer of the client's /16
	advance(10 * time.Second)
	good := admit("127.1.251.1", 0)
	advance(500 * time.Millisecond)
	admit("127.20.0.1", 0)
	if good.evicted {
		t.Fatal("the good client was evicted in its handshake by the next newcomer")
	}
	victims := 0
	for _, s := range idle {
		if s.evicted {
			victims++
		}
	}
	if victims != 1 {
		t.Fatalf("%d idle peers evicted for the newcomer, want 1", victims)
	}
	// Its grace over and never served: its /16 holds the most, and it is
	// that /16's one peer not protected.
	advance(2 * time.Second)
	admit("127.21.0.1", 0)
	if !good.evicted {
		t.Fatal("a newcomer never served kept its slot after its grace")
	}
}
