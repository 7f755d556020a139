package bitcoind

import (
	"bytes"
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"hash"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// scannedBlock is a serialized block read in place: the header, the txids
// and what a basic filter and the prevout lookups need, with every script a
// subslice of raw. Reading a block this way takes a few allocations per
// block (its slices, grown as outputs and inputs outnumber two per
// transaction), where wire.MsgBlock takes several per transaction, input
// and output (BenchmarkScanBlock: 1,020 against 2,219 allocations for the
// recorded blocks); cfbench's profile of a catch-up from btcd had block decoding and
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

// Smallest encodings (and minTxOutSize, spenttxouts.go), used to bound counts by the bytes left before
// anything is allocated for them.
const (
	minTxSize     = 10 // version, two empty counts, lock time
	minTxInSize   = 41 // outpoint, empty script, sequence
	blockHeaderSz = wire.MaxBlockHeaderPayload
)

// errTruncated is what the scanner reports when the bytes end early.
var errTruncated = errors.New("unexpected end of data")

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
	if len(raw) < blockHeaderSz {
		return nil, errTruncated
	}
	b := &scannedBlock{raw: raw}
	if err := b.header.Deserialize(bytes.NewReader(raw[:blockHeaderSz])); err != nil {
		return nil, fmt.Errorf("header: %v", err)
	}
	b.hash = chainhash.DoubleHashH(raw[:blockHeaderSz])
	s := scanner{raw: raw, p: blockHeaderSz}
	ntx, err := s.count(minTxSize)
	if err != nil {
		return nil, fmt.Errorf("transaction count: %w", err)
	}
	if ntx == 0 {
		return nil, errors.New("block has no transactions")
	}
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
		if b.txids[i], err = s.tx(&b.outs, spends); err != nil {
			return nil, fmt.Errorf("transaction %d: %w", i, err)
		}
		b.outEnd[i] = uint32(len(b.outs))
		b.spendEnd[i] = uint32(len(b.spends))
	}
	if s.p != len(raw) {
		return nil, fmt.Errorf("%d bytes after the last transaction", len(raw)-s.p)
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
	s := scanner{raw: raw}
	var t scannedTx
	var err error
	if t.txid, err = s.tx(&t.outs, nil); err != nil {
		return scannedTx{}, fmt.Errorf("%w: transaction: %v", ErrMalformed, err)
	}
	if s.p != len(raw) {
		return scannedTx{}, fmt.Errorf("%w: %d bytes after the transaction", ErrMalformed, len(raw)-s.p)
	}
	return t, nil
}

// scanner reads Bitcoin serialization in place: transactions (tx),
// CompactSize counts and length-prefixed bytes. It accepts what wire's
// witness-encoding decoder accepts (canonical CompactSize integers, a
// 0x00 marker followed by flag 0x01 and then at least one input with a
// witness) and bounds every count by the bytes left, so a hostile count
// cannot make it allocate.
type scanner struct {
	raw []byte
	p   int
	sha hash.Hash // for txids of witness transactions; created on first use
}

// tx reads one transaction, appends its output scripts to outs and, when
// spends is non-nil, its inputs' outpoints to spends, and returns its txid.
func (s *scanner) tx(outs *[][]byte, spends *[]wire.OutPoint) (chainhash.Hash, error) {
	start := s.p
	if err := s.skip(4); err != nil { // version
		return chainhash.Hash{}, err
	}
	witness := false
	if s.p < len(s.raw) && s.raw[s.p] == 0x00 {
		if s.p+1 >= len(s.raw) {
			return chainhash.Hash{}, errTruncated
		}
		if s.raw[s.p+1] != 0x01 {
			return chainhash.Hash{}, fmt.Errorf("witness marker followed by flag %#x, want 0x01", s.raw[s.p+1])
		}
		witness = true
		s.p += 2
	}
	bodyStart := s.p
	nin, err := s.count(minTxInSize)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("input count: %w", err)
	}
	for range nin {
		if s.p+36 > len(s.raw) {
			return chainhash.Hash{}, errTruncated
		}
		if spends != nil {
			var op wire.OutPoint
			copy(op.Hash[:], s.raw[s.p:s.p+32])
			op.Index = binary.LittleEndian.Uint32(s.raw[s.p+32:])
			*spends = append(*spends, op)
		}
		s.p += 36
		if _, err := s.bytes(); err != nil { // signature script
			return chainhash.Hash{}, fmt.Errorf("signature script: %w", err)
		}
		if err := s.skip(4); err != nil { // sequence
			return chainhash.Hash{}, err
		}
	}
	nout, err := s.count(minTxOutSize)
	if err != nil {
		return chainhash.Hash{}, fmt.Errorf("output count: %w", err)
	}
	for range nout {
		if err := s.skip(8); err != nil { // value
			return chainhash.Hash{}, err
		}
		script, err := s.bytes()
		if err != nil {
			return chainhash.Hash{}, fmt.Errorf("output script: %w", err)
		}
		*outs = append(*outs, script)
	}
	bodyEnd := s.p
	if witness {
		anyWitness := false
		for range nin {
			items, err := s.count(1)
			if err != nil {
				return chainhash.Hash{}, fmt.Errorf("witness item count: %w", err)
			}
			anyWitness = anyWitness || items > 0
			for range items {
				if _, err := s.bytes(); err != nil {
					return chainhash.Hash{}, fmt.Errorf("witness item: %w", err)
				}
			}
		}
		if !anyWitness {
			// Core: "Superfluous witness record"; wire refuses it too.
			return chainhash.Hash{}, errors.New("witness flag set but no input has a witness")
		}
	}
	if err := s.skip(4); err != nil { // lock time
		return chainhash.Hash{}, err
	}
	if !witness {
		return chainhash.DoubleHashH(s.raw[start:s.p]), nil
	}
	// The txid covers the version, the inputs and outputs and the lock
	// time: everything but the marker, flag and witnesses.
	if s.sha == nil {
		s.sha = sha256.New()
	}
	s.sha.Reset()
	s.sha.Write(s.raw[start : start+4])
	s.sha.Write(s.raw[bodyStart:bodyEnd])
	s.sha.Write(s.raw[s.p-4 : s.p])
	var first [sha256.Size]byte
	s.sha.Sum(first[:0])
	return chainhash.Hash(sha256.Sum256(first[:])), nil
}

// skip advances past n bytes.
func (s *scanner) skip(n int) error {
	if n > len(s.raw)-s.p {
		return errTruncated
	}
	s.p += n
	return nil
}

// bytes reads a CompactSize length and returns that many bytes in place.
func (s *scanner) bytes() ([]byte, error) {
	n, err := s.count(1)
	if err != nil {
		return nil, err
	}
	b := s.raw[s.p : s.p+n : s.p+n]
	s.p += n
	return b, nil
}

// count reads a canonical CompactSize integer and checks that that many
// items of at least minSize bytes each fit in the bytes left.
func (s *scanner) count(minSize int) (int, error) {
	v, err := s.compactSize()
	if err != nil {
		return 0, err
	}
	if v > uint64(len(s.raw)-s.p)/uint64(minSize) {
		return 0, fmt.Errorf("count %d exceeds the %d bytes left", v, len(s.raw)-s.p)
	}
	return int(v), nil
}

// compactSize reads a CompactSize integer, rejecting non-canonical
// encodings as wire and Bitcoin Core do.
func (s *scanner) compactSize() (uint64, error) {
	if s.p >= len(s.raw) {
		return 0, errTruncated
	}
	first := s.raw[s.p]
	var v, least uint64
	var n int
	switch first {
	case 0xfd:
		n, least = 2, 0xfd
	case 0xfe:
		n, least = 4, 0x10000
	case 0xff:
		n, least = 8, 0x100000000
	default:
		s.p++
		return uint64(first), nil
	}
	if n > len(s.raw)-s.p-1 {
		return 0, errTruncated
	}
	b := s.raw[s.p+1 : s.p+1+n]
	switch n {
	case 2:
		v = uint64(binary.LittleEndian.Uint16(b))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b))
	default:
		v = binary.LittleEndian.Uint64(b)
	}
	if v < least {
		return 0, fmt.Errorf("non-canonical CompactSize %#x encoded in %d bytes", v, n+1)
	}
	s.p += 1 + n
	return v, nil
}
