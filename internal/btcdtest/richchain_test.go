package btcdtest

import (
	"bytes"
	"context"
	"slices"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcutil/v2/gcs/builder"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// chainWalk replays a chain from genesis, keeping every output so each
// block's spent prevout scripts are known without btcd's help.
type chainWalk struct {
	outputs map[wire.OutPoint][]byte
}

// prevScripts returns blk's spent scripts in block order (the BIP-158 /
// indexer contract order) and records blk's outputs.
func (c *chainWalk) connect(t *testing.T, blk *wire.MsgBlock) [][]byte {
	t.Helper()
	var prev [][]byte
	for i, tx := range blk.Transactions {
		if i > 0 {
			for _, in := range tx.TxIn {
				s, ok := c.outputs[in.PreviousOutPoint]
				if !ok {
					t.Fatalf("block %s spends unknown output %v", blk.BlockHash(), in.PreviousOutPoint)
				}
				prev = append(prev, s)
				delete(c.outputs, in.PreviousOutPoint)
			}
		}
		txid := tx.TxHash()
		for idx, out := range tx.TxOut {
			c.outputs[wire.OutPoint{Hash: txid, Index: uint32(idx)}] = out.PkScript
		}
	}
	return prev
}

func classes(scripts [][]byte) map[txscript.ScriptClass]int {
	m := make(map[txscript.ScriptClass]int)
	for _, s := range scripts {
		m[txscript.GetScriptClass(s)]++
	}
	return m
}

func hasDuplicate(scripts [][]byte) bool {
	seen := make(map[string]bool, len(scripts))
	for _, s := range scripts {
		if seen[string(s)] {
			return true
		}
		seen[string(s)] = true
	}
	return false
}

// TestBuildTxRichChain builds a 150-block tx-rich chain and checks, by
// decoding the mined blocks, that every block holds spends of P2PKH,
// P2WPKH, P2TR and P2SH outputs (and P2WSH, P2PK, bare multisig), outputs
// of every standard class, repeated scripts, and that btcd's BIP-158
// filters and filter headers for the whole chain equal the ones computed
// here from the blocks (which pins CFilter/CFilterHeader byte order).
func TestBuildTxRichChain(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	n := Start(t, Options{TxIndex: true})
	const richBlocks = 150
	start := time.Now()
	if err := BuildTxRichChain(ctx, n, n.Wallet(), richBlocks); err != nil {
		t.Fatalf("BuildTxRichChain: %v", err)
	}
	t.Logf("BuildTxRichChain(%d) took %v", richBlocks, time.Since(start))

	var mempool []string
	if err := n.Call(ctx, "getrawmempool", nil, &mempool); err != nil {
		t.Fatal(err)
	}
	if len(mempool) != 0 {
		t.Fatalf("mempool holds %d txs after the chain was built, want 0", len(mempool))
	}
	_, tip, err := n.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	firstRich := tip - richBlocks + 1
	if firstRich < 101 {
		t.Fatalf("tip %d leaves no room for 100 maturity blocks before %d rich ones", tip, richBlocks)
	}

	walk := chainWalk{outputs: make(map[wire.OutPoint][]byte)}
	var prevHeader chainhash.Hash
	wantOutputs := []txscript.ScriptClass{
		txscript.PubKeyHashTy, txscript.ScriptHashTy, txscript.WitnessV0PubKeyHashTy,
		txscript.WitnessV0ScriptHashTy, txscript.WitnessV1TaprootTy, txscript.PubKeyTy,
		txscript.MultiSigTy, txscript.NullDataTy,
	}
	wantSpends := []txscript.ScriptClass{
		txscript.PubKeyHashTy, txscript.WitnessV0PubKeyHashTy, txscript.WitnessV1TaprootTy,
		txscript.ScriptHashTy, txscript.WitnessV0ScriptHashTy, txscript.PubKeyTy, txscript.MultiSigTy,
	}
	for h := int32(0); h <= tip; h++ {
		hash, err := n.BlockHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		blk, err := n.Block(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		prev := walk.connect(t, blk)
		checkOracle(ctx, t, n, blk, prev, &prevHeader)
		if h < firstRich {
			continue
		}
		var outs [][]byte
		for _, tx := range blk.Transactions[1:] {
			for _, o := range tx.TxOut {
				outs = append(outs, o.PkScript)
			}
		}
		oc := classes(outs)
		for _, c := range wantOutputs {
			if oc[c] == 0 {
				t.Errorf("block %d: no %v output (have %v)", h, c, oc)
			}
		}
		if !hasDuplicate(outs) {
			t.Errorf("block %d: no output script repeats", h)
		}
		if h == firstRich {
			continue // its funding outputs are spent from the next block on
		}
		if got := len(blk.Transactions); got < 6 {
			t.Errorf("block %d has %d txs, want coinbase + 5", h, got)
		}
		pc := classes(prev)
		for _, c := range wantSpends {
			if pc[c] == 0 {
				t.Errorf("block %d: no spend of a %v output (have %v)", h, c, pc)
			}
		}
		if !hasDuplicate(prev) {
			t.Errorf("block %d: no prevout script repeats", h)
		}
		if !slices.ContainsFunc(prev, func(p []byte) bool {
			return slices.ContainsFunc(outs, func(o []byte) bool { return bytes.Equal(o, p) })
		}) {
			t.Errorf("block %d: no script is both spent and paid to", h)
		}
	}

	// With --txindex, PrevOutScripts agrees with the replayed chain.
	tipHash, err := n.BlockHash(ctx, tip)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := n.Block(ctx, tipHash)
	if err != nil {
		t.Fatal(err)
	}
	got, err := n.PrevOutScripts(ctx, blk)
	if err != nil {
		t.Fatalf("PrevOutScripts: %v", err)
	}
	want := classes(got)
	if len(got) < 11 || want[txscript.WitnessV1TaprootTy] == 0 {
		t.Fatalf("PrevOutScripts(tip) = %d scripts %v", len(got), want)
	}
}

// checkOracle compares btcd's filter and filter header of blk with ones
// built here (btcutil's BIP-158 builder) from blk and its prevout scripts.
func checkOracle(ctx context.Context, t *testing.T, n *Node, blk *wire.MsgBlock, prev [][]byte,
	prevHeader *chainhash.Hash) {

	t.Helper()
	hash := blk.BlockHash()
	f, err := builder.BuildBasicFilter(blk, prev)
	if err != nil {
		t.Fatal(err)
	}
	want, err := f.NBytes()
	if err != nil {
		t.Fatal(err)
	}
	got, err := n.CFilter(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(got, want) {
		t.Fatalf("block %s: btcd filter %x, built %x", hash, got, want)
	}
	wantHeader, err := builder.MakeHeaderForFilter(f, *prevHeader)
	if err != nil {
		t.Fatal(err)
	}
	gotHeader, err := n.CFilterHeader(ctx, hash)
	if err != nil {
		t.Fatal(err)
	}
	if gotHeader != wantHeader {
		t.Fatalf("block %s: btcd filter header %s, built %s", hash, gotHeader, wantHeader)
	}
	*prevHeader = gotHeader
}

// TestBuildTxRichChainDeterministic builds the same short chain on two
// nodes: with one seed, every block holds the same transactions.
func TestBuildTxRichChainDeterministic(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	var txids [2][][]chainhash.Hash
	for i := range txids {
		n := Start(t, Options{})
		if err := BuildTxRichChain(ctx, n, NewWallet(n.Params(), 7), 10); err != nil {
			t.Fatal(err)
		}
		_, tip, err := n.BestBlock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		for h := int32(1); h <= tip; h++ {
			hash, err := n.BlockHash(ctx, h)
			if err != nil {
				t.Fatal(err)
			}
			blk, err := n.Block(ctx, hash)
			if err != nil {
				t.Fatal(err)
			}
			var ids []chainhash.Hash
			for _, tx := range blk.Transactions {
				ids = append(ids, tx.TxHash())
			}
			slices.SortFunc(ids, func(a, b chainhash.Hash) int { return bytes.Compare(a[:], b[:]) })
			txids[i] = append(txids[i], ids)
		}
	}
	if len(txids[0]) != len(txids[1]) {
		t.Fatalf("chains have %d and %d blocks", len(txids[0]), len(txids[1]))
	}
	for h := range txids[0] {
		if !slices.Equal(txids[0][h], txids[1][h]) {
			t.Fatalf("height %d: txids differ:\n%v\n%v", h+1, txids[0][h], txids[1][h])
		}
	}
}

// TestBuildTxRichChainForeignWallet builds with a wallet that is not the
// node's --miningaddr owner, on top of blocks from btcd's own miner, on
// simnet (where segwit and taproot first need BIP-9 activation).
func TestBuildTxRichChainForeignWallet(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	n := Start(t, Options{Net: "simnet", WalletSeed: 1})
	if _, err := n.Generate(ctx, 5); err != nil {
		t.Fatal(err)
	}
	w := NewWallet(n.Params(), 2)
	if err := BuildTxRichChain(ctx, n, w, 3); err != nil {
		t.Fatalf("BuildTxRichChain: %v", err)
	}
	active, err := n.SoftforksActive(ctx, "segwit", "taproot")
	if err != nil || !active {
		t.Fatalf("segwit/taproot active = %v (%v), want true", active, err)
	}
	if len(w.Unspent(KindP2TR)) == 0 {
		t.Fatal("foreign wallet holds no P2TR outputs after building")
	}
}
