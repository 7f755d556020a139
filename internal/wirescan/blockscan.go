package wirescan

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// ScannedBlock is a serialized block read in place: the header, the txids
// and what a basic filter and the prevout lookups need, with every script a
// subslice of Raw, walked by a Reader. Reading a block this way takes a few
// allocations per block (its slices, grown as outputs and inputs outnumber
// two per transaction), where wire.MsgBlock takes several per transaction,
// input and output (BenchmarkScanBlock).
type ScannedBlock struct {
	Raw    []byte
	Header wire.BlockHeader
	Hash   chainhash.Hash
	Txids  []chainhash.Hash
	// Outs holds the output scripts of every transaction, transaction
	// after transaction; OutEnd[i] is the end in Outs of transaction i's.
	Outs   [][]byte
	OutEnd []uint32
	// Spends are the outpoints of the non-coinbase inputs, in block order;
	// SpendEnd[i] is the end in Spends of transaction i's.
	Spends   []wire.OutPoint
	SpendEnd []uint32
}

// Inputs returns how many inputs transaction i (not the coinbase) has.
func (b *ScannedBlock) Inputs(i int) int {
	return int(b.SpendEnd[i] - b.SpendEnd[i-1])
}

// TxOuts returns the output scripts of transaction i.
func (b *ScannedBlock) TxOuts(i int) [][]byte {
	start := uint32(0)
	if i > 0 {
		start = b.OutEnd[i-1]
	}
	return b.Outs[start:b.OutEnd[i]]
}

// ScanBlock reads raw, which must be exactly one serialized block (witness
// encoding accepted), checks that its header hashes to want and that its
// transactions hash to the header's merkle root, and returns it read in
// place. raw must not change while the result is in use. Malformed data
// gives an error (callers wrap it in their own sentinel), never a panic.
func ScanBlock(raw []byte, want chainhash.Hash) (*ScannedBlock, error) {
	b, err := scanBlockUnchecked(raw)
	if err != nil {
		return nil, fmt.Errorf("block %s: %w", want, err)
	}
	if b.Hash != want {
		return nil, fmt.Errorf("asked for block %s, got %s", want, b.Hash)
	}
	if root := MerkleRoot(b.Txids); root != b.Header.MerkleRoot {
		return nil, fmt.Errorf("block %s: transactions hash to merkle root %s, header has %s", want, root, b.Header.MerkleRoot)
	}
	return b, nil
}

// scanBlockUnchecked reads raw as one block without checking its hash or
// merkle root.
func scanBlockUnchecked(raw []byte) (*ScannedBlock, error) {
	s := NewReader(raw)
	header, ntx, err := s.Block()
	if err != nil {
		return nil, err
	}
	if ntx == 0 {
		return nil, errors.New("block has no transactions")
	}
	b := &ScannedBlock{Raw: raw}
	if err := b.Header.Deserialize(bytes.NewReader(header)); err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	b.Hash = chainhash.DoubleHashH(header)
	b.Txids = make([]chainhash.Hash, ntx)
	ends := make([]uint32, 2*ntx)
	b.OutEnd, b.SpendEnd = ends[:ntx:ntx], ends[ntx:]
	b.Outs = make([][]byte, 0, 2*ntx)
	b.Spends = make([]wire.OutPoint, 0, 2*(ntx-1))
	for i := range b.Txids {
		spends := &b.Spends
		if i == 0 {
			spends = nil // the coinbase's input spends nothing
		}
		t, err := s.Tx(&b.Outs, spends)
		if err != nil {
			return nil, fmt.Errorf("transaction %d: %w", i, err)
		}
		b.Txids[i] = s.TxID(t)
		b.OutEnd[i] = uint32(len(b.Outs))
		b.SpendEnd[i] = uint32(len(b.Spends))
	}
	if err := s.End(); err != nil {
		return nil, fmt.Errorf("after the last transaction: %w", err)
	}
	return b, nil
}

// ScannedTx is one serialized transaction read in place.
type ScannedTx struct {
	TxID chainhash.Hash
	Outs [][]byte // output scripts, subslices of the serialization
}

// ScanTx reads raw, which must be exactly one serialized transaction, in
// place.
func ScanTx(raw []byte) (ScannedTx, error) {
	s := NewReader(raw)
	var outs [][]byte
	t, err := s.Tx(&outs, nil)
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return ScannedTx{}, fmt.Errorf("transaction: %w", err)
	}
	return ScannedTx{TxID: s.TxID(t), Outs: outs}, nil
}
