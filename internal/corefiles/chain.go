package corefiles

import (
	"bytes"
	"encoding/binary"
	"math/rand/v2"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// Chain is a chain written as Core's files, with what a REST server would
// answer for each block, for tests and benchmarks of the blocks directory.
type Chain struct {
	Dir    string
	Hashes []chainhash.Hash // in chain order, genesis excluded
	Raw    map[chainhash.Hash][]byte
	Spent  map[chainhash.Hash][]byte // REST spenttxouts bodies
	Bytes  int64                     // serialized size of the blocks in Hashes
}

// FixtureChain is the recorded fixture: Core's own files.
func FixtureChain(b testing.TB) *Chain {
	fx := LoadFixture(b)
	blocks, err := fx.StoredBlocks()
	if err != nil {
		b.Fatal(err)
	}
	c := &Chain{Dir: fx.BlocksDir, Raw: map[chainhash.Hash][]byte{}, Spent: map[chainhash.Hash][]byte{}}
	for _, blk := range blocks {
		h := blk.BlockHash()
		fb, _ := fx.Block(h)
		var buf bytes.Buffer
		blk.Serialize(&buf)
		c.Raw[h], c.Spent[h] = buf.Bytes(), fb.SpentTxOuts
		c.Hashes = append(c.Hashes, h)
		c.Bytes += int64(buf.Len())
	}
	return c
}

// SyntheticChain writes empty coinbase-only blocks, then blocks of
// txs transactions each (two inputs, two outputs of today's common kinds,
// witnesses of P2WPKH size) with the corefiles writer and opts: bigger
// blocks than the fixture's, checked by hash and merkle root as real ones.
// Signatures are random bytes; nothing here verifies scripts.
func SyntheticChain(b testing.TB, empty, blocks, txs int, opts Options) *Chain {
	params := &chaincfg.RegressionNetParams
	rng := rand.New(rand.NewPCG(1, 2))
	randBytes := func(n int) []byte {
		out := make([]byte, n)
		for i := range out {
			out[i] = byte(rng.Uint32())
		}
		return out
	}
	kinds := []func() []byte{
		func() []byte { return append([]byte{0x00, 0x14}, randBytes(20)...) },                           // P2WPKH
		func() []byte { return append([]byte{0x51, 0x20}, randBytes(32)...) },                           // P2TR
		func() []byte { return append(append([]byte{0xa9, 0x14}, randBytes(20)...), 0x87) },             // P2SH
		func() []byte { return append(append([]byte{0x76, 0xa9, 0x14}, randBytes(20)...), 0x88, 0xac) }, // P2PKH
		func() []byte { return append([]byte{0x00, 0x20}, randBytes(32)...) },                           // P2WSH
	}
	type coin struct {
		op     wire.OutPoint
		value  int64
		script []byte
	}
	var pool []coin
	c := &Chain{Dir: b.TempDir(), Raw: map[chainhash.Hash][]byte{}, Spent: map[chainhash.Hash][]byte{}}
	w, err := NewWriter(c.Dir, params, opts)
	if err != nil {
		b.Fatal(err)
	}
	prev := params.GenesisBlock
	if err := w.AddBlock(prev); err != nil {
		b.Fatal(err)
	}
	for height := 1; height <= empty+blocks; height++ {
		cb := wire.NewMsgTx(2)
		cb.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 0xffffffff}, SignatureScript: binary.LittleEndian.AppendUint32([]byte{0x04}, uint32(height)), Sequence: 0xffffffff})
		fanout := 0
		if height > empty && len(pool) < 2*txs {
			fanout = 4 * txs // enough coins for the next blocks
		}
		for range max(1, fanout) {
			cb.AddTxOut(&wire.TxOut{Value: 100000, PkScript: kinds[rng.IntN(len(kinds))]()})
		}
		blk := &wire.MsgBlock{Header: wire.BlockHeader{Version: 4, PrevBlock: prev.BlockHash(), Timestamp: prev.Header.Timestamp.Add(10 * time.Minute), Bits: prev.Header.Bits}}
		blk.Transactions = []*wire.MsgTx{cb}
		spent := wirescan.AppendCompactSize(nil, 1)
		spent = wirescan.AppendCompactSize(spent, 0)
		var newCoins []coin
		for i := 0; i < txs && len(pool) >= 2 && height > empty; i++ {
			tx := wire.NewMsgTx(2)
			spent = wirescan.AppendCompactSize(spent, 2)
			for _, in := range pool[:2] {
				tx.AddTxIn(&wire.TxIn{PreviousOutPoint: in.op, Sequence: 0xfffffffd, Witness: wire.TxWitness{randBytes(72), randBytes(33)}})
				spent = binary.LittleEndian.AppendUint64(spent, uint64(in.value))
				spent = wirescan.AppendCompactSize(spent, uint64(len(in.script)))
				spent = append(spent, in.script...)
			}
			pool = pool[2:]
			for range 2 {
				tx.AddTxOut(&wire.TxOut{Value: 90000, PkScript: kinds[rng.IntN(len(kinds))]()})
			}
			blk.Transactions = append(blk.Transactions, tx)
			txid := tx.TxHash()
			for i, out := range tx.TxOut {
				newCoins = append(newCoins, coin{wire.OutPoint{Hash: txid, Index: uint32(i)}, out.Value, out.PkScript})
			}
		}
		// The spenttxouts body's transaction count.
		body := wirescan.AppendCompactSize(nil, uint64(len(blk.Transactions)))
		body = append(body, spent[1:]...)
		cbid := cb.TxHash()
		for i, out := range cb.TxOut {
			pool = append(pool, coin{wire.OutPoint{Hash: cbid, Index: uint32(i)}, out.Value, out.PkScript})
		}
		pool = append(pool, newCoins...)
		txids := make([]chainhash.Hash, len(blk.Transactions))
		for i, tx := range blk.Transactions {
			txids[i] = tx.TxHash()
		}
		blk.Header.MerkleRoot = wirescan.MerkleRoot(txids)
		if err := w.AddBlock(blk); err != nil {
			b.Fatal(err)
		}
		h := blk.BlockHash()
		var buf bytes.Buffer
		blk.Serialize(&buf)
		c.Raw[h], c.Spent[h] = buf.Bytes(), body
		c.Hashes = append(c.Hashes, h)
		c.Bytes += int64(buf.Len())
		prev = blk
	}
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	return c
}
