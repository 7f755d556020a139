package bloom

import (
	"errors"
	"math/rand/v2"
	"slices"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// merkleRoot is the block merkle root of txids, computed level by level
// (the last node of an odd level paired with itself), independently of the
// partial-tree code.
func merkleRoot(txids []chainhash.Hash) chainhash.Hash {
	level := slices.Clone(txids)
	for len(level) > 1 {
		if len(level)%2 == 1 {
			level = append(level, level[len(level)-1])
		}
		next := make([]chainhash.Hash, 0, len(level)/2)
		for i := 0; i < len(level); i += 2 {
			next = append(next, chainhash.DoubleHashH(append(level[i][:], level[i+1][:]...)))
		}
		level = next
	}
	return level[0]
}

func randomTxids(rng *rand.Rand, n int) []chainhash.Hash {
	out := make([]chainhash.Hash, n)
	for i := range out {
		out[i] = chainhash.Hash(elemHash(rng))
	}
	return out
}

// Every tree built over distinct txids extracts back to the block's merkle
// root and exactly the matched transactions, for every block size up to
// 70, a few large ones and every density of matches; encoded as a
// merkleblock it decodes to the same tree.
func TestPartialMerkleTreeRoundTrip(t *testing.T) {
	rng := rand.New(rand.NewPCG(2459, 1))
	sizes := []int{1, 2, 3, 4, 5, 7, 8, 9, 15, 16, 17, 1000, 4095, MaxMerkleBlockTransactions}
	for n := 1; n <= 70; n++ {
		sizes = append(sizes, n)
	}
	for _, n := range sizes {
		txids := randomTxids(rng, n)
		root := merkleRoot(txids)
		for _, density := range []float64{0, 1, 0.5, 0.05, -1} {
			matched := make([]bool, n)
			var want []Match
			for i := range matched {
				switch {
				case density < 0:
					matched[i] = i == n-1 // only the last
				default:
					matched[i] = rng.Float64() < density
				}
				if matched[i] {
					want = append(want, Match{Index: uint32(i), Txid: txids[i]})
				}
			}
			tree := NewPartialMerkleTree(txids, matched)
			gotRoot, got, err := tree.ExtractMatches()
			if err != nil {
				t.Fatalf("n=%d density=%v: %v", n, density, err)
			}
			if gotRoot != root || !slices.Equal(got, want) {
				t.Fatalf("n=%d density=%v: root %s matches %d, want %s and %d", n, density, gotRoot, len(got), root, len(want))
			}
			mb := MerkleBlock{Header: wire.BlockHeader{MerkleRoot: root}, Tree: *tree}
			dec, err := DecodeMerkleBlock(mb.Bytes())
			if err != nil {
				t.Fatalf("n=%d: decode: %v", n, err)
			}
			if got, err := dec.Verify(); err != nil || !slices.Equal(got, want) {
				t.Fatalf("n=%d density=%v: decoded tree verifies to %d matches, %v", n, density, len(got), err)
			}
		}
	}
}

// CVE-2012-2459: a block whose transaction list ends in a duplicated run
// has the same merkle root as the block without it. A partial tree over
// the mutated list proves the last transaction "twice"; the identical
// sibling subtrees give it away and it is refused, though its root is the
// header's.
func TestPartialMerkleTreeRefusesDuplicatedSubtrees(t *testing.T) {
	rng := rand.New(rand.NewPCG(2012, 2459))
	for _, n := range []int{3, 5, 6, 11} {
		txids := randomTxids(rng, n)
		mutated := slices.Clone(txids)
		// Duplicate the last transaction (n odd) or the last two (n ≡ 2 mod 4).
		dup := 1
		if n%2 == 0 {
			dup = 2
		}
		mutated = append(mutated, txids[n-dup:]...)
		if merkleRoot(mutated) != merkleRoot(txids) {
			t.Fatalf("n=%d: mutated list has another root; test setup wrong", n)
		}
		matched := make([]bool, len(mutated))
		matched[len(mutated)-1] = true
		tree := NewPartialMerkleTree(mutated, matched)
		_, _, err := tree.ExtractMatches()
		if !errors.Is(err, ErrBadPartialTree) {
			t.Fatalf("n=%d: mutated proof accepted (%v)", n, err)
		}
	}
}

// Every malformed tree Core's ExtractMatches refuses is refused, and a root
// that is not the header's fails Verify.
func TestPartialMerkleTreeMalformed(t *testing.T) {
	rng := rand.New(rand.NewPCG(1, 9))
	txids := randomTxids(rng, 7)
	matched := []bool{false, true, false, false, true, false, false}
	good := NewPartialMerkleTree(txids, matched)
	clone := func() *PartialMerkleTree {
		return &PartialMerkleTree{Transactions: good.Transactions, Hashes: slices.Clone(good.Hashes), Flags: slices.Clone(good.Flags)}
	}
	for _, tc := range []struct {
		name string
		edit func(*PartialMerkleTree)
	}{
		{"no transactions", func(p *PartialMerkleTree) { p.Transactions = 0 }},
		{"too many transactions", func(p *PartialMerkleTree) { p.Transactions = MaxMerkleBlockTransactions + 1 }},
		{"more hashes than transactions", func(p *PartialMerkleTree) { p.Transactions = uint32(len(p.Hashes) - 1) }},
		{"fewer bits than hashes", func(p *PartialMerkleTree) {
			p.Hashes = append(p.Hashes, randomTxids(rng, 9)...)
			p.Transactions = 100
		}},
		{"ran out of bits", func(p *PartialMerkleTree) { p.Flags = p.Flags[:0]; p.Hashes = p.Hashes[:0] }},
		{"ran out of hashes", func(p *PartialMerkleTree) { p.Hashes = p.Hashes[:len(p.Hashes)-1] }},
		{"hash left over", func(p *PartialMerkleTree) { p.Hashes = append(p.Hashes, chainhash.Hash{7}) }},
		{"flag byte left over", func(p *PartialMerkleTree) { p.Flags = append(p.Flags, 0) }},
		{"all bits set on a short hash list", func(p *PartialMerkleTree) {
			for i := range p.Flags {
				p.Flags[i] = 0xff
			}
		}},
	} {
		p := clone()
		tc.edit(p)
		if _, _, err := p.ExtractMatches(); !errors.Is(err, ErrBadPartialTree) {
			t.Errorf("%s: %v, want ErrBadPartialTree", tc.name, err)
		}
	}
	mb := MerkleBlock{Header: wire.BlockHeader{MerkleRoot: chainhash.Hash{1}}, Tree: *clone()}
	if _, err := mb.Verify(); !errors.Is(err, ErrMerkleRootMismatch) {
		t.Errorf("wrong root: %v, want ErrMerkleRootMismatch", err)
	}
	mb.Header.MerkleRoot = merkleRoot(txids)
	if got, err := mb.Verify(); err != nil || len(got) != 2 || got[0].Index != 1 || got[1].Index != 4 {
		t.Errorf("good tree: %v %v", got, err)
	}
}

// Degenerate input never panics: an empty block gives the empty tree,
// which does not verify.
func TestFilterBlockWithoutTransactions(t *testing.T) {
	f := New(Params{Size: 10, HashFuncs: 3}, 0, wire.BloomUpdateAll)
	fb := FilterBlock(&wire.MsgBlock{}, nil, f)
	if fb.MerkleBlock.Tree.Transactions != 0 || len(fb.Matched) != 0 {
		t.Fatalf("empty block: %+v", fb)
	}
	if _, err := fb.MerkleBlock.Verify(); !errors.Is(err, ErrBadPartialTree) {
		t.Fatalf("empty tree verifies: %v", err)
	}
	if tree := NewPartialMerkleTree(randomTxids(rand.New(rand.NewPCG(1, 1)), 3), []bool{true}); tree.Transactions != 0 {
		t.Fatal("mismatched matched slice built a tree")
	}
}
