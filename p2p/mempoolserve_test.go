package p2p

import (
	"bytes"
	"net/netip"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/p2p/msgread"
)

// payTo is a mempool transaction paying a P2PKH script of key, distinct
// per seed, with a witness on its input.
func payTo(key []byte, seed byte) *wire.MsgTx {
	tx := wire.NewMsgTx(2)
	tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: chainhash.Hash{seed, 0xa1}, Index: 1},
		Witness: wire.TxWitness{{seed, 1, 2}, {3, 4}}, Sequence: 0xfffffffd})
	tx.AddTxOut(wire.NewTxOut(12345, p2pkhScript(key)))
	return tx
}

// awaitInv reads until an inv holding want arrives, within limit; it
// returns the inv and how long it took.
func awaitInv(t *testing.T, c *rawClient, want chainhash.Hash, limit time.Duration) (*wire.MsgInv, time.Duration) {
	t.Helper()
	start := time.Now()
	deadline := start.Add(limit)
	for time.Now().Before(deadline) {
		m, err := c.tryRead(time.Until(deadline))
		if err != nil {
			break
		}
		if inv, ok := m.(*wire.MsgInv); ok {
			for _, iv := range inv.InvList {
				if iv.Hash == want {
					return inv, time.Since(start)
				}
			}
		}
	}
	t.Fatalf("no inv of %s within %v", want, limit)
	return nil, 0
}

// invHashes returns the hashes of every inv among msgs.
func invHashes(msgs []wire.Message) map[chainhash.Hash]wire.InvType {
	out := map[chainhash.Hash]wire.InvType{}
	for _, m := range msgs {
		if inv, ok := m.(*wire.MsgInv); ok {
			for _, iv := range inv.InvList {
				out[iv.Hash] = iv.Type
			}
		}
	}
	return out
}

// A new mempool transaction matching a peer's filter is announced to it
// (inv by txid) within 2 s, and served by getdata, without witness for
// MSG_TX and with it for MSG_WITNESS_TX; one that does not match is not
// announced; one that arrived after the last inv is not served (a peer
// cannot probe the mempool); peers without a filter get no announcements,
// whatever their relay flag.
func TestMempoolAnnouncements(t *testing.T) {
	c := newBloomChain(t, 3, 1, 7)
	pool := newFakeMempool()
	cfg := c.bloomConfig()
	cfg.Bloom.Mempool = mirrorMempool{startMirror(t, pool)}
	srv := startServer(t, cfg)

	wallet := connectRelay(t, srv.addr, false)
	watcher := connectRelay(t, srv.addr, true) // relay on, no filter
	key := []byte("a wallet's pubkey hash")[:20]
	wallet.send(walletFilter(t, wire.BloomUpdateAll, key).MsgFilterLoad())
	wallet.sync()

	mine, other := payTo(key, 1), payTo([]byte("someone else's hash!")[:20], 2)
	pool.add(t, other)
	pool.add(t, mine)
	inv, took := awaitInv(t, wallet, mine.TxHash(), testtime.Scale(2*time.Second))
	t.Logf("matching mempool transaction announced after %v", took)
	if len(inv.InvList) != 1 || inv.InvList[0].Type != wire.InvTypeTx {
		t.Fatalf("inv %v, want the matching transaction alone, as MSG_TX", inv.InvList)
	}

	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeTx, hashPtr(mine.TxHash())))
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessTx, hashPtr(mine.TxHash())))
	wallet.send(gd)
	got := wallet.sync()
	if len(got) != 2 {
		t.Fatalf("%d answers to getdata, want two transactions", len(got))
	}
	if tx := got[0].(*wire.MsgTx); tx.HasWitness() || tx.TxHash() != mine.TxHash() {
		t.Error("MSG_TX: wrong transaction or witness kept")
	}
	if tx := got[1].(*wire.MsgTx); !tx.HasWitness() || tx.WitnessHash() != mine.WitnessHash() {
		t.Error("MSG_WITNESS_TX: wrong transaction or witness stripped")
	}

	// A transaction that arrived after the last inv is not served.
	late := payTo([]byte("a third party's key"), 3)
	pool.add(t, late)
	waitFor(t, "the mirror to hold it", ioTimeout, func() bool { _, ok := cfg.Bloom.Mempool.Get(late.TxHash()); return ok })
	gd = wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeTx, hashPtr(late.TxHash())))
	wallet.send(gd)
	if got := wallet.sync(); len(got) != 1 {
		t.Fatalf("%d answers, want a notfound", len(got))
	} else if _, ok := got[0].(*wire.MsgNotFound); !ok {
		t.Fatalf("getdata of a transaction never announced: %T, want notfound", got[0])
	}

	// The relay-on peer without a filter was told nothing.
	if h := invHashes(watcher.sync()); len(h) != 0 {
		t.Fatalf("a peer without a filter was announced %d transactions", len(h))
	}

	// filterclear turns relay on (Core) but leaves no filter: nothing more
	// is announced (cfindexd is not a relay node), while a wallet that
	// still has the filter hears of the next payment.
	second := connectRelay(t, srv.addr, false)
	second.send(walletFilter(t, wire.BloomUpdateAll, key).MsgFilterLoad())
	second.sync()
	wallet.send(wire.NewMsgFilterClear())
	wallet.sync()
	next := payTo(key, 4)
	pool.add(t, next)
	awaitInv(t, second, next.TxHash(), testtime.Scale(2*time.Second))
	if h := invHashes(wallet.sync()); len(h) != 0 {
		t.Fatalf("announced %d transactions after filterclear", len(h))
	}
}

// connectRelay completes a handshake announcing relay (version fRelay).
func connectRelay(t *testing.T, addr string, relay bool, extra ...wire.Message) *rawClient {
	t.Helper()
	c := dial(t, addr)
	me := wire.NewNetAddressIPPort([]byte{127, 0, 0, 1}, 0, 0)
	v := wire.NewMsgVersion(me, me, 43, 0)
	v.DisableRelayTx = !relay
	c.send(v)
	for gotVerAck := false; !gotVerAck; {
		switch m := c.read().(type) {
		case *wire.MsgVersion:
			if m.Services&wire.SFNodeBloom == 0 {
				t.Fatal("NODE_BLOOM not offered")
			}
		case *wire.MsgVerAck:
			gotVerAck = true
		}
	}
	for _, m := range extra {
		c.send(m)
	}
	c.send(wire.NewMsgVerAck())
	return c
}

// mempool (BIP-35) is answered with an inv of the mirror's transactions
// that match the filter (every one without a filter, as Core), after which
// they are served; a wtxidrelay peer is told wtxids (MSG_WTX) and served
// by them; with the upload target reached, mempool disconnects the peer
// (unless whitelisted), as Core.
func TestMempoolRequest(t *testing.T) {
	c := newBloomChain(t, 3, 1, 8)
	pool := newFakeMempool()
	mirror := startMirror(t, pool)
	var txs []*wire.MsgTx
	keys := [][]byte{[]byte("key number zero....."), []byte("key number one......"), []byte("key number two......")}
	for i, k := range keys {
		tx := payTo(k, byte(10+i))
		txs = append(txs, tx)
		pool.add(t, tx)
	}
	waitFor(t, "the mirror", ioTimeout, func() bool { return mirror.LastSeq() == 3 })
	cfg := c.bloomConfig()
	cfg.Bloom.Mempool = mirrorMempool{mirror}
	srv := startServer(t, cfg)

	filtered := connectRelay(t, srv.addr, false)
	filtered.send(walletFilter(t, wire.BloomUpdateNone, keys[0], keys[2]).MsgFilterLoad())
	filtered.send(wire.NewMsgMemPool())
	inv, _ := awaitInv(t, filtered, txs[2].TxHash(), ioTimeout)
	if seen := invHashes([]wire.Message{inv}); len(seen) != 2 || seen[txs[0].TxHash()] != wire.InvTypeTx {
		t.Fatalf("filtered mempool answer %v, want transactions 0 and 2", inv.InvList)
	}

	unfiltered := connectRelay(t, srv.addr, false, wire.NewMsgWTxIdRelay())
	unfiltered.send(wire.NewMsgMemPool())
	inv, _ = awaitInv(t, unfiltered, txs[0].WitnessHash(), ioTimeout)
	seen := invHashes([]wire.Message{inv})
	for _, tx := range txs {
		if seen[tx.WitnessHash()] != msgread.InvTypeWTx {
			t.Fatalf("unfiltered mempool answer lacks %s as MSG_WTX: %v", tx.WitnessHash(), seen)
		}
	}
	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(msgread.InvTypeWTx, hashPtr(txs[1].WitnessHash())))
	unfiltered.send(gd)
	answers := unfiltered.sync()
	if len(answers) != 1 || !bytes.Equal(encodeTx(t, answers[0].(*wire.MsgTx), true), encodeTx(t, txs[1], true)) {
		t.Fatalf("getdata MSG_WTX: %v", answers)
	}

	// Another filter, another answer.
	f2 := connectRelay(t, srv.addr, false)
	f2.send(walletFilter(t, wire.BloomUpdateNone, keys[1]).MsgFilterLoad())
	f2.send(wire.NewMsgMemPool())
	inv, _ = awaitInv(t, f2, txs[1].TxHash(), ioTimeout)
	if len(inv.InvList) != 1 {
		t.Fatalf("filtered mempool answer %v, want one transaction", inv.InvList)
	}

	// Upload target reached: mempool disconnects, whitelisted peers are
	// ignored instead.
	cfg.MaxUploadTarget = 1
	m := newCountingMetrics()
	cfg.Metrics = m
	srv2 := startServer(t, cfg)
	srv2.env.upload.Add(0, 10, time.Now())
	cl := connectRelay(t, srv2.addr, false)
	cl.send(wire.NewMsgMemPool())
	cl.expectDisconnect()
	waitFor(t, "upload_target disconnect", ioTimeout, func() bool { return m.disconnects("upload_target") == 1 })
	if srv2.Discouraged(netip.MustParseAddr("127.0.0.1")) {
		t.Fatal("discouraged for a mempool request over the upload target")
	}
}
