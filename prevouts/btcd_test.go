package prevouts

import (
	"bytes"
	"context"
	"errors"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/nodeclient"
)

// Against a real btcd v0.26.2 with --txindex: detection picks the txindex
// mode, and every block of a transaction-rich chain comes back identical to
// what btcd serves, with the spent scripts a replay of the chain from
// genesis computes independently.
func TestBtcdTxIndexSource(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	n := btcdtest.Start(t, btcdtest.Options{TxIndex: true})
	const richBlocks = 4
	if err := btcdtest.BuildTxRichChain(ctx, n, n.Wallet(), richBlocks); err != nil {
		t.Fatal(err)
	}
	c, err := nodeclient.NewClient(nodeclient.Config{Host: n.RPCHost(), User: n.User(), Password: n.Password(), Timeout: 10 * time.Second}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()

	info, err := c.GetNodeInfo(ctx)
	if err != nil || info.Kind != nodeclient.NodeBtcd {
		t.Fatalf("node info %+v, %v", info, err)
	}
	src, err := DetectSource(ctx, c, testLogger(t), SourceOptions{BatchSize: 3})
	if err != nil {
		t.Fatal(err)
	}
	if src.Mode() != ModeTxIndex {
		t.Fatalf("mode %s, want %s", src.Mode(), ModeTxIndex)
	}
	ci, err := c.GetChainInfo(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.CheckGenesis(ctx, *n.Params().GenesisHash); err != nil {
		t.Fatal(err)
	}

	// One getblockhash batch gives what one call per height gives, and
	// a height past the tip fails the batch.
	batch, err := c.GetBlockHashes(ctx, 0, ci.Blocks+1)
	if err != nil {
		t.Fatal(err)
	}
	for h, got := range batch {
		if want, err := c.GetBlockHash(ctx, int64(h)); err != nil || got != want {
			t.Fatalf("height %d: batch %s, single %s (%v)", h, got, want, err)
		}
	}
	if _, err := c.GetBlockHashes(ctx, ci.Blocks, 2); err == nil {
		t.Fatal("getblockhash batch past the tip succeeded")
	}

	// Walk the chain from genesis, keeping every output, so each block's
	// spent scripts are known without asking btcd.
	outputs := map[wire.OutPoint][]byte{}
	spentTotal := 0
	for height := int64(0); height <= int64(ci.Blocks); height++ {
		hash, err := c.GetBlockHash(ctx, height)
		if err != nil {
			t.Fatal(err)
		}
		var want [][]byte
		ref, err := n.Block(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		for i, tx := range ref.Transactions {
			if i > 0 {
				for _, in := range tx.TxIn {
					want = append(want, outputs[in.PreviousOutPoint])
				}
			}
			for idx, out := range tx.TxOut {
				outputs[wire.OutPoint{Hash: tx.TxHash(), Index: uint32(idx)}] = out.PkScript
			}
		}
		if height == 0 {
			continue // genesis: nothing spent, and btcd cannot serve its coinbase
		}
		blk, prev, err := src.FetchBlock(ctx, hash)
		if err != nil {
			t.Fatalf("height %d: %v", height, err)
		}
		if !bytes.Equal(serializeBlock(t, blk), serializeBlock(t, ref)) {
			t.Fatalf("height %d: block differs", height)
		}
		if !equalScripts(prev, want) {
			t.Fatalf("height %d: prevScripts differ", height)
		}
		spentTotal += len(want)
		hi, err := c.GetBlockHeaderVerbose(ctx, hash)
		if err != nil || hi.Height != uint32(height) || hi.PrevHash != ref.Header.PrevBlock || !hi.Time.Equal(ref.Header.Timestamp) {
			t.Fatalf("height %d: header info %+v, %v", height, hi, err)
		}
	}
	if spentTotal < 10*(richBlocks-1) {
		t.Fatalf("only %d spends checked", spentTotal)
	}
	if _, _, err := src.FetchBlock(ctx, chainhash.Hash{3}); !errors.Is(err, nodeclient.ErrBlockNotFound) {
		t.Fatalf("unknown block on btcd: %v, want nodeclient.ErrBlockNotFound", err)
	}
}

// A btcd without --txindex cannot serve spent scripts at all; detection
// says which flag to turn on.
func TestBtcdWithoutTxIndex(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	n := btcdtest.Start(t, btcdtest.Options{})
	if _, err := n.Generate(ctx, 2); err != nil {
		t.Fatal(err)
	}
	c, err := nodeclient.NewClient(nodeclient.Config{Host: n.RPCHost(), User: n.User(), Password: n.Password()}, testLogger(t))
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	_, err = DetectSource(ctx, c, testLogger(t))
	if !errors.Is(err, nodeclient.ErrNoPrevoutSource) || !bytes.Contains([]byte(err.Error()), []byte("--txindex")) {
		t.Fatalf("got %v, want nodeclient.ErrNoPrevoutSource naming --txindex", err)
	}
}
