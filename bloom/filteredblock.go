package bloom

import (
	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// FilteredBlock is what a BIP-37 peer that asked for a block with
// MSG_FILTERED_BLOCK receives: the merkleblock, then the matched
// transactions, each as its own tx message, in block order (Core's
// vMatchedTxn). Core sends those transactions without witness data even for
// a segwit block; which encoding a server uses is its choice, not this
// package's.
type FilteredBlock struct {
	MerkleBlock MerkleBlock
	// Matched are the indexes of the matched transactions in the block,
	// ascending; Txs are those transactions (shared with the block).
	Matched []int
	Txs     []*wire.MsgTx
}

// FilterBlock matches every transaction of block against f in block order,
// updating f as its nFlags ask (so a transaction can match because an
// earlier one in the same block added an outpoint), and returns the
// merkleblock and matched transactions Core's CMerkleBlock(block, filter)
// produces. txids are the block's txids in order; nil (or a slice of the
// wrong length) computes them. f must not be nil (a peer without a filter
// gets no answer at all: Core sends nothing for MSG_FILTERED_BLOCK then).
// A block without transactions, which no valid block is, gives an empty
// tree.
//
// When nothing matches, the tree is one flag bit and the block's merkle
// root: it is taken from the header rather than recomputed, which is
// exact for any block whose header commits to its transactions, as every
// block from the node does.
func FilterBlock(block *wire.MsgBlock, txids []chainhash.Hash, f *Filter) *FilteredBlock {
	m := NewBlockMatcher(block, txids, f)
	m.Match(len(block.Transactions))
	return m.Result()
}

// BlockMatcher is FilterBlock in pieces: Match matches the next
// transactions, so that a caller can bound the work done at a time (a
// maximal filter hashes each element 50 times) and let others work in
// between; Result is FilterBlock's answer once every transaction was
// matched. The filter must not be used elsewhere between the pieces.
type BlockMatcher struct {
	block   *wire.MsgBlock
	txids   []chainhash.Hash
	f       *Filter
	n       int // the block's transactions
	next    int
	matched []bool
	fb      *FilteredBlock
	// detached: Detach was called, so Result's Txs stay empty (the
	// transactions of a block released between pieces).
	detached bool
}

// NewBlockMatcher returns a matcher of block against f, FilterBlock's
// arguments, none matched yet.
func NewBlockMatcher(block *wire.MsgBlock, txids []chainhash.Hash, f *Filter) *BlockMatcher {
	if len(txids) != len(block.Transactions) {
		txids = BlockTxids(block)
	}
	return &BlockMatcher{block: block, txids: txids, f: f, n: len(block.Transactions),
		fb: &FilteredBlock{MerkleBlock: MerkleBlock{Header: block.Header}}}
}

// Detach drops the matcher's references to its block, its txids and the
// matched transactions, so that the block can be freed while the matcher
// waits for its next piece; Attach gives it the block again (the same
// block, decoded again or not) before the next Match. From a Detach on,
// Result's Txs are empty: its Matched indexes name the transactions.
func (m *BlockMatcher) Detach() {
	m.block, m.txids = nil, nil
	m.fb.Txs = nil
	m.detached = true
}

// Attach gives a detached matcher its block and txids again and reports
// whether they are the block it was matching (its header and number of
// transactions); a different block is not attached.
func (m *BlockMatcher) Attach(block *wire.MsgBlock, txids []chainhash.Hash) bool {
	if block == nil || block.Header != m.fb.MerkleBlock.Header || len(block.Transactions) != m.n {
		return false
	}
	if len(txids) != m.n {
		txids = BlockTxids(block)
	}
	m.block, m.txids = block, txids
	return true
}

// Match matches the next n transactions (fewer at the end of the block)
// and reports whether every transaction has been matched; a detached
// matcher matches nothing.
func (m *BlockMatcher) Match(n int) bool {
	if m.block == nil { // detached: nothing to match until Attach
		return m.Done()
	}
	end := min(m.n, m.next+max(n, 0))
	for ; m.next < end; m.next++ {
		i, tx := m.next, m.block.Transactions[m.next]
		if !m.f.MatchTxAndUpdate(tx, &m.txids[i]) {
			continue
		}
		if m.matched == nil {
			m.matched = make([]bool, m.n)
		}
		m.matched[i] = true
		m.fb.Matched = append(m.fb.Matched, i)
		if !m.detached {
			m.fb.Txs = append(m.fb.Txs, tx)
		}
	}
	return m.Done()
}

// MatchHashes matches the next transactions until they cost at least
// hashes (Filter.Hashes, counting each transaction as one more, so that
// a filter that hashes nothing still moves on in bounded pieces) or every
// transaction is matched, and reports whether every transaction has been
// matched: a piece bounded by what the filter actually computes, so a
// sparse wallet filter (a bit not set is found after a hash or two)
// matches many more transactions in a piece than a nearly full one.
func (m *BlockMatcher) MatchHashes(hashes uint64) bool {
	start := m.f.Hashes()
	for n := uint64(0); !m.Done() && m.f.Hashes()-start+n < hashes; n++ {
		m.Match(1)
	}
	return m.Done()
}

// Done reports whether every transaction has been matched.
func (m *BlockMatcher) Done() bool { return m.next == m.n }

// Result returns the filtered block; call it once, when Done and attached.
func (m *BlockMatcher) Result() *FilteredBlock {
	fb, txids := m.fb, m.txids
	if m.matched == nil && len(txids) > 0 {
		fb.MerkleBlock.Tree = PartialMerkleTree{
			Transactions: uint32(len(txids)),
			Hashes:       []chainhash.Hash{m.block.Header.MerkleRoot},
			Flags:        []byte{0},
		}
		return fb
	}
	matched := m.matched
	if matched == nil {
		matched = make([]bool, len(txids))
	}
	fb.MerkleBlock.Tree = *NewPartialMerkleTree(txids, matched)
	return fb
}

// BlockTxids returns the txids of block's transactions in order.
func BlockTxids(block *wire.MsgBlock) []chainhash.Hash {
	txids := make([]chainhash.Hash, len(block.Transactions))
	for i, tx := range block.Transactions {
		txids[i] = tx.TxHash()
	}
	return txids
}
