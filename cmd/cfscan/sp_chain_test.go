package main

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"testing"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcec/v2/schnorr"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/txscript/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/silentpay"
)

// spTestKey derives the test's private key named name (fixed, so every run
// builds the same transactions).
func spTestKey(name string) *btcec.PrivateKey {
	sum := sha256.Sum256([]byte("cfscan sp test key " + name))
	k, _ := btcec.PrivKeyFromBytes(sum[:])
	return k
}

// spCoin is a coinbase output the test holds the key of: P2WPKH, or P2TR
// with a BIP-86 key spent by key path.
type spCoin struct {
	key     *btcec.PrivateKey
	taproot bool
	out     wire.OutPoint
	value   int64
}

func (c *spCoin) script() []byte {
	if c.taproot {
		return spTaprootScript(txscript.ComputeTaprootKeyNoScript(c.key.PubKey()))
	}
	return append([]byte{txscript.OP_0, 20}, address.Hash160(c.key.PubKey().SerializeCompressed())...)
}

// spendKey is the private key BIP-352 sums for the coin: the tweaked BIP-86
// key for P2TR (silentpay.OutputKeys negates it for an odd y), the key
// itself for P2WPKH.
func (c *spCoin) spendKey() silentpay.SenderKey {
	if c.taproot {
		return silentpay.SenderKey{Key: txscript.TweakTaprootPrivKey(*c.key, nil), Taproot: true}
	}
	return silentpay.SenderKey{Key: c.key}
}

func spTaprootScript(pub *btcec.PublicKey) []byte {
	return append([]byte{txscript.OP_1, 32}, schnorr.SerializePubKey(pub)...)
}

// spWallet is a silent-payment wallet's keys.
type spWallet struct{ scan, spend *btcec.PrivateKey }

// address is the wallet's address with label m, or the bare address for
// m < 0: B_scan and B_spend + hash_Label(b_scan, m)·G.
func (w spWallet) address(t *testing.T, m int64) silentpay.Recipient {
	t.Helper()
	if m < 0 {
		return silentpay.Recipient{Scan: w.scan.PubKey(), Spend: w.spend.PubKey()}
	}
	tw, err := silentpay.LabelTweak(w.scan, uint32(m))
	if err != nil {
		t.Fatal(err)
	}
	var l btcec.ModNScalar
	l.SetBytes(&tw)
	d := w.spend.Key
	d.Add(&l)
	return silentpay.Recipient{Scan: w.scan.PubKey(), Spend: btcec.PrivKeyFromScalar(&d).PubKey()}
}

// spSend builds and signs a transaction spending coins: first the outputs
// paying the silent-payment recipients (silentpay.OutputKeys), with the
// amounts given, then plain outputs, then change (a P2WPKH to the first
// coin's key) of the rest less a fee.
func spSend(t *testing.T, coins []*spCoin, recipients []silentpay.Recipient, amounts []int64, plain ...*wire.TxOut) *wire.MsgTx {
	t.Helper()
	keys := make([]silentpay.SenderKey, len(coins))
	outpoints := make([]wire.OutPoint, len(coins))
	tx := wire.NewMsgTx(2)
	prevOuts := txscript.NewMultiPrevOutFetcher(nil)
	var in int64
	for i, c := range coins {
		keys[i], outpoints[i] = c.spendKey(), c.out
		tx.AddTxIn(wire.NewTxIn(&c.out, nil, nil))
		prevOuts.AddPrevOut(c.out, wire.NewTxOut(c.value, c.script()))
		in += c.value
	}
	if len(recipients) > 0 {
		outs, err := silentpay.OutputKeys(keys, outpoints, recipients)
		if err != nil {
			t.Fatal(err)
		}
		for i, k := range outs {
			tx.AddTxOut(wire.NewTxOut(amounts[i], append([]byte{txscript.OP_1, 32}, k[:]...)))
			in -= amounts[i]
		}
	}
	for _, o := range plain {
		tx.AddTxOut(o)
		in -= o.Value
	}
	change := &spCoin{key: coins[0].key}
	tx.AddTxOut(wire.NewTxOut(in-10_000, change.script()))
	sigHashes := txscript.NewTxSigHashes(tx, prevOuts)
	for i, c := range coins {
		var err error
		if c.taproot {
			var sig []byte
			sig, err = txscript.RawTxInTaprootSignature(tx, sigHashes, i, c.value, c.script(), nil, txscript.SigHashDefault, c.key)
			tx.TxIn[i].Witness = wire.TxWitness{sig}
		} else {
			tx.TxIn[i].Witness, err = txscript.WitnessSignature(tx, sigHashes, i, c.value, c.script(), txscript.SigHashAll, c.key, true)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	return tx
}

// spExpectedTweak computes a transaction's tweak as BIP-352 defines it
// from the private keys of its inputs, apart from package silentpay's
// receiver: a = Σ a_i (a taproot key negated when its point has odd y),
// A = a·G, input_hash = hash_BIP0352/Inputs(smallest outpoint || A), tweak
// = input_hash·A.
func spExpectedTweak(coins []*spCoin) [33]byte {
	var a btcec.ModNScalar
	var smallest []byte
	for _, c := range coins {
		k := c.key.Key
		if c.taproot {
			k = txscript.TweakTaprootPrivKey(*c.key, nil).Key
			if btcec.PrivKeyFromScalar(&k).PubKey().SerializeCompressed()[0] == 0x03 {
				k.Negate()
			}
		}
		a.Add(&k)
		op := binary.LittleEndian.AppendUint32(append([]byte(nil), c.out.Hash[:]...), c.out.Index)
		if smallest == nil || bytes.Compare(op, smallest) < 0 {
			smallest = op
		}
	}
	bigA := btcec.PrivKeyFromScalar(&a).PubKey().SerializeCompressed()
	h := chainhash.TaggedHash([]byte("BIP0352/Inputs"), smallest, bigA)
	var ih btcec.ModNScalar
	ih.SetBytes((*[32]byte)(h))
	ih.Mul(&a)
	return [33]byte(btcec.PrivKeyFromScalar(&ih).PubKey().SerializeCompressed())
}

// spTx is a transaction of the test chain with a tweak: its block's height,
// its position there, its expected tweak and largest taproot value.
type spTx struct {
	height   int32
	index    int
	tweak    [33]byte
	maxValue int64
}

// spChain is a btcd regtest chain with silent-payment sends: to the
// wallet's bare address twice in one transaction (k = 0 and 1), to its
// label 7, to another wallet and the wallet's change label together, and
// a taproot payment that is no silent payment.
type spChain struct {
	node   *btcdtest.Node
	wallet spWallet
	tip    int32
	txs    []spTx    // every transaction with a tweak, in chain order
	want   []spFound // the outputs paying wallet, in chain order (keys left out)
}

// buildSPChain mines coinbases to the test's keys, matures them, and mines
// the sends in three blocks.
func buildSPChain(ctx context.Context, t *testing.T) *spChain {
	t.Helper()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true})
	c := &spChain{node: node, wallet: spWallet{scan: spTestKey("scan"), spend: spTestKey("spend")}}
	other := spWallet{scan: spTestKey("other scan"), spend: spTestKey("other spend")}
	if _, err := node.Generate(ctx, 1); err != nil {
		t.Fatal(err)
	}
	coins := map[string]*spCoin{}
	for _, name := range []string{"w1", "t1", "w2", "t2", "w3"} {
		coin := &spCoin{key: spTestKey(name), taproot: name[0] == 't'}
		best, _, err := node.BestBlock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		blk, err := node.MineOn(ctx, best, nil, coin.script())
		if err != nil {
			t.Fatal(err)
		}
		cb := blk.Transactions[0]
		coin.out, coin.value = wire.OutPoint{Hash: cb.TxHash(), Index: 0}, cb.TxOut[0].Value
		coins[name] = coin
	}
	if _, err := node.Generate(ctx, int(node.Params().CoinbaseMaturity)); err != nil {
		t.Fatal(err)
	}
	bare, label7, change := c.wallet.address(t, -1), c.wallet.address(t, 7), c.wallet.address(t, 0)
	bip86 := wire.NewTxOut(6_000_000, spTaprootScript(txscript.ComputeTaprootKeyNoScript(spTestKey("bip86").PubKey())))
	type send struct {
		coins      []*spCoin
		recipients []silentpay.Recipient
		amounts    []int64
		plain      []*wire.TxOut
		labels     []string // per recipient: "" bare, "7", "change", "-" not the wallet's
	}
	blocks := [][]send{
		{
			{coins: []*spCoin{coins["w1"]}, recipients: []silentpay.Recipient{bare, bare}, amounts: []int64{1_000_000, 2_000_000}, labels: []string{"", ""}},
			{coins: []*spCoin{coins["t1"]}, recipients: []silentpay.Recipient{label7}, amounts: []int64{3_000_000}, labels: []string{"7"}},
		},
		{{coins: []*spCoin{coins["w2"], coins["t2"]}, recipients: []silentpay.Recipient{other.address(t, -1), change},
			amounts: []int64{4_000_000, 5_000_000}, labels: []string{"-", "change"}}},
		{{coins: []*spCoin{coins["w3"]}, plain: []*wire.TxOut{bip86}}},
	}
	for _, sends := range blocks {
		best, height, err := node.BestBlock(ctx)
		if err != nil {
			t.Fatal(err)
		}
		var txs []*wire.MsgTx
		for i, s := range sends {
			tx := spSend(t, s.coins, s.recipients, s.amounts, s.plain...)
			txs = append(txs, tx)
			maxValue := int64(0)
			for vout, out := range tx.TxOut {
				if !silentpay.IsTaproot(out.PkScript) {
					continue
				}
				maxValue = max(maxValue, out.Value)
				if vout < len(s.labels) && s.labels[vout] != "-" {
					c.want = append(c.want, spFound{Txid: tx.TxHash().String(), Vout: uint32(vout), Height: uint32(height + 1),
						Amount: out.Value, Label: s.labels[vout]})
				}
			}
			c.txs = append(c.txs, spTx{height: height + 1, index: i + 1, tweak: spExpectedTweak(s.coins), maxValue: maxValue})
		}
		if _, err := node.MineOn(ctx, best, txs, coins["w1"].script()); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := node.Generate(ctx, 3); err != nil {
		t.Fatal(err)
	}
	_, tip, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c.tip = tip
	return c
}
