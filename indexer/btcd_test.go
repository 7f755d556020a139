package indexer

import (
	"context"
	"fmt"
	"os"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/nodeclient"
	"github.com/cfindexd/cfindexd/prevouts"
	"github.com/cfindexd/cfindexd/store"
)

// txRichBlocks is the length of the tx-rich part of the btcd test chain.
const txRichBlocks = 1000

// btcdOracle fails the test on any difference between the store and btcd.
type btcdOracle struct {
	t    *testing.T
	node *btcdtest.Node
}

// filterAt asks btcd for the filter and filter header of a block.
func (o btcdOracle) filterAt(ctx context.Context, hash chainhash.Hash) ([]byte, chainhash.Hash) {
	o.t.Helper()
	f, h, err := o.node.FilterOf(ctx, hash)
	if err != nil {
		o.t.Fatal(err)
	}
	return f, h
}

// checkEqualsNode asserts the store's active chain equals btcd's from height
// from to the tip.
func (o btcdOracle) checkEqualsNode(ctx context.Context, st *store.Store, from uint32) {
	o.t.Helper()
	if err := o.node.CompareStore(ctx, st, from); err != nil {
		o.t.Fatal(err)
	}
}

// waitTip waits until the store's tip is hash and returns how long it took.
// limit is stretched for a slow or busy machine (testtime.Scale): it bounds
// a failure, it does not measure speed.
func waitTip(t *testing.T, st *store.Store, hash chainhash.Hash, limit time.Duration) time.Duration {
	t.Helper()
	start := time.Now()
	limit = testtime.Scale(limit)
	deadline := time.NewTimer(limit)
	defer deadline.Stop()
	for {
		changed := st.TipChanged()
		if tip, ok := st.Tip(); ok && tip.Hash == hash {
			return time.Since(start)
		}
		select {
		case <-changed:
		case <-deadline.C:
			tip, _ := st.Tip()
			t.Fatalf("store tip %d %s did not reach %s within %s", tip.Height, tip.Hash, hash, limit)
		}
	}
}

func testLogger(t *testing.T) zerolog.Logger {
	if os.Getenv("CFINDEXD_TEST_LOG") != "" {
		return zerolog.New(zerolog.ConsoleWriter{Out: os.Stderr}).With().Timestamp().Str("test", t.Name()).Logger()
	}
	return zerolog.Nop()
}

// btcdSource connects a client to node's RPC (closed when the test ends)
// and detects its prevout source, as the daemon does at start.
func btcdSource(ctx context.Context, t *testing.T, node *btcdtest.Node, log zerolog.Logger) (*nodeclient.Client, prevouts.BlockSource) {
	t.Helper()
	client, err := nodeclient.NewClient(nodeclient.Config{Host: node.RPCHost(), User: node.User(), Password: node.Password()}, log)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(client.Close)
	source, err := prevouts.DetectSource(ctx, client, log)
	if err != nil {
		t.Fatal(err)
	}
	return client, source
}

// TestIndexerAgainstBtcd syncs a tx-rich regtest chain from a real btcd,
// follows new blocks over the poll path, and survives reorgs of depth 1, 6
// and 50 made with invalidateblock and with competing side branches; after
// each step every filter and filter header equals btcd's own.
func TestIndexerAgainstBtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(10*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 11})
	oracle := btcdOracle{t: t, node: node}
	began := time.Now()
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), txRichBlocks); err != nil {
		t.Fatalf("build chain: %v", err)
	}
	t.Logf("built a %d-block tx-rich chain in %s", txRichBlocks, time.Since(began).Round(time.Millisecond))

	log := testLogger(t)
	client, source := btcdSource(ctx, t, node, log)
	if source.Mode() != prevouts.ModeTxIndex {
		t.Fatalf("btcd with --txindex: detected %s, want %s", source.Mode(), prevouts.ModeTxIndex)
	}
	st := openStore(t, *node.Params().GenesisHash)
	f := NewFollower(Config{Genesis: *node.Params().GenesisHash, Workers: 4, BatchBlocks: 200}, client, source, st, nil, nil, log)

	began = time.Now()
	if err := f.Sync(ctx); err != nil {
		t.Fatalf("catch-up: %v", err)
	}
	tip, _ := st.Tip()
	t.Logf("caught up %d blocks in %s", tip.Height+1, time.Since(began).Round(time.Millisecond))
	oracle.checkEqualsNode(ctx, st, 0)

	// From here on the follower runs as in production: default poll
	// interval, no notifications.
	runCtx, stop := context.WithCancel(ctx)
	done := make(chan error, 1)
	go func() { done <- f.Run(runCtx) }()
	defer func() {
		stop()
		if err := <-done; err != nil {
			t.Errorf("Run: %v", err)
		}
	}()

	t.Run("new blocks indexed by polling", func(t *testing.T) {
		w := node.Wallet()
		for i := range 5 {
			script, err := w.NewScript(btcdtest.KindP2WPKH)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := w.Send(ctx, node, []*wire.TxOut{{Value: 10_000, PkScript: script}}); err != nil {
				t.Fatal(err)
			}
			hashes, err := node.Generate(ctx, 1)
			if err != nil {
				t.Fatal(err)
			}
			took := waitTip(t, st, hashes[0], 20*time.Second)
			t.Logf("block %d indexed %s after generate returned", i, took.Round(time.Millisecond))
			if err := w.Sync(ctx, node); err != nil {
				t.Fatal(err)
			}
		}
		oracle.checkEqualsNode(ctx, st, tip.Height)
	})

	for _, depth := range []int{1, 6, 50} {
		t.Run(fmt.Sprintf("invalidateblock reorg depth %d", depth), func(t *testing.T) {
			stale := staleTop(ctx, t, oracle, st, depth)
			_, bestHeight, err := node.BestBlock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			first, err := node.BlockHash(ctx, bestHeight-int32(depth)+1)
			if err != nil {
				t.Fatal(err)
			}
			if err := node.InvalidateBlock(ctx, first); err != nil {
				t.Fatal(err)
			}
			hashes, err := node.Generate(ctx, depth+1)
			if err != nil {
				t.Fatal(err)
			}
			waitTip(t, st, hashes[len(hashes)-1], 30*time.Second)
			oracle.checkEqualsNode(ctx, st, uint32(bestHeight)-uint32(depth)-1)
			checkStale(t, st, stale)
			if err := node.Wallet().Sync(ctx, node); err != nil {
				t.Fatal(err)
			}
		})
	}

	for _, depth := range []int{1, 6, 50} {
		t.Run(fmt.Sprintf("side branch reorg depth %d", depth), func(t *testing.T) {
			stale := staleTop(ctx, t, oracle, st, depth)
			_, bestHeight, err := node.BestBlock(ctx)
			if err != nil {
				t.Fatal(err)
			}
			forkHeight := bestHeight - int32(depth)
			prev, err := node.BlockHash(ctx, forkHeight)
			if err != nil {
				t.Fatal(err)
			}
			prevHeader, _, err := node.BlockHeader(ctx, prev)
			if err != nil {
				t.Fatal(err)
			}
			prevTime := prevHeader.Timestamp
			coinbase := append([]byte{0x51, 0x20}, make([]byte, 32)...) // a P2TR-shaped script nobody owns
			coinbase[2] = byte(depth)
			var last chainhash.Hash
			for i := range depth + 1 {
				blk := btcdtest.MineBlockOn(node.Params(), prev, forkHeight+int32(i), prevTime, nil, coinbase)
				if err := node.SubmitBlock(ctx, blk); err != nil {
					t.Fatalf("submitblock %d of branch: %v", i, err)
				}
				prev, prevTime = blk.BlockHash(), blk.Header.Timestamp
				last = prev
			}
			waitTip(t, st, last, 30*time.Second)
			oracle.checkEqualsNode(ctx, st, uint32(forkHeight))
			checkStale(t, st, stale)
			if err := node.Wallet().Sync(ctx, node); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// staleRecord is what the store must still serve for a block a reorg is
// about to disconnect, as btcd computed it while the block was active.
type staleRecord struct {
	hash   chainhash.Hash
	filter []byte
	header chainhash.Hash
}

// staleTop records btcd's filters of the top depth blocks before a reorg.
func staleTop(ctx context.Context, t *testing.T, o btcdOracle, st *store.Store, depth int) []staleRecord {
	t.Helper()
	best, bestHeight, err := o.node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	waitTip(t, st, best, 30*time.Second)
	var out []staleRecord
	for h := bestHeight - int32(depth) + 1; h <= bestHeight; h++ {
		hash, err := o.node.BlockHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		f, fh := o.filterAt(ctx, hash)
		out = append(out, staleRecord{hash: hash, filter: f, header: fh})
	}
	return out
}

// checkStale asserts each disconnected block is still served by hash, off
// the active chain, with the filter and header it had.
func checkStale(t *testing.T, st *store.Store, stale []staleRecord) {
	t.Helper()
	for _, s := range stale {
		rec, active, err := st.FilterByHash(s.hash)
		if err != nil {
			t.Fatalf("stale block %s: %v", s.hash, err)
		}
		if active {
			t.Fatalf("stale block %s still active", s.hash)
		}
		if string(rec.Filter) != string(s.filter) || rec.FilterHeader != s.header {
			t.Fatalf("stale block %s: filter %x header %s, was %x %s", s.hash, rec.Filter, rec.FilterHeader, s.filter, s.header)
		}
	}
}
