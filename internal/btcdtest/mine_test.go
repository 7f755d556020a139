package btcdtest

import (
	"errors"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestSideBranchReorg mines a two-block side branch with MineBlockOn (its
// first block carries a segwit spend, so it needs a witness commitment)
// against a one-block main extension: btcd reorganises to the longer side
// branch, and invalidateblock/reconsiderblock move the tip back and forth.
func TestSideBranchReorg(t *testing.T) {
	t.Parallel()
	ctx := testCtx(t)
	n := Start(t, Options{})
	w := n.Wallet()
	if _, err := n.Generate(ctx, 101); err != nil {
		t.Fatal(err)
	}
	if err := w.Sync(ctx, n); err != nil {
		t.Fatal(err)
	}
	segwit, err := w.NewScript(KindP2WPKH)
	if err != nil {
		t.Fatal(err)
	}
	fund, err := w.Send(ctx, n, []*wire.TxOut{wire.NewTxOut(1_000_000, segwit)})
	if err != nil {
		t.Fatal(err)
	}
	mineAndCheck(t, n, w, fund)
	forkHash, forkHeight, err := n.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	spend, err := w.BuildTx([]UTXO{w.Unspent(KindP2WPKH)[0]}, nil, w.MiningScript(), DefaultFeeRate)
	if err != nil {
		t.Fatal(err)
	}
	if !spend.HasWitness() {
		t.Fatal("P2WPKH spend has no witness")
	}
	mainExt, err := n.Generate(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}

	other := []byte{0x51} // OP_TRUE: differs from btcd's coinbase
	side1, err := n.MineOn(ctx, forkHash, []*wire.MsgTx{spend}, other)
	if err != nil {
		t.Fatalf("submit side block 1: %v", err)
	}
	if tip, _, _ := n.BestBlock(ctx); tip != mainExt[0] {
		t.Fatalf("tip after equal-work side block = %s, want main %s", tip, mainExt[0])
	}
	side2, err := n.MineOn(ctx, side1.BlockHash(), nil, other)
	if err != nil {
		t.Fatalf("submit side block 2: %v", err)
	}
	assertTip(t, n, side2.BlockHash(), forkHeight+2)
	if got, err := n.BlockHash(ctx, forkHeight+1); err != nil || got != side1.BlockHash() {
		t.Fatalf("height %d = %s (%v), want side block %s", forkHeight+1, got, err, side1.BlockHash())
	}

	if err := n.InvalidateBlock(ctx, side1.BlockHash()); err != nil {
		t.Fatalf("invalidateblock: %v", err)
	}
	assertTip(t, n, mainExt[0], forkHeight+1)
	if err := n.ReconsiderBlock(ctx, side1.BlockHash()); err != nil {
		t.Fatalf("reconsiderblock: %v", err)
	}
	assertTip(t, n, side2.BlockHash(), forkHeight+2)

	// A block with a bad merkle root is refused with btcd's reason.
	bad := MineBlockOn(n.Params(), side2.BlockHash(), forkHeight+2, side2.Header.Timestamp, nil, other)
	bad.Header.MerkleRoot[0] ^= 1
	solve(&bad.Header)
	if err := n.SubmitBlock(ctx, bad); !errors.Is(err, ErrBlockRejected) {
		t.Fatalf("bad merkle root: err = %v, want ErrBlockRejected", err)
	}

	// The wallet follows the reorg by rescanning.
	if err := w.Sync(ctx, n); err != nil {
		t.Fatal(err)
	}
	if got := w.Height(); got != forkHeight+2 {
		t.Fatalf("wallet height after reorg = %d, want %d", got, forkHeight+2)
	}
}

func assertTip(t *testing.T, n *Node, want chainhash.Hash, wantHeight int32) {
	t.Helper()
	got, height, err := n.BestBlock(testCtx(t))
	if err != nil {
		t.Fatal(err)
	}
	if got != want || height != wantHeight {
		t.Fatalf("tip = %s@%d, want %s@%d", got, height, want, wantHeight)
	}
}

// TestRestart pins btcd's restart behaviour: simnet keeps its chain,
// regtest comes back at genesis.
func TestRestart(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		net        string
		keepsChain bool
	}{
		{"simnet", true},
		{"regtest", false},
	} {
		t.Run(tc.net, func(t *testing.T) {
			t.Parallel()
			ctx := testCtx(t)
			n := Start(t, Options{Net: tc.net})
			hashes, err := n.Generate(ctx, 10)
			if err != nil {
				t.Fatal(err)
			}
			pid := n.PID()
			n.Restart(t)
			if n.PID() == pid {
				t.Fatal("Restart kept the same process")
			}
			if tc.keepsChain {
				assertTip(t, n, hashes[9], 10)
				return
			}
			assertTip(t, n, *n.Params().GenesisHash, 0)
		})
	}
}
