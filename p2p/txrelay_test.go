package p2p

import (
	"net/netip"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/testtx"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// A peer flooding unsolicited transactions gets at most its burst relayed
// to the node and stays connected and unbanned.
func TestTxRelayRateLimited(t *testing.T) {
	node := &fakeNode{}
	cfg := testConfig(newFakeView(5, 12))
	cfg.Relay, cfg.RelayTx = node, true
	srv := startServer(t, cfg)
	c, _ := connect(t, srv.addr)
	const sent = 3 * txRelayBurst
	for i := range sent {
		tx := testtx.Witness(byte(i))
		tx.LockTime = uint32(i) // distinct transactions
		c.send(tx)
	}
	c.sync()
	node.mu.Lock()
	relayed := len(node.relayed)
	node.mu.Unlock()
	// The burst, plus what the rate refilled while the flood arrived.
	if relayed < txRelayBurst || relayed >= sent {
		t.Fatalf("%d of %d flooded transactions relayed, want the burst of %d and a few", relayed, sent, txRelayBurst)
	}
	if srv.Discouraged(netip.MustParseAddr("127.0.0.1")) || srv.PeerCount() != 1 {
		t.Fatal("flooding peer punished")
	}
}

// A transaction the peer answered with notfound can be asked for again
// when it is announced again.
func TestTxNotFoundForgetsRequest(t *testing.T) {
	node := &fakeNode{}
	cfg := testConfig(newFakeView(5, 12))
	cfg.Relay, cfg.RelayTx = node, true
	srv := startServer(t, cfg)
	c, _ := connect(t, srv.addr)
	h := chainhash.Hash{7}
	inv := wire.NewMsgInv()
	_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeTx, &h))
	c.send(inv)
	if got := c.sync(); len(got) != 1 {
		t.Fatalf("first announcement: %d answers, want getdata", len(got))
	}
	c.send(inv)
	if got := c.sync(); len(got) != 0 {
		t.Fatalf("repeated announcement while requested: %d answers", len(got))
	}
	nf := wire.NewMsgNotFound()
	_ = nf.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessTx, &h))
	c.send(nf)
	c.send(inv)
	if got := c.sync(); len(got) != 1 {
		t.Fatalf("announcement after notfound: %d answers, want getdata", len(got))
	}
	if srv.PeerCount() != 1 {
		t.Fatal("peer dropped for notfound")
	}
}

// testRelayEnv is a handler environment with relay on and clock now.
func testRelayEnv(now *time.Time) *handlerEnv {
	return &handlerEnv{
		relay:     &fakeNode{},
		relayRate: peerpolicy.NewSharedBucket(1e9, 1e9),
		metrics:   NopMetrics{},
		log:       zerolog.Nop(),
		now:       func() time.Time { return *now },
	}
}

// With maxTxRequests outstanding, requests older than txRequestExpiry make
// room; fresh ones do not.
func TestTxRequestsExpire(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	env := testRelayEnv(&now)
	st := newPeerState(1, 2)
	for i := range maxTxRequests {
		st.txRequests.Add(chainhash.Hash{byte(i), byte(i >> 8), 1}, now)
	}
	var asked int
	emit := func(o outbound) error { asked += len(o.Msg.(*wire.MsgGetData).InvList); return nil }
	announce := func(h chainhash.Hash) {
		inv := wire.NewMsgInv()
		_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeTx, &h))
		if err := handleInv(env, st, inv, emit); err != nil {
			t.Fatal(err)
		}
	}
	announce(chainhash.Hash{8})
	if asked != 0 {
		t.Fatalf("asked for a transaction with %d fresh requests outstanding", st.txRequests.Len())
	}
	now = now.Add(txRequestExpiry + time.Second)
	announce(chainhash.Hash{9})
	if asked != 1 || st.txRequests.Len() != 1 {
		t.Fatalf("asked %d, %d outstanding; want the stale requests dropped", asked, st.txRequests.Len())
	}
}

// An inv of 50,000 entries against a full set of pending requests costs
// work linear in the entries: no rescan of the pending requests per entry
// (the old expiry sweep inside the loop was quadratic).
func TestInvHandlingIsLinear(t *testing.T) {
	now := time.Unix(1_700_000_000, 0)
	env := testRelayEnv(&now)
	st := newPeerState(1, 2)
	for i := range maxTxRequests - 1 {
		st.txRequests.Add(chainhash.Hash{byte(i), byte(i >> 8), 1}, now)
	}
	inv := wire.NewMsgInv()
	for i := range wire.MaxInvPerMsg {
		_ = inv.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessTx, &chainhash.Hash{byte(i), byte(i >> 8), byte(i >> 16), 2}))
	}
	var asked int
	emit := func(o outbound) error { asked += len(o.Msg.(*wire.MsgGetData).InvList); return nil }
	for round := range 3 {
		st.txRequests.visits = 0
		now = now.Add(time.Second)
		if err := handleInv(env, st, inv, emit); err != nil {
			t.Fatal(err)
		}
		// Expiry looks at the queue's front once per message: at most the
		// pending requests plus one, never once per entry.
		if v := st.txRequests.visits; v > maxTxRequests+1 {
			t.Fatalf("round %d: %d pending requests examined for one inv", round, v)
		}
	}
	if asked != 1 {
		t.Fatalf("asked for %d transactions with one slot free", asked)
	}
	// Answered requests (notfound) leave stale queue slots; compaction
	// keeps the queue within a constant of the live requests.
	nf := wire.NewMsgNotFound()
	for i := range maxTxRequests - 1 {
		_ = nf.AddInvVect(wire.NewInvVect(wire.InvTypeTx, &chainhash.Hash{byte(i), byte(i >> 8), 1}))
	}
	for range 50 {
		handleNotFound(st, nf)
		if err := handleInv(env, st, inv, emit); err != nil {
			t.Fatal(err)
		}
		if q := len(st.txRequests.queue) - st.txRequests.head; q > 2*st.txRequests.Len()+16+1 {
			t.Fatalf("queue of %d slots for %d live requests", q, st.txRequests.Len())
		}
	}
}

// A peer within its own rate is still held to the server-wide one.
func TestTxRelayServerWideRate(t *testing.T) {
	node := &fakeNode{}
	cfg := testConfig(newFakeView(5, 12))
	cfg.Relay, cfg.RelayTx = node, true
	cfg.TxRelayRate = 1 // a burst of 10, then one a second
	srv := startServer(t, cfg)
	a, _ := connect(t, srv.addr)
	b, _ := connect(t, srv.addr)
	for i := range 8 {
		for j, c := range []*rawClient{a, b} {
			tx := testtx.Witness(byte(i))
			tx.LockTime = uint32(2*i + j)
			c.send(tx)
		}
	}
	a.sync()
	b.sync()
	node.mu.Lock()
	relayed := len(node.relayed)
	node.mu.Unlock()
	if relayed < 10 || relayed > 12 {
		t.Fatalf("%d of 16 transactions relayed, want the server-wide burst of 10 (and at most a refill or two)", relayed)
	}
	if srv.PeerCount() != 2 {
		t.Fatal("peers punished for the server-wide rate")
	}
}
