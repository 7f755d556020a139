package bitcoind

import (
	"bytes"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// scannedBlock is a serialized block read in place: the header, the txids
// and what a basic filter and the prevout lookups need, with every script a
// subslice of raw, walked by internal/wirescan's Reader. Reading a block
// this way takes a few allocations per block (its slices, grown as outputs
// and inputs outnumber two per transaction), where wire.MsgBlock takes
// several per transaction, input and output (BenchmarkScanBlock: 972
// against 2,219 allocations for the recorded blocks); cfbench's profile of a catch-up from btcd had block decoding and
// the garbage it left at about a third of cfindexd's CPU.
type scannedBlock struct {
	raw    []byte
	header wire.BlockHeader
	hash   chainhash.Hash
	txids  []chainhash.Hash
	// outs holds the output scripts of every transaction, transaction
	// after transaction; outEnd[i] is the end in outs of transaction i's.
	outs   [][]byte
	outEnd []uint32
	// spends are the outpoints of the non-coinbase inputs, in block order;
	// spendEnd[i] is the end in spends of transaction i's.
	spends   []wire.OutPoint
	spendEnd []uint32
}

// inputs returns how many inputs transaction i (not the coinbase) has.
func (b *scannedBlock) inputs(i int) int {
	return int(b.spendEnd[i] - b.spendEnd[i-1])
}

// txOuts returns the output scripts of transaction i.
func (b *scannedBlock) txOuts(i int) [][]byte {
	start := uint32(0)
	if i > 0 {
		start = b.outEnd[i-1]
	}
	return b.outs[start:b.outEnd[i]]
}

// scanBlock reads raw, which must be exactly one serialized block (witness
// encoding accepted), checks that its header hashes to want and that its
// transactions hash to the header's merkle root, and returns it read in
// place. raw must not change while the result is in use. Malformed data
// gives an error wrapping ErrMalformed, never a panic.
func scanBlock(raw []byte, want chainhash.Hash) (*scannedBlock, error) {
	b, err := scanBlockUnchecked(raw)
	if err != nil {
		return nil, fmt.Errorf("%w: block %s: %v", ErrMalformed, want, err)
	}
	if b.hash != want {
		return nil, fmt.Errorf("%w: asked for block %s, got %s", ErrMalformed, want, b.hash)
	}
	if root := merkleRootOfTxids(b.txids); root != b.header.MerkleRoot {
		return nil, fmt.Errorf("%w: block %s: transactions hash to merkle root %s, header has %s", ErrMalformed, want, root, b.header.MerkleRoot)
	}
	return b, nil
}

// scanBlockUnchecked reads raw as one block without checking its hash or
// merkle root.
func scanBlockUnchecked(raw []byte) (*scannedBlock, error) {
	s := wirescan.NewReader(raw)
	header, ntx, err := s.Block()
	if err != nil {
		return nil, err
	}
	if ntx == 0 {
		return nil, errors.New("block has no transactions")
	}
	b := &scannedBlock{raw: raw}
	if err := b.header.Deserialize(bytes.NewReader(header)); err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	b.hash = chainhash.DoubleHashH(header)
	b.txids = make([]chainhash.Hash, ntx)
	ends := make([]uint32, 2*ntx)
	b.outEnd, b.spendEnd = ends[:ntx:ntx], ends[ntx:]
	b.outs = make([][]byte, 0, 2*ntx)
	b.spends = make([]wire.OutPoint, 0, 2*(ntx-1))
	for i := range b.txids {
		spends := &b.spends
		if i == 0 {
			spends = nil // the coinbase's input spends nothing
		}
		t, err := s.Tx(&b.outs, spends)
		if err != nil {
			return nil, fmt.Errorf("transaction %d: %w", i, err)
		}
		b.txids[i] = s.TxID(t)
		b.outEnd[i] = uint32(len(b.outs))
		b.spendEnd[i] = uint32(len(b.spends))
	}
	if err := s.End(); err != nil {
		return nil, fmt.Errorf("after the last transaction: %w", err)
	}
	return b, nil
}

// scannedTx is one serialized transaction read in place.
type scannedTx struct {
	txid chainhash.Hash
	outs [][]byte // output scripts, subslices of the serialization
}

// scanTx reads raw, which must be exactly one serialized transaction, in
// place. Errors wrap ErrMalformed.
func scanTx(raw []byte) (scannedTx, error) {
	s := wirescan.NewReader(raw)
	var outs [][]byte
	t, err := s.Tx(&outs, nil)
	if err == nil {
		err = s.End()
	}
	if err != nil {
		return scannedTx{}, fmt.Errorf("%w: transaction: %v", ErrMalformed, err)
	}
	return scannedTx{txid: s.TxID(t), outs: outs}, nil
}
