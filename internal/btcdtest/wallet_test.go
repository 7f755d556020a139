package btcdtest

import (
	"errors"
	"testing"

	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// TestWalletSpendsEveryKind pays one output of every ownable kind, mines
// it, then spends each kind in its own transaction and one transaction that
// mixes all kinds (taproot sighashes commit to every prevout), and checks
// btcd accepted and mined all of them.
func TestWalletSpendsEveryKind(t *testing.T) {
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
	// Block 102 may spend coinbases at depth >= 100: those of blocks 1 and 2.
	if got := len(w.Unspent()); got != 2 {
		t.Fatalf("after 101 blocks %d spendable outputs, want the 2 mature coinbases", got)
	}
	tooMuch := []*wire.TxOut{wire.NewTxOut(150*100_000_000, w.MiningScript())}
	if _, err := w.Send(ctx, n, tooMuch); !errors.Is(err, ErrInsufficientFunds) {
		t.Fatalf("Send of 150 BTC from 100 BTC: err = %v, want ErrInsufficientFunds", err)
	}
	if got := len(w.Unspent()); got != 2 {
		t.Fatalf("failed Send left %d spendable outputs, want 2 (inputs released)", got)
	}
	ownable := []Kind{KindP2PKH, KindP2WPKH, KindP2TR, KindP2SHP2WPKH, KindP2SHMultisig, KindP2WSH, KindP2PK, KindBareMultisig}
	var outs []*wire.TxOut
	for range 2 {
		for _, k := range ownable {
			script, err := w.NewScript(k)
			if err != nil {
				t.Fatal(err)
			}
			if got := txscript.GetScriptClass(script); got != k.ScriptClass() {
				t.Fatalf("%v script classifies as %v, want %v", k, got, k.ScriptClass())
			}
			outs = append(outs, wire.NewTxOut(100_000, script))
		}
	}
	fund, err := w.Send(ctx, n, outs)
	if err != nil {
		t.Fatalf("send funding tx: %v", err)
	}
	mineAndCheck(t, n, w, fund)

	var txs []*wire.MsgTx
	sink, err := w.NewScript(KindP2WPKH)
	if err != nil {
		t.Fatal(err)
	}
	for _, k := range ownable {
		u := w.Unspent(k)
		if len(u) < 2 {
			t.Fatalf("wallet has %d spendable %v outputs, want 2", len(u), k)
		}
		tx, err := w.BuildTx(u[:1], nil, sink, DefaultFeeRate)
		if err != nil {
			t.Fatalf("build %v spend: %v", k, err)
		}
		if _, err := n.SendRawTransaction(ctx, tx); err != nil {
			t.Fatalf("send %v spend: %v", k, err)
		}
		txs = append(txs, tx)
	}
	var mixed []UTXO
	for _, k := range ownable {
		mixed = append(mixed, w.Unspent(k)[0])
	}
	tx, err := w.BuildTx(mixed, nil, sink, DefaultFeeRate)
	if err != nil {
		t.Fatalf("build mixed spend: %v", err)
	}
	if _, err := n.SendRawTransaction(ctx, tx); err != nil {
		t.Fatalf("send mixed spend: %v", err)
	}
	txs = append(txs, tx)
	mineAndCheck(t, n, w, txs...)
}

// mineAndCheck mines one block, checks it holds txs, and syncs w.
func mineAndCheck(t *testing.T, n *Node, w *Wallet, txs ...*wire.MsgTx) {
	t.Helper()
	ctx := testCtx(t)
	hashes, err := n.Generate(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	blk, err := n.Block(ctx, hashes[0])
	if err != nil {
		t.Fatal(err)
	}
	in := make(map[string]bool)
	for _, tx := range blk.Transactions {
		in[tx.TxHash().String()] = true
	}
	for _, tx := range txs {
		if !in[tx.TxHash().String()] {
			t.Fatalf("tx %s not mined", tx.TxHash())
		}
	}
	if err := w.Sync(ctx, n); err != nil {
		t.Fatal(err)
	}
}

// TestTweakTaprootKeyMatchesTxscript pins the shortcut against txscript's
// reference implementation for keys of both Y parities.
func TestTweakTaprootKeyMatchesTxscript(t *testing.T) {
	parities := map[byte]bool{}
	for i := uint32(0); i < 16; i++ {
		k := deriveKey(3, i)
		parities[k.compressed[0]] = true
		want := txscript.TweakTaprootPrivKey(*k.priv, nil)
		if got := tweakTaprootKey(k); !got.Key.Equals(&want.Key) {
			t.Fatalf("key %d (prefix %#x): tweak differs from txscript", i, k.compressed[0])
		}
	}
	if len(parities) != 2 {
		t.Fatalf("16 keys covered prefixes %v, want both 0x02 and 0x03", parities)
	}
}
