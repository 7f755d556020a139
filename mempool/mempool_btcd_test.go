package mempool

import (
	"context"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// mempoolDeadline is the promise: subscribers hear of a new
// transaction within 2 s.
const mempoolDeadline = 2 * time.Second

// Against a real btcd (no ZMQ: the mirror polls getrawmempool, here every
// 500 ms to leave a busy machine room, and fetches new transactions with one getrawtransaction
// batch): transactions the test wallet sends reach a subscriber within 2 s,
// identical to what was sent (witness included); a block mining them
// removes them at the next poll, or at once through BlockConnected.
func TestMempoolMirrorFollowsBtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	n := btcdtest.Start(t, btcdtest.Options{})
	if _, err := n.Generate(ctx, 110); err != nil {
		t.Fatal(err)
	}
	w := n.Wallet()
	if err := w.Sync(ctx, n); err != nil {
		t.Fatal(err)
	}
	c, err := nodeclient.NewClient(nodeclient.Config{Host: n.RPCHost(), User: n.User(), Password: n.Password(), Timeout: 10 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	m := newTestMirror(t, clientSource{c}, Config{PollInterval: 500 * time.Millisecond})
	sub := m.Subscribe(64)
	defer runMirror(ctx, t, m)()

	var sent []*wire.MsgTx
	for i := range 5 {
		script, err := w.NewScript(btcdtest.Kind(i % 3))
		if err != nil {
			t.Fatal(err)
		}
		tx, err := w.Send(ctx, n, []*wire.TxOut{wire.NewTxOut(100_000, script)})
		if err != nil {
			t.Fatal(err)
		}
		at := time.Now()
		select {
		case got := <-sub.C():
			if got.Txid != tx.TxHash() {
				t.Fatalf("subscriber got %s, want %s", got.Txid, tx.TxHash())
			}
			t.Logf("tx %d reached the subscriber %v after sendrawtransaction returned", i, time.Since(at).Round(time.Millisecond))
		case <-time.After(mempoolDeadline):
			t.Fatalf("tx %s not delivered within %v", tx.TxHash(), mempoolDeadline)
		}
		sent = append(sent, tx)
	}
	for _, tx := range sent {
		held, ok := m.Get(tx.TxHash())
		if !ok || held.Tx.TxHash() != tx.TxHash() || held.Tx.WitnessHash() != tx.WitnessHash() {
			t.Fatalf("mirror does not hold %s as sent", tx.TxHash())
		}
	}
	if _, err := n.Generate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	waitUntil(t, mempoolDeadline+time.Second, "mined transactions to leave the mirror", func() bool { return m.Stats().Transactions == 0 })
	if s := m.Stats(); s.Removed != uint64(len(sent)) || s.Added != uint64(len(sent)) {
		t.Fatalf("stats %+v, want %d added and removed", s, len(sent))
	}
	// The block is gone from the mirror even when a caller tells it
	// before the next poll does.
	tx, err := w.Send(ctx, n, []*wire.TxOut{wire.NewTxOut(50_000, w.MiningScript())})
	if err != nil {
		t.Fatal(err)
	}
	waitUntil(t, mempoolDeadline, "the next tx", func() bool { _, ok := m.Get(tx.TxHash()); return ok })
	hashes, err := n.Generate(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := c.GetRawBlock(ctx, hashes[0])
	if err != nil {
		t.Fatal(err)
	}
	m.BlockConnected(blk)
	if _, ok := m.Get(tx.TxHash()); ok {
		t.Fatal("BlockConnected left a mined transaction in the mirror")
	}
	// GetMempoolTransactions returns nil, not an error, for a transaction
	// the node does not have.
	raws, err := c.GetMempoolTransactions(ctx, []chainhash.Hash{tx.TxHash(), {1}})
	if err != nil || raws[0] != nil || raws[1] != nil {
		t.Fatalf("fetching gone transactions: %v %v", raws, err)
	}
}

// clientSource adapts the node client to Source, as cmd/cfindexd does.
type clientSource struct{ *nodeclient.Client }

func (s clientSource) GetRawMempool(ctx context.Context, withSequence bool) (Snapshot, error) {
	snap, err := s.Client.GetRawMempool(ctx, withSequence)
	return Snapshot(snap), err
}
