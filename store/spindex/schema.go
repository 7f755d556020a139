package spindex

import (
	"encoding/binary"
	"fmt"
	"hash/crc32"

	"github.com/btcsuite/btcd/chainhash/v2"
	bolt "go.etcd.io/bbolt"

	"github.com/cfindexd/cfindexd/headers"
)

// Bucket names and the meta key (the schema is in doc.go).
var (
	bucketMeta    = []byte("sp_meta")
	bucketTweaks  = []byte("sp_tweaks")
	bucketFilters = []byte("sp_filters")
	bucketHeaders = []byte("sp_headers")
	keyState      = []byte("state")

	allBuckets = [][]byte{bucketMeta, bucketTweaks, bucketFilters, bucketHeaders}
)

// MaxRange is the most heights one range read returns: block-dn's 2,000
// blocks per tweak file, and getcfheaders' 2,000 headers.
const MaxRange = 2000

// MaxValueSize bounds stored tweak data and taproot filters. A block of
// 4 MB holds fewer than 70,000 transactions with a taproot output, each
// 42 bytes of tweak data at most, and a filter spends under three bytes a
// key; a write above it is refused and a read treats one as corruption.
const MaxValueSize = 4 << 20

// CheckpointInterval is the spacing of Checkpoints, as BIP-157's cfcheckpt.
const CheckpointInterval = 1000

const (
	heightLen      = 4
	hashLen        = chainhash.HashSize
	crcLen         = 4
	stateLen       = 2*heightLen + hashLen + crcLen
	headerValueLen = 4*hashLen + crcLen
)

var castagnoli = crc32.MakeTable(crc32.Castagnoli)

func valueCRC(seed uint32, v []byte) uint32 { return crc32.Update(seed, castagnoli, v) }

func heightKey(h uint32) []byte { return binary.BigEndian.AppendUint32(nil, h) }

// State is how far the index reaches.
type State struct {
	// Start is the first height the index covers; Next the first it does
	// not cover yet. Start..Next-1 are indexed.
	Start, Next uint32
	// Header is the commitment header at Next-1, zero when Next = Start.
	Header chainhash.Hash
}

// IndexedUpTo returns the highest indexed height, and false when none is.
func (s State) IndexedUpTo() (uint32, bool) {
	if s.Next == s.Start {
		return 0, false
	}
	return s.Next - 1, true
}

func stateValue(s State) []byte {
	v := make([]byte, stateLen)
	binary.BigEndian.PutUint32(v, s.Start)
	binary.BigEndian.PutUint32(v[heightLen:], s.Next)
	copy(v[2*heightLen:], s.Header[:])
	binary.BigEndian.PutUint32(v[stateLen-crcLen:], valueCRC(0, v[:stateLen-crcLen]))
	return v
}

func decodeState(v []byte) (State, error) {
	if len(v) != stateLen {
		return State{}, fmt.Errorf("%w: state is %d bytes, want %d", ErrCorrupt, len(v), stateLen)
	}
	if binary.BigEndian.Uint32(v[stateLen-crcLen:]) != valueCRC(0, v[:stateLen-crcLen]) {
		return State{}, &MismatchError{What: "state"}
	}
	s := State{Start: binary.BigEndian.Uint32(v), Next: binary.BigEndian.Uint32(v[heightLen:]), Header: chainhash.Hash(v[2*heightLen:])}
	if s.Next < s.Start {
		return State{}, fmt.Errorf("%w: state next %d below start %d", ErrCorrupt, s.Next, s.Start)
	}
	return s, nil
}

// Block is a block's silent-payment data as a writer hands it over.
type Block struct {
	// TweakData is the block's tweak data (silentpay.AppendTweakData).
	TweakData []byte
	// Filter is its taproot filter in BIP-158 wire form.
	Filter []byte
	// Header is its commitment header, chained onto the previous block's.
	Header chainhash.Hash
}

// Commitment returns the block's tweak hash, filter hash and commitment
// hash (docs/silent-payments.md, section 4).
func (b *Block) Commitment() (tweakHash, filterHash, commitment chainhash.Hash) {
	tweakHash, filterHash = chainhash.DoubleHashH(b.TweakData), headers.FilterHash(b.Filter)
	return tweakHash, filterHash, CommitmentHash(tweakHash, filterHash)
}

// CommitmentHash is dSHA256(tweakHash || filterHash).
func CommitmentHash(tweakHash, filterHash chainhash.Hash) chainhash.Hash {
	var buf [2 * hashLen]byte
	copy(buf[:], tweakHash[:])
	copy(buf[hashLen:], filterHash[:])
	return chainhash.DoubleHashH(buf[:])
}

// HeaderRecord is one block's entry of the commitment chain.
type HeaderRecord struct {
	Height     uint32
	BlockHash  chainhash.Hash
	Header     chainhash.Hash
	TweakHash  chainhash.Hash
	FilterHash chainhash.Hash
}

// CommitmentHash returns the block's commitment hash, what a
// getcfheaders-style answer carries per block.
func (r *HeaderRecord) CommitmentHash() chainhash.Hash {
	return CommitmentHash(r.TweakHash, r.FilterHash)
}

func headerValue(r *HeaderRecord) []byte {
	v := make([]byte, headerValueLen)
	copy(v, r.BlockHash[:])
	copy(v[hashLen:], r.Header[:])
	copy(v[2*hashLen:], r.TweakHash[:])
	copy(v[3*hashLen:], r.FilterHash[:])
	binary.BigEndian.PutUint32(v[4*hashLen:], valueCRC(r.Height, v[:4*hashLen]))
	return v
}

func decodeHeader(h uint32, v []byte) (HeaderRecord, error) {
	if len(v) != headerValueLen {
		return HeaderRecord{}, fmt.Errorf("%w: commitment header at %d is %d bytes, want %d", ErrCorrupt, h, len(v), headerValueLen)
	}
	if binary.BigEndian.Uint32(v[4*hashLen:]) != valueCRC(h, v[:4*hashLen]) {
		return HeaderRecord{}, &MismatchError{Height: h, What: "commitment header"}
	}
	return HeaderRecord{
		Height:     h,
		BlockHash:  chainhash.Hash(v[:hashLen]),
		Header:     chainhash.Hash(v[hashLen : 2*hashLen]),
		TweakHash:  chainhash.Hash(v[2*hashLen : 3*hashLen]),
		FilterHash: chainhash.Hash(v[3*hashLen : 4*hashLen]),
	}, nil
}

// dataValue is a sp_tweaks or sp_filters value: crc || data.
func dataValue(h uint32, data []byte) []byte {
	v := make([]byte, crcLen+len(data))
	copy(v[crcLen:], data)
	binary.BigEndian.PutUint32(v, valueCRC(h, data))
	return v
}

// checkData checks a sp_tweaks or sp_filters value at height h and
// returns its data, aliasing v.
func checkData(h uint32, v []byte, what string) ([]byte, error) {
	if v == nil {
		return nil, fmt.Errorf("%w: %s at %d missing inside the index", ErrCorrupt, what, h)
	}
	if len(v) <= crcLen || len(v) > crcLen+MaxValueSize {
		return nil, fmt.Errorf("%w: %s at %d is %d bytes", ErrCorrupt, what, h, len(v))
	}
	if binary.BigEndian.Uint32(v) != valueCRC(h, v[crcLen:]) {
		return nil, &MismatchError{Height: h, What: what}
	}
	return v[crcLen:], nil
}

// buckets are the index's buckets in one transaction; nil meta means the
// index was never enabled.
type buckets struct {
	meta, tweaks, filters, headers *bolt.Bucket
}

func openBuckets(tx *bolt.Tx) (*buckets, bool, error) {
	b := &buckets{meta: tx.Bucket(bucketMeta), tweaks: tx.Bucket(bucketTweaks), filters: tx.Bucket(bucketFilters), headers: tx.Bucket(bucketHeaders)}
	if b.meta == nil {
		return nil, false, nil
	}
	for i, bk := range []*bolt.Bucket{b.meta, b.tweaks, b.filters, b.headers} {
		if bk == nil {
			return nil, false, fmt.Errorf("%w: bucket %q missing", ErrCorrupt, allBuckets[i])
		}
	}
	return b, true, nil
}

func (b *buckets) state() (State, error) {
	v := b.meta.Get(keyState)
	if v == nil {
		return State{}, fmt.Errorf("%w: no state", ErrCorrupt)
	}
	return decodeState(v)
}

// header reads the commitment header record at h, which must be indexed.
func (b *buckets) header(h uint32) (HeaderRecord, error) {
	v := b.headers.Get(heightKey(h))
	if v == nil {
		return HeaderRecord{}, fmt.Errorf("%w: commitment header at %d missing inside the index", ErrCorrupt, h)
	}
	return decodeHeader(h, v)
}

// NewBlock returns the Block of tweakData and filter whose header chains
// onto prev, the commitment header of the block before (zero before
// Start).
func NewBlock(tweakData, filter []byte, prev chainhash.Hash) Block {
	b := Block{TweakData: tweakData, Filter: filter}
	_, _, commitment := b.Commitment()
	b.Header = ChainHeader(commitment, prev)
	return b
}
