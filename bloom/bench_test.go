package bloom

import (
	"math/rand/v2"
	"testing"

	"github.com/btcsuite/btcd/btcutil/v2"
	btcbloom "github.com/btcsuite/btcd/btcutil/v2/bloom"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testvectors"
)

// benchFilter is a realistic wallet filter (n = 200, p = 0.0001, the
// issue's benchmark filter) of random elements: it matches almost nothing,
// which is the common case for a server.
func benchFilter(b *testing.B, mode wire.BloomUpdateType) *Filter {
	rng := rand.New(rand.NewPCG(200, 1))
	p, _ := ParamsFor(200, 0.0001)
	f := New(p, rng.Uint32(), mode)
	for _, e := range randomElements(rng, 200, 20) {
		f.Insert(e)
	}
	return f
}

// BenchmarkMatchTx is the cost of matching one transaction of mainnet
// block 277,647 against a realistic filter, ours against btcutil's
// (ns/op is per transaction).
func BenchmarkMatchTx(b *testing.B) {
	blk := testvectors.BigBlock(b)
	txids := BlockTxids(blk)
	b.Run("cfindexd", func(b *testing.B) {
		f := benchFilter(b, wire.BloomUpdateAll)
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			j := i % len(blk.Transactions)
			f.MatchTxAndUpdate(blk.Transactions[j], &txids[j])
		}
	})
	b.Run("btcutil", func(b *testing.B) {
		f := btcbloom.LoadFilter(benchFilter(b, wire.BloomUpdateAll).MsgFilterLoad())
		txs := btcutil.NewBlock(blk).Transactions()
		for _, tx := range txs {
			_ = tx.Hash() // btcutil caches the txid; do not time hashing
		}
		b.ReportAllocs()
		for i := 0; b.Loop(); i++ {
			f.MatchTxAndUpdate(txs[i%len(txs)])
		}
	})
}

// BenchmarkFilterBlock is the cost of one filtered block (merkleblock and
// matched transactions) for block 277,647 with txids known, as a server
// caching them per block pays it: with nothing matched (the common case),
// and with a filter matching about one transaction in twenty; btcutil's
// NewMerkleBlock for comparison (it hashes nothing either: btcutil.Block
// caches txids).
func BenchmarkFilterBlock(b *testing.B) {
	blk := testvectors.BigBlock(b)
	txids := BlockTxids(blk)
	b.Logf("block 277647: %d transactions", len(blk.Transactions))
	filters := []struct {
		name   string
		filter func(b *testing.B) *Filter
	}{
		{"no-match", func(b *testing.B) *Filter { return benchFilter(b, wire.BloomUpdateNone) }},
		{"5pct-match", func(b *testing.B) *Filter {
			f := benchFilter(b, wire.BloomUpdateNone)
			for i := 0; i < len(txids); i += 20 {
				f.Insert(txids[i][:])
			}
			return f
		}},
	}
	for _, fc := range filters {
		b.Run("cfindexd/"+fc.name, func(b *testing.B) {
			f := fc.filter(b)
			b.ReportAllocs()
			for b.Loop() {
				FilterBlock(blk, txids, f)
			}
		})
	}
	for _, fc := range filters {
		b.Run("btcutil/"+fc.name, func(b *testing.B) {
			f := btcbloom.LoadFilter(fc.filter(b).MsgFilterLoad())
			ublk := btcutil.NewBlock(blk)
			for _, tx := range ublk.Transactions() {
				_ = tx.Hash()
			}
			b.ReportAllocs()
			for b.Loop() {
				btcbloom.NewMerkleBlock(ublk, f)
			}
		})
	}
}

// BenchmarkDecodeVerifyMerkleBlock is the wallet side: decode and verify
// the merkleblock of block 277,647 with one transaction in twenty matched.
func BenchmarkDecodeVerifyMerkleBlock(b *testing.B) {
	blk := testvectors.BigBlock(b)
	txids := BlockTxids(blk)
	f := benchFilter(b, wire.BloomUpdateNone)
	for i := 0; i < len(txids); i += 20 {
		f.Insert(txids[i][:])
	}
	payload := FilterBlock(blk, txids, f).MerkleBlock.Bytes()
	b.ReportAllocs()
	for b.Loop() {
		mb, err := DecodeMerkleBlock(payload)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := mb.Verify(); err != nil {
			b.Fatal(err)
		}
	}
}
