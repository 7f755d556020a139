package blockfiles

import (
	"context"
	"encoding/binary"
	"runtime"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chaincfg/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/internal/corefiles"
)

// BenchmarkBlocksDirIndex measures the in-memory index of a chain of
// 200,000 small (coinbase-only) blocks over many files, walked from the
// newest file down to genesis as a catch-up from an empty store does:
// heap bytes per indexed block (Go's accounting, index slices and maps
// included) and walk time per block.
func BenchmarkBlocksDirIndex(b *testing.B) {
	const blocks = 200000
	params := &chaincfg.RegressionNetParams
	dir := b.TempDir()
	w, err := corefiles.NewWriter(dir, params, corefiles.Options{Key: [8]byte{1}, MaxFileSize: 1 << 20, BlockChunk: -1, UndoChunk: -1})
	if err != nil {
		b.Fatal(err)
	}
	prev := params.GenesisBlock
	if err := w.AddBlock(prev); err != nil {
		b.Fatal(err)
	}
	for h := 1; h < blocks; h++ {
		cb := wire.NewMsgTx(2)
		cb.AddTxIn(&wire.TxIn{PreviousOutPoint: wire.OutPoint{Index: 0xffffffff}, SignatureScript: binary.LittleEndian.AppendUint32([]byte{0x04}, uint32(h)), Sequence: 0xffffffff})
		cb.AddTxOut(&wire.TxOut{Value: 0, PkScript: []byte{0x6a}}) // unspendable: the writer's UTXO set stays empty
		blk := &wire.MsgBlock{Header: wire.BlockHeader{Version: 4, PrevBlock: prev.BlockHash(), Timestamp: prev.Header.Timestamp.Add(time.Minute), Bits: prev.Header.Bits}}
		blk.Transactions = []*wire.MsgTx{cb}
		blk.Header.MerkleRoot = cb.TxHash()
		if err := w.AddBlock(blk); err != nil {
			b.Fatal(err)
		}
		prev = blk
	}
	files := w.Files()
	if err := w.Close(); err != nil {
		b.Fatal(err)
	}
	var heap uint64
	for b.Loop() {
		runtime.GC()
		var before, after runtime.MemStats
		runtime.ReadMemStats(&before)
		d, err := Open(dir, params.Net, zerolog.Nop())
		if err != nil {
			b.Fatal(err)
		}
		if _, _, err := d.ReadBlock(context.Background(), *params.GenesisHash); err != nil {
			b.Fatal(err)
		}
		runtime.GC()
		runtime.ReadMemStats(&after)
		heap = after.HeapAlloc - before.HeapAlloc
		if n, _, _ := d.IndexStats(); n != blocks {
			b.Fatalf("%d blocks indexed of %d", n, blocks)
		}
		runtime.KeepAlive(d)
	}
	b.ReportMetric(float64(heap)/blocks, "heap-bytes/block")
	b.ReportMetric(float64(files), "files")
	b.ReportMetric(b.Elapsed().Seconds()/float64(b.N)/blocks*1e9, "walk-ns/block")
}
