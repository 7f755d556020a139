package indexer

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/btcutil/v2/gcs"
	"github.com/btcsuite/btcd/btcutil/v2/gcs/builder"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/btcdtest"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/silentpay"
	"github.com/cfindexd/cfindexd/store/spindex"
)

// spPayment is one transaction of the payment block and what the index
// must say about it.
type spPayment struct {
	name     string
	tx       *wire.MsgTx
	tweak    [33]byte
	eligible bool
	maxValue uint64
	// spOutputs are the x-only keys of its outputs paying the receiver.
	spOutputs [][32]byte
}

// spFixture is the sender's and the receiver's side of the test chain.
type spFixture struct {
	t        *testing.T
	node     *btcdtest.Node
	funder   *btcec.PrivateKey
	scan     *btcec.PrivateKey
	spend    *btcec.PrivateKey
	keyIndex uint32
}

// recipient is the receiver's address with label m (nil: unlabeled).
func (f *spFixture) recipient(label *uint32) silentpay.Recipient {
	spend := f.spend.PubKey()
	if label != nil {
		tw, err := silentpay.LabelTweak(f.scan, *label)
		if err != nil {
			f.t.Fatal(err)
		}
		var s btcec.ModNScalar
		s.SetBytes(&tw)
		var lp, bm btcec.JacobianPoint
		btcec.ScalarBaseMultNonConst(&s, &lp)
		spend.AsJacobian(&bm)
		btcec.AddNonConst(&lp, &bm, &bm)
		bm.ToAffine()
		spend = btcec.NewPublicKey(&bm.X, &bm.Y)
	}
	return silentpay.Recipient{Scan: f.scan.PubKey(), Spend: spend}
}

// nextKey returns a fresh sender key; with parity 2 or 3 the first whose
// BIP-86 output key has that SEC prefix (even or odd y).
func (f *spFixture) nextKey(parity byte) *btcec.PrivateKey {
	for {
		f.keyIndex++
		k := spKey(f.keyIndex)
		if parity == 0 || txscriptTweakedPrefix(k) == parity {
			return k
		}
	}
}

// pay builds and signs a transaction spending coins, paying each
// recipient 0.2 BTC (taproot outputs from silentpay.OutputKeys), then
// extra, the rest less a fee to the funder's P2WPKH change.
func (f *spFixture) pay(name string, coins []*spCoin, recipients []silentpay.Recipient, extra []*wire.TxOut) spPayment {
	f.t.Helper()
	tx := wire.NewMsgTx(2)
	var in int64
	var keys []silentpay.SenderKey
	var ops []wire.OutPoint
	for _, c := range coins {
		tx.AddTxIn(wire.NewTxIn(&c.op, nil, nil))
		in += c.out.Value
		ops = append(ops, c.op)
		if k, ok := c.eligibleKey(); ok {
			keys = append(keys, silentpay.SenderKey{Key: k, Taproot: c.kind == inP2TR})
		}
	}
	p := spPayment{name: name}
	out := int64(0)
	if len(recipients) > 0 {
		xs, err := silentpay.OutputKeys(keys, ops, recipients)
		if err != nil {
			f.t.Fatalf("%s: %v", name, err)
		}
		for i, x := range xs {
			v := int64(20_000_000 + i*1000)
			tx.AddTxOut(wire.NewTxOut(v, append([]byte{0x51, 0x20}, x[:]...)))
			p.spOutputs = append(p.spOutputs, x)
			out += v
		}
	}
	for _, o := range extra {
		tx.AddTxOut(o)
		out += o.Value
	}
	tx.AddTxOut(wire.NewTxOut(in-out-20_000, p2wpkhScript(f.funder.PubKey())))
	if err := signSP(tx, coins); err != nil {
		f.t.Fatalf("%s: %v", name, err)
	}
	p.tx = tx
	p.tweak, p.eligible = independentTweak(f.t, coins)
	for _, o := range tx.TxOut {
		if silentpay.IsTaproot(o.PkScript) {
			p.maxValue = max(p.maxValue, uint64(o.Value))
		}
	}
	return p
}

// TestSilentPaymentIndexAgainstBtcd sends silent payments on a btcd
// regtest chain from every eligible input kind (P2WPKH, P2SH-P2WPKH,
// compressed P2PKH, P2TR key path with an odd and an even key, and a mix
// with an ineligible input), to a plain and a labeled address with
// change, and transactions BIP-352 leaves out (NUMS script path,
// uncompressed P2PKH, no taproot output). The index's tweaks equal an
// independent computation from the keys the test holds, its taproot
// filter matches the payments, a scanner finds exactly them, and the
// commitment chain recomputes; then invalidateblock removes the payment
// block, reconsiderblock brings it back, and a replacement block mines the
// payments again at the same height, the index following each step.
func TestSilentPaymentIndexAgainstBtcd(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), testtime.Scale(5*time.Minute))
	defer cancel()
	node := btcdtest.Start(t, btcdtest.Options{TxIndex: true, WalletSeed: 41})
	f := &spFixture{t: t, node: node, funder: spKey(0), scan: spKey(1000), spend: spKey(1001)}

	// A coinbase to the test's own key, matured.
	first, err := node.Generate(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	cb, err := node.MineOn(ctx, first[0], nil, p2wpkhScript(f.funder.PubKey()))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := node.Generate(ctx, 100); err != nil {
		t.Fatal(err)
	}
	cbTx := cb.Transactions[0]
	coinbase := &spCoin{kind: inP2WPKH, key: f.funder, op: wire.OutPoint{Hash: cbTx.TxHash()}, out: cbTx.TxOut[0]}

	// One funding transaction makes every coin the payments spend.
	kinds := []struct {
		kind   spInKind
		parity byte
	}{
		{inP2WPKH, 0}, {inP2SHP2WPKH, 0}, {inP2PKH, 0}, {inP2TR, 3}, {inP2WPKH, 0}, {inP2PKHUncompressed, 0},
		{inP2TR, 2}, {inP2TRNUMSScript, 0}, {inP2PKHUncompressed, 0}, {inP2WPKH, 0},
	}
	fund := wire.NewMsgTx(2)
	fund.AddTxIn(wire.NewTxIn(&coinbase.op, nil, nil))
	var coins []*spCoin
	for _, k := range kinds {
		key := f.nextKey(k.parity)
		script, redeem, err := spScript(k.kind, key)
		if err != nil {
			t.Fatal(err)
		}
		out := wire.NewTxOut(100_000_000, script)
		fund.AddTxOut(out)
		coins = append(coins, &spCoin{kind: k.kind, key: key, out: out, redeem: redeem})
	}
	fund.AddTxOut(wire.NewTxOut(coinbase.out.Value-int64(len(kinds))*100_000_000-50_000, coinbase.out.PkScript))
	if err := signSP(fund, []*spCoin{coinbase}); err != nil {
		t.Fatal(err)
	}
	for i, c := range coins {
		c.op = wire.OutPoint{Hash: fund.TxHash(), Index: uint32(i)}
	}
	if _, err := node.SendRawTransaction(ctx, fund); err != nil {
		t.Fatal(err)
	}
	if _, err := node.Generate(ctx, 1); err != nil {
		t.Fatal(err)
	}

	one, zero := uint32(1), uint32(0)
	plain, labeled, change := f.recipient(nil), f.recipient(&one), f.recipient(&zero)
	otherTaproot := wire.NewTxOut(30_000_000, taprootScript(f.nextKey(0).PubKey()))
	payments := []spPayment{
		f.pay("p2wpkh, label and change", coins[0:1], []silentpay.Recipient{plain, labeled, change}, nil),
		f.pay("p2sh-p2wpkh", coins[1:2], []silentpay.Recipient{plain}, nil),
		f.pay("p2pkh", coins[2:3], []silentpay.Recipient{labeled}, nil),
		f.pay("p2tr odd key", coins[3:4], []silentpay.Recipient{plain}, []*wire.TxOut{otherTaproot}),
		f.pay("p2wpkh + uncompressed p2pkh + p2tr even key", coins[4:7], []silentpay.Recipient{plain, change}, nil),
		f.pay("nums script path only", coins[7:8], nil, []*wire.TxOut{otherTaproot}),
		f.pay("uncompressed p2pkh only", coins[8:9], nil, []*wire.TxOut{otherTaproot}),
		f.pay("no taproot output", coins[9:10], nil, nil),
	}
	for i, want := range []bool{true, true, true, true, true, false, false, true} {
		if payments[i].eligible != want {
			t.Fatalf("%s: eligible %v in the test's own accounting, want %v", payments[i].name, payments[i].eligible, want)
		}
	}
	payments[7].eligible = false // its inputs are eligible, but it has no taproot output
	send := func() {
		for _, p := range payments {
			if _, err := node.SendRawTransaction(ctx, p.tx); err != nil && !errors.Is(err, context.Canceled) {
				var rpcErr *btcdtest.RPCError
				if !errors.As(err, &rpcErr) || rpcErr.Code != -8 && rpcErr.Code != -27 && rpcErr.Code != -26 {
					t.Fatalf("%s: sendrawtransaction: %v", p.name, err)
				}
			}
		}
	}
	send()
	mined, err := node.Generate(ctx, 1)
	if err != nil {
		t.Fatal(err)
	}
	payBlock := mined[0]
	_, payHeight, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}

	st := openStore(t, *node.Params().GenesisHash)
	x := st.SilentPayments()
	if _, err := x.Enable(1); err != nil {
		t.Fatal(err)
	}
	log := testLogger(t)
	client, source := btcdSource(ctx, t, node, log)
	fl := NewFollower(Config{Genesis: *node.Params().GenesisHash, Workers: 2, BatchBlocks: 50, ReorgSettle: -1, SilentPayments: x},
		client, source, st, nil, nil, log)
	sync := func() {
		t.Helper()
		if err := fl.Sync(ctx); err != nil {
			t.Fatal(err)
		}
		checkSPIndex(t, x, nodeSPEntries(ctx, t, node))
	}
	sync()
	checkPayments(t, f, x, node, payBlock, uint32(payHeight), payments)

	// invalidateblock: the payment block leaves the chain and the index.
	if err := node.InvalidateBlock(ctx, payBlock); err != nil {
		t.Fatal(err)
	}
	sync()
	if s, _ := x.State(); s.Next != uint32(payHeight) {
		t.Fatalf("after invalidateblock: index next %d, want %d", s.Next, payHeight)
	}
	if _, err := x.TweakData(uint32(payHeight), uint32(payHeight)); !errors.Is(err, spindex.ErrNotFound) {
		t.Fatalf("tweak data of the removed block: %v, want ErrNotFound", err)
	}

	// reconsiderblock: it comes back, and so do its entries.
	if err := node.ReconsiderBlock(ctx, payBlock); err != nil {
		t.Fatal(err)
	}
	sync()
	checkPayments(t, f, x, node, payBlock, uint32(payHeight), payments)

	// A replacement block mines the same payments at the same height.
	if err := node.InvalidateBlock(ctx, payBlock); err != nil {
		t.Fatal(err)
	}
	send()
	again, err := node.Generate(ctx, 2)
	if err != nil {
		t.Fatal(err)
	}
	sync()
	checkPayments(t, f, x, node, again[0], uint32(payHeight), payments)
}

// nodeSPEntries builds the silent-payment entries of btcd's active chain
// from its blocks and their spent scripts (txindex), with package
// silentpay alone.
func nodeSPEntries(ctx context.Context, t *testing.T, node *btcdtest.Node) []spindex.Entry {
	t.Helper()
	_, best, err := node.BestBlock(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var blocks []*wire.MsgBlock
	var prevs [][][]byte
	for h := int32(1); h <= best; h++ {
		hash, err := node.BlockHash(ctx, h)
		if err != nil {
			t.Fatal(err)
		}
		blk, err := node.Block(ctx, hash)
		if err != nil {
			t.Fatal(err)
		}
		ps, err := node.PrevOutScripts(ctx, blk)
		if err != nil {
			t.Fatal(err)
		}
		blocks, prevs = append(blocks, blk), append(prevs, ps)
	}
	return spEntries(t, blocks, prevs)
}

// checkPayments checks the index's entry of the block hash at height
// against the payments: one tweak per eligible payment, equal to the
// independent computation, with its largest taproot value and none for
// the others; the taproot filter matches every payment output; the
// receiver's scanner finds exactly its outputs.
func checkPayments(t *testing.T, f *spFixture, x *spindex.Index, node *btcdtest.Node, hash chainhash.Hash, height uint32, payments []spPayment) {
	t.Helper()
	blk, err := node.Block(context.Background(), hash)
	if err != nil {
		t.Fatal(err)
	}
	recs, err := x.TweakData(height, height)
	if err != nil {
		t.Fatal(err)
	}
	if recs[0].BlockHash != hash {
		t.Fatalf("index entry at %d is of block %s, want %s", height, recs[0].BlockHash, hash)
	}
	tweaks, err := silentpay.ParseTweakData(recs[0].TweakData)
	if err != nil {
		t.Fatal(err)
	}
	byTx := map[chainhash.Hash]silentpay.TxTweak{}
	for _, tw := range tweaks {
		byTx[blk.Transactions[tw.TxIndex].TxHash()] = tw
	}
	fr, err := x.FilterByHeight(height)
	if err != nil {
		t.Fatal(err)
	}
	filter, err := gcs.FromNBytes(builder.DefaultP, builder.DefaultM, fr.Filter)
	if err != nil {
		t.Fatal(err)
	}
	key := builder.DeriveKey(&hash)
	scanner, err := silentpay.NewScanner(f.scan, f.spend.PubKey(), []uint32{1})
	if err != nil {
		t.Fatal(err)
	}
	eligible := 0
	for _, p := range payments {
		tw, indexed := byTx[p.tx.TxHash()]
		if indexed != p.eligible {
			t.Fatalf("%s: indexed %v, want %v", p.name, indexed, p.eligible)
		}
		if !p.eligible {
			continue
		}
		eligible++
		if tw.Point != p.tweak || tw.MaxTaprootValue != p.maxValue {
			t.Fatalf("%s: tweak %x value %d, want %x %d", p.name, tw.Point, tw.MaxTaprootValue, p.tweak, p.maxValue)
		}
		var outs [][32]byte
		for _, o := range p.tx.TxOut {
			if silentpay.IsTaproot(o.PkScript) {
				outs = append(outs, [32]byte(o.PkScript[2:]))
				if ok, err := filter.Match(key, o.PkScript[2:]); err != nil || !ok {
					t.Fatalf("%s: taproot filter does not match output %x (%v)", p.name, o.PkScript[2:], err)
				}
			}
		}
		matches, err := scanner.Scan(tw.Point, outs)
		if err != nil {
			t.Fatal(err)
		}
		if len(matches) != len(p.spOutputs) {
			t.Fatalf("%s: scanner found %d outputs, want %d", p.name, len(matches), len(p.spOutputs))
		}
		for i, m := range matches {
			if m.Key != p.spOutputs[i] && !containsKey(p.spOutputs, m.Key) {
				t.Fatalf("%s: scanner found %x, not a payment", p.name, m.Key)
			}
		}
	}
	if len(tweaks) != eligible {
		t.Fatalf("block %s: %d tweaks, want %d", hash, len(tweaks), eligible)
	}
}

func containsKey(keys [][32]byte, k [32]byte) bool {
	for _, x := range keys {
		if x == k {
			return true
		}
	}
	return false
}
