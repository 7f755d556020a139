package bloom

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
)

// MerkleBlock is a merkleblock message: a block header and the partial
// merkle tree proving the block's matched transactions.
//
// Serialized (Core's CMerkleBlock): the 80-byte header, the transaction
// count (uint32 LE), a CompactSize hash count and the hashes, a
// CompactSize flag-byte count and the flag bytes.
type MerkleBlock struct {
	Header wire.BlockHeader
	Tree   PartialMerkleTree
}

// minMerkleBlockSize is a merkleblock with no hashes and no flags.
const minMerkleBlockSize = wire.MaxBlockHeaderPayload + 4 + 1 + 1

// DecodeMerkleBlock decodes a merkleblock payload from an untrusted peer.
// Every count is checked against the bytes that remain before anything is
// allocated, so a message costs at most a small multiple of its size
// (unlike wire.MsgMerkleBlock, which allocates room for a declared 400,000
// hashes up front). CompactSizes must be canonical and the payload must end
// with the flags; otherwise the error wraps ErrMalformedMerkleBlock. The
// tree itself is not checked: call Verify.
func DecodeMerkleBlock(payload []byte) (*MerkleBlock, error) {
	if len(payload) < minMerkleBlockSize {
		return nil, fmt.Errorf("%w: %d bytes, at least %d needed", ErrMalformedMerkleBlock, len(payload), minMerkleBlockSize)
	}
	r := wirescan.NewReader(payload)
	header, _ := r.Next(wire.MaxBlockHeaderPayload) // length checked above
	m := &MerkleBlock{}
	if err := m.Header.Deserialize(bytes.NewReader(header)); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformedMerkleBlock, err)
	}
	txs, _ := r.Next(4)
	m.Tree.Transactions = binary.LittleEndian.Uint32(txs)
	nHashes, err := r.Count(chainhash.HashSize)
	if err != nil {
		return nil, fmt.Errorf("%w: hash count: %v", ErrMalformedMerkleBlock, err)
	}
	hashes, _ := r.Next(nHashes * chainhash.HashSize) // bounded by Count
	m.Tree.Hashes = make([]chainhash.Hash, nHashes)
	for i := range m.Tree.Hashes {
		copy(m.Tree.Hashes[i][:], hashes[i*chainhash.HashSize:])
	}
	nFlags, err := r.CompactSize()
	if err != nil {
		return nil, fmt.Errorf("%w: flag count: %v", ErrMalformedMerkleBlock, err)
	}
	if nFlags != uint64(r.Len()) {
		return nil, fmt.Errorf("%w: %d flag bytes declared, %d bytes left", ErrMalformedMerkleBlock, nFlags, r.Len())
	}
	m.Tree.Flags = bytes.Clone(r.Rest())
	return m, nil
}

// Verify checks the tree as Core's ExtractMatches does and that its root is
// the header's merkle root, and returns the matched transactions in block
// order. It does not check the header itself (its hash, proof of work or
// place in the chain): the caller compares the header with the one it
// asked for. Errors wrap ErrBadPartialTree or ErrMerkleRootMismatch.
//
// A partial merkle tree cannot tell a transaction from an inner node whose
// 64 bytes happen to parse as one (CVE-2017-12842): a peer lying about the
// transaction count could present half of a mined 64-byte transaction as a
// txid. Callers should check that every matched transaction they receive
// hashes to its txid and is not 64 bytes long without its witness.
func (m *MerkleBlock) Verify() ([]Match, error) {
	root, matches, err := m.Tree.ExtractMatches()
	if err != nil {
		return nil, err
	}
	if root != m.Header.MerkleRoot {
		return nil, fmt.Errorf("%w: tree root %s, header %s", ErrMerkleRootMismatch, root, m.Header.MerkleRoot)
	}
	return matches, nil
}

// MsgMerkleBlock returns the wire message of m (sharing its hashes).
func (m *MerkleBlock) MsgMerkleBlock() *wire.MsgMerkleBlock {
	msg := &wire.MsgMerkleBlock{
		Header:       m.Header,
		Transactions: m.Tree.Transactions,
		Hashes:       make([]*chainhash.Hash, len(m.Tree.Hashes)),
		Flags:        m.Tree.Flags,
	}
	for i := range m.Tree.Hashes {
		msg.Hashes[i] = &m.Tree.Hashes[i]
	}
	return msg
}

// Bytes serializes m as a merkleblock payload, byte for byte as Core does.
func (m *MerkleBlock) Bytes() []byte {
	var buf bytes.Buffer
	buf.Grow(minMerkleBlockSize + 9*2 + len(m.Tree.Hashes)*chainhash.HashSize + len(m.Tree.Flags))
	_ = m.Header.Serialize(&buf) // a bytes.Buffer does not fail
	var b [9]byte
	binary.LittleEndian.PutUint32(b[:4], m.Tree.Transactions)
	buf.Write(b[:4])
	_ = wire.WriteVarInt(&buf, 0, uint64(len(m.Tree.Hashes)))
	for i := range m.Tree.Hashes {
		buf.Write(m.Tree.Hashes[i][:])
	}
	_ = wire.WriteVarInt(&buf, 0, uint64(len(m.Tree.Flags)))
	buf.Write(m.Tree.Flags)
	return buf.Bytes()
}
