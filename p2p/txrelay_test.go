package p2p

import (
	"net/netip"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"
)

// The bucket starts full, refuses once empty, and refills at its rate up
// to its burst.
func TestTokenBucket(t *testing.T) {
	b := tokenBucket{rate: 10, burst: 5}
	now := time.Unix(1_700_000_000, 0)
	for i := range 5 {
		if !b.take(now) {
			t.Fatalf("take %d of a full bucket refused", i)
		}
	}
	if b.take(now) {
		t.Fatal("empty bucket gave a token")
	}
	if !b.take(now.Add(100*time.Millisecond)) || b.take(now.Add(100*time.Millisecond)) {
		t.Fatal("0.1 s at 10/s should give exactly one token")
	}
	later := now.Add(time.Hour)
	n := 0
	for b.take(later) {
		n++
	}
	if n != 5 {
		t.Fatalf("%d tokens after an hour, want the burst 5", n)
	}
}

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
		tx := witnessTx(byte(i))
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
	if srv.Banned(netip.MustParseAddr("127.0.0.1")) || srv.PeerCount() != 1 {
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

// With maxTxRequests outstanding, requests older than txRequestExpiry make
// room; fresh ones do not.
func TestTxRequestsExpire(t *testing.T) {
	env := &handlerEnv{relay: &fakeNode{}, log: zerolog.Nop()}
	st := newPeerState(1, 2)
	old := time.Now().Add(-txRequestExpiry - time.Second)
	for i := range maxTxRequests {
		st.txRequested[chainhash.Hash{byte(i), byte(i >> 8), 1}] = old
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
	announce(chainhash.Hash{9})
	if asked != 1 || len(st.txRequested) != 1 {
		t.Fatalf("asked %d, %d outstanding; want the stale requests dropped", asked, len(st.txRequested))
	}
	for i := range maxTxRequests - 1 {
		st.txRequested[chainhash.Hash{byte(i), byte(i >> 8), 2}] = time.Now()
	}
	announce(chainhash.Hash{10})
	if asked != 1 {
		t.Fatalf("asked for a transaction with %d fresh requests outstanding", len(st.txRequested))
	}
}
