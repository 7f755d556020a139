package wirescan

import (
	"bytes"
	"errors"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// Every real block, and each of its transactions on its own, reads the way
// wire decodes it: header, txids, wtxids, output scripts and outpoints.
func TestReadsRealBlocksAsWire(t *testing.T) {
	txs, witness := 0, 0
	for i, raw := range realBlocks(t) {
		if diff := blockAgreesWithWire(raw); diff != "" {
			t.Fatalf("block %d: %s", i, diff)
		}
		var blk wire.MsgBlock
		if err := blk.Deserialize(bytes.NewReader(raw)); err != nil {
			t.Fatal(err)
		}
		for j, tx := range blk.Transactions {
			if diff := txAgreesWithWire(serialize(t, tx)); diff != "" {
				t.Fatalf("block %d tx %d: %s", i, j, diff)
			}
			txs++
			if tx.HasWitness() {
				witness++
			}
		}
	}
	if witness == 0 || witness == txs {
		t.Fatalf("the data lacks a mix: %d transactions, %d with witness", txs, witness)
	}
}

// Each malformed transaction is refused with its sentinel by NewReader;
// those whose only fault is one wire's decoder catches itself (a
// non-canonical CompactSize, a witness flag other than 1, a flag without
// witnesses) pass the count reader.
func TestTxRefusesMalformed(t *testing.T) {
	legacy := serialize(t, legacyTx())
	segwit := serialize(t, witnessTx())
	// legacy with marker and flag and an empty witness per input.
	superfluous := append(append(bytes.Clone(legacy[:4]), 0, 1), legacy[4:len(legacy)-4]...)
	superfluous = append(append(superfluous, 0), legacy[len(legacy)-4:]...)
	// 786,432 inputs declared in a 69-byte transaction.
	lying := append(append(bytes.Clone(legacy[:4]), 0xfe, 0, 0, 0x0c, 0), make([]byte, 60)...)
	for _, c := range []struct {
		name     string
		raw      []byte
		want     error
		countsOK bool
	}{
		{"empty", nil, ErrTruncated, false},
		{"cut in the lock time", legacy[:len(legacy)-1], ErrTruncated, false},
		{"cut after the marker", append(bytes.Clone(segwit[:4]), 0), ErrTruncated, false},
		{"trailing byte", append(bytes.Clone(legacy), 0), ErrTrailingData, true},
		{"witness flag 0x02", append(append(bytes.Clone(segwit[:4]), 0, 2), segwit[6:]...), ErrWitnessFlag, true},
		{"superfluous witness flag", superfluous, ErrSuperfluousWitness, true},
		{"non-canonical input count", append(append(bytes.Clone(legacy[:4]), 0xfd, 1, 0), legacy[5:]...), ErrNonCanonical, true},
		{"input count beyond the data", lying, ErrCountExceedsData, false},
		{"script length beyond the data", append(bytes.Clone(legacy[:4+1+36]), 0xfd, 0xff, 0x00), ErrCountExceedsData, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			r := NewReader(c.raw)
			_, err := r.Tx(nil, nil)
			if err == nil {
				err = r.End()
			}
			if !errors.Is(err, c.want) {
				t.Fatalf("NewReader: %v, want %v", err, c.want)
			}
			lr := NewCountReader(c.raw)
			if _, err := lr.Tx(nil, nil); (err == nil) != c.countsOK {
				t.Fatalf("count reader: %v", err)
			}
			var tx wire.MsgTx
			wr := bytes.NewReader(c.raw)
			if tx.Deserialize(wr) == nil && wr.Len() == 0 {
				t.Fatal("wire accepts it")
			}
		})
	}
}

// A block's transaction count is checked against the bytes left; a block
// of no transactions is read, for the caller to judge.
func TestBlockCounts(t *testing.T) {
	header := make([]byte, BlockHeaderSize)
	r := NewReader(append(bytes.Clone(header), 0xfd, 0xff, 0xff))
	if _, _, err := r.Block(); !errors.Is(err, ErrCountExceedsData) {
		t.Fatalf("65,535 transactions in 5 bytes: %v", err)
	}
	r = NewReader(header[:79])
	if _, _, err := r.Block(); !errors.Is(err, ErrTruncated) {
		t.Fatalf("short header: %v", err)
	}
	r = NewReader(append(bytes.Clone(header), 0))
	if _, n, err := r.Block(); err != nil || n != 0 || r.End() != nil {
		t.Fatalf("empty block: %d, %v", n, err)
	}
}

// Reading allocates nothing (an error only its message) however many items
// are declared, and the txids of a block's witness transactions cost one
// hasher per Reader.
func TestReaderAllocations(t *testing.T) {
	if raceEnabled {
		t.Skip("the race detector's instrumentation allocates")
	}
	blocks := realBlocks(t)
	big := blocks[0]
	for _, b := range blocks {
		if len(b) > len(big) {
			big = b
		}
	}
	lying := append(serialize(t, legacyTx())[:4], 0xfe, 0, 0, 0x0c, 0)
	lying = append(lying, make([]byte, 60)...)
	// The error's message: a wrapped error, its text and formatted values.
	const errorAllocs = 6
	outs := make([][]byte, 0, 1<<14)
	spends := make([]wire.OutPoint, 0, 1<<14)
	for _, c := range []struct {
		name string
		max  float64
		read func()
	}{
		{"CompactSize", 0, func() { _, _, _ = ReadCompactSize([]byte{0xfe, 0, 0, 1, 0}) }},
		{"lying tx", errorAllocs, func() { r := NewReader(lying); _, _ = r.Tx(nil, nil) }},
		{"lying tx, count reader", errorAllocs, func() { r := NewCountReader(lying); _, _ = r.Tx(nil, nil) }},
		{"block with ids", 2, func() {
			r := NewReader(big)
			_, n, _ := r.Block()
			for range n {
				t, _ := r.Tx(&outs, &spends)
				_ = r.TxID(t)
			}
			outs, spends = outs[:0], spends[:0]
		}},
	} {
		if a := testing.AllocsPerRun(20, c.read); a > c.max {
			t.Errorf("%s: %v allocations, want at most %v", c.name, a, c.max)
		}
	}
}
