package bloom

import (
	"bytes"
	"testing"

	"github.com/btcsuite/btcd/wire/v2"
)

// TestBlockMatcherPiecesEqualFilterBlock: matching a block in pieces of
// any size gives FilterBlock's merkleblock and matches, and leaves the
// filter as FilterBlock does (UPDATE_ALL adds outpoints a later
// transaction of the same block may spend).
func TestBlockMatcherPiecesEqualFilterBlock(t *testing.T) {
	v := loadCoreVectors(t)
	blk := mustBlock(t, mustHex(t, v.MerkleBlock4))
	newFilter := func() *Filter {
		p, _ := ParamsFor(10, 0.000001)
		f := New(p, 0, wire.BloomUpdateAll)
		f.Insert(mustHex(t, "04eaafc2314def4ca98ac970241bcab022b9c1e1f4ea423a20f134c876f2c01ec0f0dd5b2e86e7168cefe0d81113c3807420ce13ad1357231a2252247d97a46a91"))
		f.Insert(mustHex(t, "b6efd80d99179f4f4ff6f4dd0a007d018c385d21"))
		return f
	}
	wantFilter := newFilter()
	want := FilterBlock(blk, nil, wantFilter)
	for _, piece := range []int{1, 2, 3, len(blk.Transactions), len(blk.Transactions) + 5} {
		f := newFilter()
		m := NewBlockMatcher(blk, BlockTxids(blk), f)
		pieces := 0
		for !m.Match(piece) {
			pieces++
		}
		pieces++
		if wantPieces := (len(blk.Transactions) + piece - 1) / piece; pieces != wantPieces {
			t.Errorf("piece %d: %d pieces, want %d", piece, pieces, wantPieces)
		}
		got := m.Result()
		if !bytes.Equal(got.MerkleBlock.Bytes(), want.MerkleBlock.Bytes()) {
			t.Errorf("piece %d: merkleblock differs from FilterBlock's", piece)
		}
		if len(got.Matched) != len(want.Matched) {
			t.Errorf("piece %d: matched %v, want %v", piece, got.Matched, want.Matched)
		}
		if !bytes.Equal(f.Bytes(), wantFilter.Bytes()) {
			t.Errorf("piece %d: filter updated differently", piece)
		}
	}
}

// TestBlockMatcherDetachBetweenPieces: a matcher detached after each piece
// and attached to a fresh decoding of the same block (as a server whose
// cache evicted the block between two pieces gives it) ends with
// FilterBlock's answer; detached it matches nothing, and it refuses
// another block.
func TestBlockMatcherDetachBetweenPieces(t *testing.T) {
	v := loadCoreVectors(t)
	raw := mustHex(t, v.MerkleBlock4)
	blk := mustBlock(t, raw)
	newFilter := func() *Filter {
		p, _ := ParamsFor(10, 0.000001)
		f := New(p, 0, wire.BloomUpdateAll)
		f.Insert(mustHex(t, "b6efd80d99179f4f4ff6f4dd0a007d018c385d21"))
		return f
	}
	want := FilterBlock(blk, nil, newFilter())
	m := NewBlockMatcher(blk, nil, newFilter())
	for done := m.Match(1); !done; done = m.Match(1) {
		m.Detach()
		if m.Match(1) {
			t.Fatal("a detached matcher finished")
		}
		other := mustBlock(t, raw)
		other.Header.Nonce++
		if m.Attach(other, nil) {
			t.Fatal("attached a block with another header")
		}
		if !m.Attach(mustBlock(t, raw), nil) { // decoded again
			t.Fatal("refused the same block decoded again")
		}
	}
	got := m.Result()
	if !bytes.Equal(got.MerkleBlock.Bytes(), want.MerkleBlock.Bytes()) || len(got.Matched) != len(want.Matched) {
		t.Fatalf("matched %v, FilterBlock %v; merkleblocks equal: %v", got.Matched, want.Matched, bytes.Equal(got.MerkleBlock.Bytes(), want.MerkleBlock.Bytes()))
	}
	if len(got.Txs) != 0 {
		t.Fatalf("%d transactions kept after Detach, want none", len(got.Txs))
	}
}
