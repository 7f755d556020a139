package silentpay

import (
	"math/rand/v2"
	"time"

	"github.com/btcsuite/btcd/address/v2"
	"github.com/btcsuite/btcd/btcec/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// txGen makes transactions spending every input kind BIP-352 names and a
// few it excludes, from a fixed seed, for the differential tests and the
// benchmarks. Signatures are random bytes: BIP-352 never checks them.
type txGen struct {
	rng *rand.Rand
}

func newTxGen(seed uint64) *txGen { return &txGen{rng: rand.New(rand.NewPCG(seed, seed^0x352))} }

func (g *txGen) bytes(n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(g.rng.Uint32())
	}
	return b
}

func (g *txGen) key() *btcec.PrivateKey {
	k, _ := btcec.PrivKeyFromBytes(g.bytes(32))
	return k
}

func push(data []byte) []byte { return append([]byte{byte(len(data))}, data...) }

// input returns one input of a random kind and the script it spends.
func (g *txGen) input() (*wire.TxIn, []byte) {
	in := &wire.TxIn{PreviousOutPoint: wire.OutPoint{Hash: chainhash.Hash(g.bytes(32)), Index: g.rng.Uint32N(4)}}
	pub := g.key().PubKey().SerializeCompressed()
	sig := g.bytes(71)
	switch g.rng.IntN(11) {
	case 0, 1: // P2PKH
		in.SignatureScript = append(push(sig), push(pub)...)
		return in, append(append([]byte{opDup, opHash160, 20}, address.Hash160(pub)...), opEqualVerify, opCheckSig)
	case 2: // P2PKH, malleated: the key first, junk after
		in.SignatureScript = append(append(push(sig), push(pub)...), push(g.bytes(33))...)
		return in, append(append([]byte{opDup, opHash160, 20}, address.Hash160(pub)...), opEqualVerify, opCheckSig)
	case 3: // P2PKH with an uncompressed key: not eligible
		full := g.key().PubKey().SerializeUncompressed()
		in.SignatureScript = append(push(sig), push(full)...)
		return in, append(append([]byte{opDup, opHash160, 20}, address.Hash160(full)...), opEqualVerify, opCheckSig)
	case 4: // P2WPKH
		in.Witness = wire.TxWitness{sig, pub}
		return in, append([]byte{op0, 20}, address.Hash160(pub)...)
	case 5: // P2SH-P2WPKH
		redeem := append([]byte{op0, 20}, address.Hash160(pub)...)
		in.SignatureScript = push(redeem)
		in.Witness = wire.TxWitness{sig, pub}
		return in, append(append([]byte{opHash160, 20}, address.Hash160(redeem)...), opEqual)
	case 6, 7: // P2TR key path, sometimes with an annex
		in.Witness = wire.TxWitness{g.bytes(64)}
		if g.rng.IntN(2) == 0 {
			in.Witness = append(in.Witness, []byte{annexTag, 1, 2})
		}
		return in, taprootScript(pub[1:])
	case 8: // P2TR script path, internal key NUMS H or not
		cb := append([]byte{0xc0}, g.bytes(32)...)
		if g.rng.IntN(2) == 0 {
			copy(cb[1:], numsH)
		}
		in.Witness = wire.TxWitness{g.bytes(64), {op1}, cb}
		return in, taprootScript(pub[1:])
	case 9: // P2WSH: not eligible
		in.Witness = wire.TxWitness{g.bytes(64), g.bytes(40)}
		return in, append([]byte{op0, 32}, g.bytes(32)...)
	default: // a witness v2 program: the whole transaction is skipped
		in.Witness = wire.TxWitness{g.bytes(64)}
		return in, append([]byte{op2, 32}, g.bytes(32)...)
	}
}

// tx returns a transaction with 1–4 inputs, 1–3 outputs (mostly taproot)
// and the scripts its inputs spend.
func (g *txGen) tx() (*wire.MsgTx, [][]byte) {
	tx := wire.NewMsgTx(2)
	var prev [][]byte
	for range 1 + g.rng.IntN(4) {
		in, script := g.input()
		tx.AddTxIn(in)
		prev = append(prev, script)
	}
	for range 1 + g.rng.IntN(3) {
		script := taprootScript(g.bytes(32))
		if g.rng.IntN(4) == 0 {
			script = append([]byte{op0, 20}, g.bytes(20)...)
		}
		tx.AddTxOut(wire.NewTxOut(int64(g.rng.IntN(100_000)), script))
	}
	return tx, prev
}

// block returns a block of a coinbase (with a taproot output, which must
// not count) and n generated transactions, and its spent scripts.
func (g *txGen) block(n int, prevBlock chainhash.Hash) (*wire.MsgBlock, [][]byte) {
	cb := wire.NewMsgTx(1)
	cb.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: wire.MaxPrevOutIndex}, SignatureScript: []byte{1, 1}})
	cb.AddTxOut(wire.NewTxOut(50e8, taprootScript(g.bytes(32))))
	blk := wire.NewMsgBlock(wire.NewBlockHeader(1, &prevBlock, &chainhash.Hash{}, 0x207fffff, g.rng.Uint32()))
	blk.Header.Timestamp = time.Unix(1_700_000_000, 0)
	_ = blk.AddTransaction(cb)
	var prev [][]byte
	for range n {
		tx, p := g.tx()
		_ = blk.AddTransaction(tx)
		prev = append(prev, p...)
	}
	txids := make([]chainhash.Hash, len(blk.Transactions))
	for i, tx := range blk.Transactions {
		txids[i] = tx.TxHash()
	}
	blk.Header.MerkleRoot = wirescan.MerkleRoot(txids)
	return blk, prev
}
