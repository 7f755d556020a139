package silentpay

import (
	"bytes"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/gcs"
	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/consensys/gnark-crypto/ecc/secp256k1"
	"github.com/consensys/gnark-crypto/ecc/secp256k1/fp"
)

// cancellingTx returns a transaction whose eligible input keys sum to the
// point at infinity (P2WPKH spends of P and −P, and sometimes an
// ineligible P2WSH input), with a taproot output, and its spent scripts.
func (g *txGen) cancellingTx() (*wire.MsgTx, [][]byte) {
	tx := wire.NewMsgTx(2)
	var prev [][]byte
	pub := g.key().PubKey().SerializeCompressed()
	neg := bytes.Clone(pub)
	neg[0] ^= 1 // 02 ↔ 03: the same x, the other y
	for _, k := range [][]byte{pub, neg} {
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: chainhash.Hash(g.bytes(32))}, Witness: wire.TxWitness{g.bytes(71), k}})
		prev = append(prev, append([]byte{op0, 20}, address.Hash160(k)...))
	}
	if g.rng.IntN(2) == 0 {
		tx.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: chainhash.Hash(g.bytes(32))}, Witness: wire.TxWitness{g.bytes(40)}})
		prev = append(prev, append([]byte{op0, 32}, g.bytes(32)...))
	}
	tx.AddTxOut(wire.NewTxOut(1000, taprootScript(g.bytes(32))))
	return tx, prev
}

// noTaprootTx is a generated transaction with its outputs made P2WPKH:
// never eligible.
func (g *txGen) noTaprootTx() (*wire.MsgTx, [][]byte) {
	tx, prev := g.tx()
	for _, o := range tx.TxOut {
		o.PkScript = append([]byte{op0, 20}, g.bytes(20)...)
	}
	return tx, prev
}

// mixedBlock returns a block (after its coinbase) of n transactions, each
// generated (weights: gen), cancelling to infinity (cancel) or without a
// taproot output (rest), and its spent scripts.
func (g *txGen) mixedBlock(n, gen, cancel, rest int) (*wire.MsgBlock, [][]byte) {
	msg, prev := g.block(0, chainhash.Hash{})
	for range n {
		var tx *wire.MsgTx
		var p [][]byte
		switch r := g.rng.IntN(gen + cancel + rest); {
		case r < gen:
			tx, p = g.tx()
		case r < gen+cancel:
			tx, p = g.cancellingTx()
		default:
			tx, p = g.noTaprootTx()
		}
		_ = msg.AddTransaction(tx)
		prev = append(prev, p...)
	}
	txids := make([]chainhash.Hash, len(msg.Transactions))
	for i, tx := range msg.Transactions {
		txids[i] = tx.TxHash()
	}
	msg.Header.MerkleRoot = wirescan.MerkleRoot(txids)
	msg.Header.Timestamp = time.Unix(1_700_000_000, 0)
	return msg, prev
}

// perTxBlock is a block's tweaks and filter computed transaction by
// transaction with ComputeTweakMsg (tweakPoint's two inversions each),
// and how many of its transactions summed to the point at infinity.
func perTxBlock(t *testing.T, msg *wire.MsgBlock, prev [][]byte) (tweaks []TxTweak, filter []byte, infinite int) {
	t.Helper()
	var keys [][]byte
	for i, tx := range msg.Transactions[1:] {
		p := prev[:len(tx.TxIn)]
		prev = prev[len(tx.TxIn):]
		tw, ok, err := ComputeTweakMsg(tx, p)
		if err != nil {
			t.Fatal(err)
		}
		ins := make([]Input, len(tx.TxIn))
		for j, in := range tx.TxIn {
			ins[j] = Input{OutPoint: in.PreviousOutPoint, SigScript: in.SignatureScript, Witness: in.Witness, PrevScript: p[j]}
		}
		outs := make([]Output, len(tx.TxOut))
		for j, o := range tx.TxOut {
			outs[j] = Output{Value: uint64(o.Value), Script: o.PkScript}
		}
		var s txSum
		if s.read(ins, outs) && s.a.Z.IsZero() {
			infinite++
		}
		if !ok {
			continue
		}
		tweaks = append(tweaks, TxTweak{TxIndex: uint32(i + 1), Tweak: tw})
		for _, o := range tx.TxOut {
			if IsTaproot(o.PkScript) {
				keys = append(keys, o.PkScript[2:])
			}
		}
	}
	return tweaks, gcs.BuildBasic(msg.BlockHash(), keys), infinite
}

// TestBatchedBlockEqualsPerTransaction: a BlockBuilder, which finishes a
// run of transactions with one inversion for all their sums and one for
// all their products, gives byte for byte the tweaks and filter of
// ComputeTweakMsg transaction by transaction, on generated blocks (fixed
// seed) with no, one and many eligible transactions, runs longer than a
// batch, and transactions whose keys cancel to the point at infinity
// among them, first and last. One builder reads every block in turn, by
// Build and BuildMsgBlock, so what a block leaves in its scratch is also
// tested against the next.
func TestBatchedBlockEqualsPerTransaction(t *testing.T) {
	g := newTxGen(20)
	type blockCase struct {
		name         string
		msg          *wire.MsgBlock
		prev         [][]byte
		wantTweaks   int // -1: many, at least tweakBatchSize+1
		wantInfinite bool
	}
	var cases []blockCase
	addCase := func(name string, msg *wire.MsgBlock, prev [][]byte, wantTweaks int, wantInfinite bool) {
		cases = append(cases, blockCase{name: name, msg: msg, prev: prev, wantTweaks: wantTweaks, wantInfinite: wantInfinite})
	}
	msg, prev := g.mixedBlock(0, 1, 0, 0)
	addCase("coinbase only", msg, prev, 0, false)
	msg, prev = g.mixedBlock(30, 0, 1, 1)
	addCase("no eligible: cancelling and no taproot output", msg, prev, 0, true)
	msg, prev = g.block(0, chainhash.Hash{})
	for _, mk := range []func() (*wire.MsgTx, [][]byte){g.cancellingTx, g.noTaprootTx, func() (*wire.MsgTx, [][]byte) {
		for {
			tx, p := g.tx()
			if _, ok, _ := ComputeTweakMsg(tx, p); ok {
				return tx, p
			}
		}
	}, g.cancellingTx} {
		tx, p := mk()
		_ = msg.AddTransaction(tx)
		prev = append(prev, p...)
	}
	addCase("one eligible between cancelling ones", msg, prev, 1, true)
	for _, n := range []int{tweakBatchSize - 1, 2*tweakBatchSize + 37, 1500} {
		msg, prev = g.mixedBlock(n, 8, 1, 1)
		addCase(fmt.Sprintf("%d transactions, some cancelling", n), msg, prev, -1, true)
	}
	msg, prev = g.mixedBlock(tweakBatchSize, 1, 0, 0)
	addCase("exactly a batch of generated transactions", msg, prev, -1, false)

	var bb BlockBuilder
	for round := range 2 {
		for _, c := range cases {
			want, wantFilter, infinite := perTxBlock(t, c.msg, c.prev)
			switch {
			case c.wantTweaks >= 0 && len(want) != c.wantTweaks:
				t.Fatalf("%s: %d tweaks, the case wants %d", c.name, len(want), c.wantTweaks)
			case c.wantTweaks < 0 && len(want) < 20:
				t.Fatalf("%s: only %d tweaks, the case wants many", c.name, len(want))
			case c.wantInfinite != (infinite > 0):
				t.Fatalf("%s: %d transactions summing to infinity", c.name, infinite)
			}
			for _, via := range []string{"Build", "BuildMsgBlock"} {
				var got Block
				var err error
				if via == "Build" {
					got, err = bb.Build(serializeBlock(t, c.msg), c.prev)
				} else {
					got, err = bb.BuildMsgBlock(c.msg, c.prev)
				}
				if err != nil {
					t.Fatalf("round %d, %s, %s: %v", round, c.name, via, err)
				}
				if len(got.Tweaks) != len(want) {
					t.Fatalf("round %d, %s, %s: %d tweaks, per transaction %d", round, c.name, via, len(got.Tweaks), len(want))
				}
				for i := range want {
					if got.Tweaks[i] != want[i] {
						t.Fatalf("round %d, %s, %s: tweak %d is %+v, per transaction %+v", round, c.name, via, i, got.Tweaks[i], want[i])
					}
				}
				if !bytes.Equal(got.Filter, wantFilter) {
					t.Fatalf("round %d, %s, %s: filter differs from the per-transaction one", round, c.name, via)
				}
			}
		}
	}
}

// TestBatchToAffineEqualsOneByOne: Montgomery's trick gives gToAffine's
// coordinates for every point, and a point at infinity (Z = 0) anywhere
// in the run, first and last included, becomes (0, 0) without spoiling
// the others.
func TestBatchToAffineEqualsOneByOne(t *testing.T) {
	g := newTxGen(21)
	var sum secp256k1.G1Jac
	var pts []secp256k1.G1Jac
	for i := range 40 {
		p := randomPoint(t, g)
		sum.AddMixed(&p.g)
		sum.DoubleAssign() // Z ≠ 1
		pts = append(pts, sum)
		if i%7 == 0 {
			pts = append(pts, secp256k1.G1Jac{})
		}
	}
	pts = append(pts, secp256k1.G1Jac{X: fp.One(), Y: fp.One()}) // infinity with nonzero X, Y
	for _, run := range [][]secp256k1.G1Jac{pts, pts[:1], pts[1:2], pts[len(pts)-1:], nil} {
		dst := make([]secp256k1.G1Affine, len(run))
		batchToAffine(dst, run, make([]fp.Element, len(run)))
		for i := range run {
			var want secp256k1.G1Affine
			gToAffine(&want, &run[i])
			if run[i].Z.IsZero() && !(dst[i].X.IsZero() && dst[i].Y.IsZero()) {
				t.Fatalf("point %d of %d: infinity became %v", i, len(run), dst[i])
			}
			if dst[i] != want {
				t.Fatalf("point %d of %d: batch %v, one by one %v", i, len(run), dst[i], want)
			}
		}
	}
}
