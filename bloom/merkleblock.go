package bloom

import (
	"bytes"
	"encoding/binary"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
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
	m := &MerkleBlock{}
	if err := m.Header.Deserialize(bytes.NewReader(payload[:wire.MaxBlockHeaderPayload])); err != nil {
		return nil, fmt.Errorf("%w: header: %v", ErrMalformedMerkleBlock, err)
	}
	rest := payload[wire.MaxBlockHeaderPayload:]
	m.Tree.Transactions = binary.LittleEndian.Uint32(rest)
	rest = rest[4:]
	nHashes, rest, err := readCompactSize(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: hash count: %v", ErrMalformedMerkleBlock, err)
	}
	if nHashes > uint64(len(rest))/chainhash.HashSize {
		return nil, fmt.Errorf("%w: %d hashes declared, %d bytes left", ErrMalformedMerkleBlock, nHashes, len(rest))
	}
	m.Tree.Hashes = make([]chainhash.Hash, nHashes)
	for i := range m.Tree.Hashes {
		copy(m.Tree.Hashes[i][:], rest[:chainhash.HashSize])
		rest = rest[chainhash.HashSize:]
	}
	nFlags, rest, err := readCompactSize(rest)
	if err != nil {
		return nil, fmt.Errorf("%w: flag count: %v", ErrMalformedMerkleBlock, err)
	}
	if nFlags != uint64(len(rest)) {
		return nil, fmt.Errorf("%w: %d flag bytes declared, %d bytes left", ErrMalformedMerkleBlock, nFlags, len(rest))
	}
	m.Tree.Flags = bytes.Clone(rest)
	return m, nil
}

// readCompactSize reads a canonical CompactSize off the front of b.
func readCompactSize(b []byte) (uint64, []byte, error) {
	if len(b) < 1 {
		return 0, nil, fmt.Errorf("truncated")
	}
	var v, min uint64
	var n int
	switch b[0] {
	case 0xfd:
		n, min = 2, 0xfd
	case 0xfe:
		n, min = 4, 0x10000
	case 0xff:
		n, min = 8, 0x100000000
	default:
		return uint64(b[0]), b[1:], nil
	}
	if len(b) < 1+n {
		return 0, nil, fmt.Errorf("truncated")
	}
	switch n {
	case 2:
		v = uint64(binary.LittleEndian.Uint16(b[1:]))
	case 4:
		v = uint64(binary.LittleEndian.Uint32(b[1:]))
	default:
		v = binary.LittleEndian.Uint64(b[1:])
	}
	if v < min {
		return 0, nil, fmt.Errorf("non-canonical CompactSize %d", v)
	}
	return v, b[1+n:], nil
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
