package bloom

import (
	"crypto/sha256"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
)

// MaxMerkleBlockTransactions is the largest transaction count a partial
// merkle tree may claim: MAX_BLOCK_WEIGHT / MIN_TRANSACTION_WEIGHT
// (4,000,000 / 240), Core's bound in ExtractMatches.
const MaxMerkleBlockTransactions = 16_666

// PartialMerkleTree is BIP-37's partial merkle tree (Core's
// CPartialMerkleTree) in its serialized shape: the block's transaction
// count, the hashes in depth-first order, and the flag bits packed eight to
// a byte, least significant bit first.
//
// The tree is walked depth first from the root. Each node visited takes
// one flag bit: 1 if it is an ancestor of (or is) a matched transaction.
// A node with bit 0, or a leaf, takes the next hash (its own) and its
// subtree is not visited; an inner node with bit 1 is descended into, left
// child then, if the level has one, right child. A node without a right
// child pairs its left child with itself, as the block merkle root does.
type PartialMerkleTree struct {
	Transactions uint32
	Hashes       []chainhash.Hash
	Flags        []byte
}

// Match is a transaction a partial merkle tree proves to be in the block.
type Match struct {
	Index uint32 // position in the block
	Txid  chainhash.Hash
}

// NewPartialMerkleTree builds the tree proving the transactions with
// matched[i] set among txids (a block's txids, in block order), exactly as
// Core's CPartialMerkleTree constructor does. len(matched) must equal
// len(txids). No txids gives the empty tree (no transactions, hashes or
// flags), which ExtractMatches refuses; Core's constructor would read past
// its input.
func NewPartialMerkleTree(txids []chainhash.Hash, matched []bool) *PartialMerkleTree {
	if len(txids) == 0 || len(matched) != len(txids) {
		return &PartialMerkleTree{}
	}
	b := treeBuilder{txids: txids, matched: matched, n: uint32(len(txids))}
	b.build(treeHeight(b.n), 0)
	return &PartialMerkleTree{Transactions: b.n, Hashes: b.hashes, Flags: b.flags}
}

// treeHeight is the number of levels above the leaves of a tree of n
// leaves (0 for one leaf).
func treeHeight(n uint32) uint32 {
	h := uint32(0)
	for treeWidth(n, h) > 1 {
		h++
	}
	return h
}

// treeWidth is the number of nodes at height h of a tree of n leaves.
func treeWidth(n, h uint32) uint32 {
	return uint32((uint64(n) + (1 << h) - 1) >> h)
}

type treeBuilder struct {
	txids   []chainhash.Hash
	matched []bool
	n       uint32
	hashes  []chainhash.Hash
	flags   []byte
	nbits   uint32
}

func (b *treeBuilder) pushBit(bit bool) {
	if b.nbits%8 == 0 {
		b.flags = append(b.flags, 0)
	}
	if bit {
		b.flags[b.nbits/8] |= 1 << (b.nbits % 8)
	}
	b.nbits++
}

// build is TraverseAndBuild.
func (b *treeBuilder) build(height, pos uint32) {
	parentOfMatch := false
	for p := uint64(pos) << height; p < uint64(pos+1)<<height && p < uint64(b.n); p++ {
		if b.matched[p] {
			parentOfMatch = true
			break
		}
	}
	b.pushBit(parentOfMatch)
	if height == 0 || !parentOfMatch {
		b.hashes = append(b.hashes, b.subtreeHash(height, pos))
		return
	}
	b.build(height-1, pos*2)
	if pos*2+1 < treeWidth(b.n, height-1) {
		b.build(height-1, pos*2+1)
	}
}

// subtreeHash is CalcHash: the merkle hash of the subtree at (height, pos).
func (b *treeBuilder) subtreeHash(height, pos uint32) chainhash.Hash {
	if height == 0 {
		return b.txids[pos]
	}
	left := b.subtreeHash(height-1, pos*2)
	right := left
	if pos*2+1 < treeWidth(b.n, height-1) {
		right = b.subtreeHash(height-1, pos*2+1)
	}
	return hashPair(&left, &right)
}

// hashPair is dSHA256(left || right).
func hashPair(left, right *chainhash.Hash) chainhash.Hash {
	var buf [2 * chainhash.HashSize]byte
	copy(buf[:chainhash.HashSize], left[:])
	copy(buf[chainhash.HashSize:], right[:])
	first := sha256.Sum256(buf[:])
	return chainhash.Hash(sha256.Sum256(first[:]))
}

// ExtractMatches walks the tree as Core's ExtractMatches does and returns
// the merkle root it commits to and the matched transactions in block
// order. It returns ErrBadPartialTree (wrapped) for every tree Core
// refuses: no transactions; more than MaxMerkleBlockTransactions; more
// hashes than transactions; fewer flag bits than hashes; running out of
// bits or hashes; a flag byte left entirely unused or a hash left over;
// and two sibling subtrees with the same hash, which no block of distinct
// txids has and which is how CVE-2012-2459's duplicated-subtree blocks
// would otherwise prove a transaction twice. The root must still be
// compared with the header's (MerkleBlock.Verify does).
func (t *PartialMerkleTree) ExtractMatches() (chainhash.Hash, []Match, error) {
	switch {
	case t.Transactions == 0:
		return chainhash.Hash{}, nil, fmt.Errorf("%w: no transactions", ErrBadPartialTree)
	case t.Transactions > MaxMerkleBlockTransactions:
		return chainhash.Hash{}, nil, fmt.Errorf("%w: %d transactions (at most %d)", ErrBadPartialTree, t.Transactions, MaxMerkleBlockTransactions)
	case uint64(len(t.Hashes)) > uint64(t.Transactions):
		return chainhash.Hash{}, nil, fmt.Errorf("%w: %d hashes for %d transactions", ErrBadPartialTree, len(t.Hashes), t.Transactions)
	case uint64(len(t.Flags))*8 < uint64(len(t.Hashes)):
		return chainhash.Hash{}, nil, fmt.Errorf("%w: %d flag bits for %d hashes", ErrBadPartialTree, len(t.Flags)*8, len(t.Hashes))
	}
	w := treeWalker{t: t, nbits: uint64(len(t.Flags)) * 8}
	root := w.extract(treeHeight(t.Transactions), 0)
	switch {
	case w.err != nil:
		return chainhash.Hash{}, nil, w.err
	case (w.bitsUsed+7)/8 != uint64(len(t.Flags)):
		return chainhash.Hash{}, nil, fmt.Errorf("%w: %d of %d flag bytes used", ErrBadPartialTree, (w.bitsUsed+7)/8, len(t.Flags))
	case w.hashesUsed != len(t.Hashes):
		return chainhash.Hash{}, nil, fmt.Errorf("%w: %d of %d hashes used", ErrBadPartialTree, w.hashesUsed, len(t.Hashes))
	}
	return root, w.matches, nil
}

type treeWalker struct {
	t          *PartialMerkleTree
	nbits      uint64
	bitsUsed   uint64
	hashesUsed int
	matches    []Match
	err        error
}

// extract is TraverseAndExtract. Its recursion is as deep as the tree
// (at most 15 levels for MaxMerkleBlockTransactions) and it visits at most
// one node per flag bit, so its work is bounded by the message size.
func (w *treeWalker) extract(height, pos uint32) chainhash.Hash {
	if w.err != nil {
		return chainhash.Hash{}
	}
	if w.bitsUsed >= w.nbits {
		w.err = fmt.Errorf("%w: ran out of flag bits", ErrBadPartialTree)
		return chainhash.Hash{}
	}
	bit := w.t.Flags[w.bitsUsed/8]&(1<<(w.bitsUsed%8)) != 0
	w.bitsUsed++
	if height == 0 || !bit {
		if w.hashesUsed >= len(w.t.Hashes) {
			w.err = fmt.Errorf("%w: ran out of hashes", ErrBadPartialTree)
			return chainhash.Hash{}
		}
		h := w.t.Hashes[w.hashesUsed]
		w.hashesUsed++
		if height == 0 && bit {
			w.matches = append(w.matches, Match{Index: pos, Txid: h})
		}
		return h
	}
	left := w.extract(height-1, pos*2)
	right := left
	if pos*2+1 < treeWidth(w.t.Transactions, height-1) {
		right = w.extract(height-1, pos*2+1)
		if right == left && w.err == nil {
			w.err = fmt.Errorf("%w: identical sibling subtrees at height %d", ErrBadPartialTree, height-1)
		}
	}
	return hashPair(&left, &right)
}
