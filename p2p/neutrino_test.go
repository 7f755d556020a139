package p2p

import (
	"bytes"
	"context"
	"fmt"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/lightninglabs/neutrino"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/lightclient"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/nodeclient"
)

const (
	// neutrinoChainBlocks is mined before neutrino connects: past two
	// checkpoint intervals so neutrino's getcfcheckpt returns checkpoints.
	neutrinoChainBlocks = 2500
	// neutrinoRichBlocks of those, at the top, carry transactions.
	neutrinoRichBlocks = 50
	// neutrinoSyncTimeout bounds each wait on neutrino's sync.
	neutrinoSyncTimeout = 90 * time.Second
)

// btcdChain fills a fakeView straight from btcd's RPC (getblockheader,
// getcfilter, getcfilterheader): the real indexer is tested elsewhere.
type btcdChain struct {
	node *btcdtest.Node
	view *fakeView
}

// fetchRange commits heights from..to of btcd's active chain into the view.
func (c *btcdChain) fetchRange(ctx context.Context, from, to int32) error {
	blocks := make([]*fakeBlock, to-from+1)
	var wg sync.WaitGroup
	errs := make(chan error, 8)
	next := make(chan int32)
	for w := 0; w < 8; w++ {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for h := range next {
				b, err := c.fetchBlock(ctx, h)
				if err != nil {
					select {
					case errs <- err:
					default:
					}
					continue
				}
				blocks[h-from] = b
			}
		}()
	}
	for h := from; h <= to; h++ {
		next <- h
	}
	close(next)
	wg.Wait()
	select {
	case err := <-errs:
		return err
	default:
	}
	// The filter headers must chain, or btcd and the view disagree.
	var prev chainhash.Hash
	if from > 0 {
		prev = c.view.at(uint32(from - 1)).filterHeader
	}
	for _, b := range blocks {
		fh := chainhash.DoubleHashH(b.filter)
		if chainhash.DoubleHashH(append(fh[:], prev[:]...)) != b.filterHeader {
			return fmt.Errorf("btcd filter header at %d does not chain", b.height)
		}
		prev = b.filterHeader
	}
	c.view.commit(blocks...)
	return nil
}

func (c *btcdChain) fetchBlock(ctx context.Context, h int32) (*fakeBlock, error) {
	hash, err := c.node.BlockHash(ctx, h)
	if err != nil {
		return nil, err
	}
	hdr, _, err := c.node.BlockHeader(ctx, hash)
	if err != nil {
		return nil, err
	}
	filter, err := c.node.CFilter(ctx, hash)
	if err != nil {
		return nil, err
	}
	fh, err := c.node.CFilterHeader(ctx, hash)
	if err != nil {
		return nil, err
	}
	return &fakeBlock{height: uint32(h), hash: hash, header: hdr, filter: filter, filterHeader: fh}, nil
}

func TestNeutrinoSyncsFromServer(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd and neutrino")
	}
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(3*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{Net: "regtest"})
	// Empty blocks, then blocks with every standard script kind so that
	// the filters compared below are not all coinbase-only.
	for mined := 0; mined < neutrinoChainBlocks-neutrinoRichBlocks; mined += 490 {
		if _, err := node.Generate(ctx, 490); err != nil {
			t.Fatalf("generate: %v", err)
		}
	}
	if err := btcdtest.BuildTxRichChain(ctx, node, node.Wallet(), neutrinoRichBlocks); err != nil {
		t.Fatal(err)
	}
	if _, height, err := node.BestBlock(ctx); err != nil || height != neutrinoChainBlocks {
		t.Fatalf("btcd at height %d (%v), want %d", height, err, neutrinoChainBlocks)
	}
	chain := &btcdChain{node: node, view: newFakeView(0, 0)}
	if err := chain.fetchRange(ctx, 0, neutrinoChainBlocks); err != nil {
		t.Fatal(err)
	}

	cfg := testConfig(chain.view)
	cfg.Params = node.Params()
	// Every cfilter frame, from the view and from a store, is btcd's, byte
	// for byte.
	compareCFilterFramesWithBtcd(t, node.P2PAddr(), cfg, chain.view)
	// Blocks and transactions go through the production node client.
	client, err := nodeclient.NewClient(nodeclient.Config{Host: node.RPCHost(), User: node.User(), Password: node.Password()}, testLogger())
	if err != nil {
		t.Fatal(err)
	}
	cfg.Blocks = nodeBlocks{client}
	cfg.Relay, cfg.RelayTx = nodeBlocks{client}, true
	metrics := newCountingMetrics()
	cfg.Metrics = metrics
	srv := startServer(t, cfg)

	// Neutrino talks to this server and nobody else.
	cs, err := lightclient.Start(ctx, t.TempDir(), node.Params(), srv.addr)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(cs.Close)

	waitSynced := func(height int32) {
		t.Helper()
		waitFor(t, fmt.Sprintf("neutrino synced to %d", height), neutrinoSyncTimeout, func() bool {
			best, err := cs.BestBlock()
			if err != nil || best.Height < height {
				return false
			}
			_, fh, err := cs.RegFilterHeaders.ChainTip()
			return err == nil && int32(fh) >= height
		})
	}
	start := time.Now()
	waitSynced(neutrinoChainBlocks)
	t.Logf("neutrino synced %d headers and filter headers in %v", neutrinoChainBlocks, time.Since(start).Round(time.Millisecond))

	// Every filter neutrino returns equals btcd's getcfilter.
	start = time.Now()
	for h := uint32(0); h <= neutrinoChainBlocks; h++ {
		b := chain.view.at(h)
		f, err := cs.GetCFilter(b.hash, wire.GCSFilterRegular, neutrino.OptimisticBatch())
		if err != nil {
			t.Fatalf("GetCFilter at %d: %v", h, err)
		}
		got, err := f.NBytes()
		if err != nil {
			t.Fatal(err)
		}
		if !bytes.Equal(got, b.filter) {
			t.Fatalf("filter at %d differs from btcd's getcfilter", h)
		}
	}
	t.Logf("%d filters fetched and compared in %v", neutrinoChainBlocks+1, time.Since(start).Round(time.Millisecond))

	for _, h := range []uint32{1, 1234, neutrinoChainBlocks} {
		hash := chain.view.at(h).hash
		blk, err := cs.GetBlock(hash)
		if err != nil {
			t.Fatalf("GetBlock at %d: %v", h, err)
		}
		if *blk.Hash() != hash {
			t.Fatalf("GetBlock at %d returned %s", h, blk.Hash())
		}
	}

	// A block the view knows (a stale one) but the node does not: the
	// node client's "not found" becomes notfound on the wire.
	ghost := chain.view.makeBranch(chain.view.at(10), 1)[0]
	chain.view.addStale(ghost)
	raw, _ := connect(t, srv.addr)
	gd := wire.NewMsgGetData()
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, &ghost.hash))
	_ = gd.AddInvVect(wire.NewInvVect(wire.InvTypeWitnessBlock, hashPtr(chain.view.at(7).hash)))
	raw.send(gd)
	if got := raw.sync(); len(got) != 2 {
		t.Fatalf("getdata answered with %d messages, want notfound and block", len(got))
	} else if nf, ok := got[1].(*wire.MsgNotFound); !ok || nf.InvList[0].Hash != ghost.hash {
		t.Fatalf("want notfound for the block btcd lacks, got %v", got[1])
	}

	// New blocks reach neutrino once the view commits them.
	if _, err := node.Generate(ctx, 3); err != nil {
		t.Fatal(err)
	}
	if err := chain.fetchRange(ctx, neutrinoChainBlocks+1, neutrinoChainBlocks+3); err != nil {
		t.Fatal(err)
	}
	waitSynced(neutrinoChainBlocks + 3)
	tip := chain.view.tipBlock()
	f, err := cs.GetCFilter(tip.hash, wire.GCSFilterRegular)
	if err != nil {
		t.Fatal(err)
	}
	if got, _ := f.NBytes(); !bytes.Equal(got, tip.filter) {
		t.Fatal("filter of the new tip differs from btcd's")
	}

	// A wallet's transaction goes neutrino → inv → getdata → tx → the
	// node's mempool.
	wallet := node.Wallet()
	if err := wallet.Sync(ctx, node); err != nil {
		t.Fatal(err)
	}
	tx, err := wallet.Fund([]*wire.TxOut{wire.NewTxOut(1_000_000, wallet.MiningScript())}, 10)
	if err != nil {
		t.Fatal(err)
	}
	if err := cs.SendTransaction(tx); err != nil {
		t.Fatalf("neutrino SendTransaction: %v", err)
	}
	waitFor(t, "transaction in btcd's mempool", neutrinoSyncTimeout, func() bool {
		var pool []string
		return node.Call(ctx, "getrawmempool", nil, &pool) == nil && len(pool) == 1 && pool[0] == tx.TxHash().String()
	})

	if cs.IsBanned(srv.addr) {
		t.Fatal("neutrino banned cfindexd")
	}
	if n := cs.ConnectedCount(); n != 1 {
		t.Fatalf("neutrino has %d peers, want 1 (this server)", n)
	}
	// Neutrino went through every BIP-157 request this server answers.
	for _, cmd := range []string{"getheaders", "getcfcheckpt", "getcfheaders", "getcfilters", "getdata", "inv", "tx"} {
		if metrics.received(cmd) == 0 {
			t.Errorf("neutrino never sent %s", cmd)
		}
	}
	t.Logf("served: %v", metrics.summary())
}
