package bloom_test

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"os"
	"strconv"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2"
	btcbloom "github.com/btcsuite/btcd/btcutil/v2/bloom"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
)

// envInt reads a positive integer knob, or def.
func envInt(name string, def int) int {
	if v, err := strconv.Atoi(os.Getenv(name)); err == nil && v > 0 {
		return v
	}
	return def
}

// diffChain is a btcd regtest chain for the differential: tx-rich blocks
// (every standard script kind, spends of the previous block's outputs)
// and one block of many wallet payments, so partial merkle trees are deep.
type diffChain struct {
	node   *btcdtest.Node
	blocks []*wire.MsgBlock
	txids  [][]chainhash.Hash
	// pool holds real output pushes, txids and serialized outpoints.
	pool [][]byte
}

func buildDiffChain(ctx context.Context, t *testing.T, richBlocks, payments int) *diffChain {
	t.Helper()
	node := btcdtest.Start(t, btcdtest.Options{})
	w := node.Wallet()
	if err := btcdtest.BuildTxRichChain(ctx, node, w, richBlocks); err != nil {
		t.Fatal(err)
	}
	kinds := []btcdtest.Kind{btcdtest.KindP2PKH, btcdtest.KindP2WPKH, btcdtest.KindP2TR, btcdtest.KindP2PK,
		btcdtest.KindBareMultisig, btcdtest.KindP2SHMultisig, btcdtest.KindP2WSH}
	sent := 0
	for i := range payments {
		script, err := w.NewScript(kinds[i%len(kinds)])
		if err != nil {
			t.Fatal(err)
		}
		if _, err := w.Send(ctx, node, []*wire.TxOut{wire.NewTxOut(20_000, script)}); err != nil {
			if errors.Is(err, btcdtest.ErrInsufficientFunds) {
				break
			}
			t.Fatal(err)
		}
		sent++
	}
	if _, err := node.Generate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	_, tip, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c := &diffChain{node: node}
	for h := int32(1); h <= tip; h++ {
		hash, err := node.BlockHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		blk, err := node.Block(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		c.blocks = append(c.blocks, blk)
		c.txids = append(c.txids, bloom.BlockTxids(blk))
		for i, tx := range blk.Transactions {
			id := c.txids[h-1][i]
			c.pool = append(c.pool, id[:])
			for _, out := range tx.TxOut {
				pushes, _ := txscript.PushedData(out.PkScript)
				for _, p := range pushes {
					if len(p) > 0 {
						c.pool = append(c.pool, p)
					}
				}
			}
			for _, in := range tx.TxIn {
				op := in.PreviousOutPoint
				c.pool = append(c.pool, append(op.Hash[:len(op.Hash):len(op.Hash)], byte(op.Index), byte(op.Index>>8), byte(op.Index>>16), byte(op.Index>>24)))
			}
		}
	}
	last := c.blocks[len(c.blocks)-1]
	t.Logf("btcd chain: %d blocks, %d payments in the last block (%d transactions)", len(c.blocks), sent, len(last.Transactions))
	return c
}

// randomFilter draws a wallet-like filter: some real elements of the chain
// and some random ones, at a random rate, in mode. It never holds the empty
// element, whose matching btcd and Core disagree on (doc.go, difference 2).
func (c *diffChain) randomFilter(rng *rand.Rand, mode wire.BloomUpdateType) *bloom.Filter {
	fprs := []float64{0.2, 0.05, 0.01, 0.001, 0.0001}
	for {
		n := 1 + rng.IntN(60)
		p, err := bloom.ParamsFor(n, fprs[rng.IntN(len(fprs))])
		if err != nil {
			panic(err)
		}
		f := bloom.New(p, rng.Uint32(), mode)
		for range n {
			if rng.IntN(3) == 0 {
				var e [20]byte
				for i := range e {
					e[i] = byte(rng.Uint32())
				}
				f.Insert(e[:])
				continue
			}
			f.Insert(c.pool[rng.IntN(len(c.pool))])
		}
		if !f.Contains(nil) {
			return f
		}
	}
}

func serializeTx(t *testing.T, tx *wire.MsgTx, witness bool) []byte {
	t.Helper()
	var buf bytes.Buffer
	var err error
	if witness {
		err = tx.Serialize(&buf)
	} else {
		err = tx.SerializeNoWitness(&buf)
	}
	if err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// TestFilteredBlocksEqualBtcd is the BIP-37 differential against btcd, the
// oracle the serving phase will be held to: over one raw P2P connection
// btcd gets seeded random filterload / filteradd / filterclear sequences
// in all three update modes and getdata for MSG_FILTERED_BLOCK and
// MSG_FILTERED_WITNESS_BLOCK over every block of a tx-rich chain (batches
// of 1–32 blocks); FilterBlock run on the same blocks with a model of the
// same filter must give byte-identical merkleblock and tx payloads, in the
// same order — so the filter updates (BLOOM_UPDATE_ALL, P2PUBKEY_ONLY) agree
// too, block after block. Transactions follow without witness for
// MSG_FILTERED_BLOCK and with it for MSG_FILTERED_WITNESS_BLOCK (btcd's
// choice; Core does not serve the witness variant). A mismatch on a filter
// that came to contain the empty element (documented difference 2) ends
// that sequence and is counted, provided btcd's answer is exactly what
// btcutil's bloom package (btcd's own matcher, run here on a copy of the
// filter) predicts; any other mismatch fails.
//
// CFINDEXD_TEST_BLOOM_DIFF_BLOCKS (tx-rich blocks, default 30) and
// CFINDEXD_TEST_BLOOM_DIFF_FILTERS (sequences, default 15) make it larger.
func TestFilteredBlocksEqualBtcd(t *testing.T) {
	if testing.Short() {
		t.Skip("starts btcd")
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	c := buildDiffChain(ctx, t, envInt("CFINDEXD_TEST_BLOOM_DIFF_BLOCKS", 30), 150)
	peer, err := p2pclient.Dial(ctx, c.node.P2PAddr(), p2pclient.Options{
		Params: c.node.Params(), Require: wire.SFNodeBloom, Services: wire.SFNodeWitness,
	})
	if err != nil {
		t.Fatal(err)
	}
	defer peer.Close()

	start := time.Now()
	rng := rand.New(rand.NewPCG(37, 2013))
	modes := []wire.BloomUpdateType{wire.BloomUpdateNone, wire.BloomUpdateAll, wire.BloomUpdateP2PubkeyOnly}
	sequences := envInt("CFINDEXD_TEST_BLOOM_DIFF_FILTERS", 15)
	var blocksCompared, txsCompared, adds, reloads, emptyElement int
	for seq := range sequences {
		mode := modes[seq%len(modes)]
		model := c.randomFilter(rng, mode)
		oracle := btcbloom.LoadFilter(model.MsgFilterLoad())
		if err := peer.LoadFilter(ctx, model); err != nil {
			t.Fatal(err)
		}
	sequence:
		for i := 0; i < len(c.blocks); {
			switch r := rng.IntN(10); {
			case r <= 2: // filteradd of a chain element
				e := c.pool[rng.IntN(len(c.pool))]
				if err := peer.Send(ctx, wire.NewMsgFilterAdd(e)); err != nil {
					t.Fatal(err)
				}
				if err := model.FilterAdd(e); err != nil {
					t.Fatal(err)
				}
				oracle.Add(e)
				adds++
			case r == 3: // filterclear, then a new filter
				if err := peer.Send(ctx, wire.NewMsgFilterClear()); err != nil {
					t.Fatal(err)
				}
				model = c.randomFilter(rng, mode)
				oracle = btcbloom.LoadFilter(model.MsgFilterLoad())
				if err := peer.LoadFilter(ctx, model); err != nil {
					t.Fatal(err)
				}
				reloads++
			}
			n := min(1+rng.IntN(32), len(c.blocks)-i)
			hashes := make([]chainhash.Hash, n)
			for j := range hashes {
				hashes[j] = c.blocks[i+j].BlockHash()
			}
			witness := rng.IntN(2) == 0
			got, err := peer.GetFilteredBlocks(ctx, hashes, witness)
			if err != nil {
				t.Fatalf("sequence %d blocks %d..%d: %v", seq, i+1, i+n, err)
			}
			for j, fb := range got {
				blk := c.blocks[i+j]
				want := bloom.FilterBlock(blk, c.txids[i+j], model)
				same := bytes.Equal(fb.RawMerkleBlock, want.MerkleBlock.Bytes()) && len(fb.RawTxs) == len(want.Txs)
				for k := 0; same && k < len(want.Txs); k++ {
					same = bytes.Equal(fb.RawTxs[k], serializeTx(t, want.Txs[k], witness))
				}
				predicted, _ := btcbloom.NewMerkleBlock(btcutil.NewBlock(blk), oracle)
				var predictedBytes bytes.Buffer
				if err := predicted.BtcEncode(&predictedBytes, wire.ProtocolVersion, wire.BaseEncoding); err != nil {
					t.Fatal(err)
				}
				if !bytes.Equal(fb.RawMerkleBlock, predictedBytes.Bytes()) {
					t.Fatalf("sequence %d block %d: btcd's merkleblock is not what btcutil's matcher predicts", seq, i+j+1)
				}
				if !same {
					if model.Contains(nil) {
						emptyElement++
						if err := peer.Send(ctx, wire.NewMsgFilterClear()); err != nil {
							t.Fatal(err)
						}
						break sequence
					}
					t.Fatalf("sequence %d (mode %v, witness %v) block %d %s: btcd sent a merkleblock of %d bytes and %d txs, we build %d bytes and %d txs (matched %v)",
						seq, mode, witness, i+j+1, blk.BlockHash(), len(fb.RawMerkleBlock), len(fb.RawTxs),
						len(want.MerkleBlock.Bytes()), len(want.Txs), want.Matched)
				}
				if _, err := fb.Verify(hashes[j]); err != nil {
					t.Fatalf("btcd's filtered block %d does not verify: %v", i+j+1, err)
				}
				blocksCompared++
				txsCompared += len(want.Txs)
			}
			i += n
		}
	}
	if blocksCompared < sequences*len(c.blocks)/2 {
		t.Fatalf("only %d filtered blocks compared", blocksCompared)
	}
	if txsCompared == 0 {
		t.Fatal("no transaction matched: the differential proved nothing")
	}
	t.Logf("%d filtered blocks and %d matched txs byte-identical to btcd's (%d filteradds, %d reloads, %d sequences ended by the empty element) in %v; %d bytes read",
		blocksCompared, txsCompared, adds, reloads, emptyElement, time.Since(start).Round(time.Millisecond), peer.BytesRead())
}
