package bip37

import (
	"bytes"
	"context"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
)

// grantCounter counts the grants of the CPU meter (one BloomWork each).
type grantCounter struct {
	nopMetrics
	grants int
}

func (g *grantCounter) BloomWork(time.Duration) { g.grants++ }

// manyTxBlock is a block of n one-input one-output transactions.
func manyTxBlock(n int) *wire.MsgBlock {
	blk := wire.NewMsgBlock(&wire.BlockHeader{Version: 1})
	for i := range n {
		tx := wire.NewMsgTx(2)
		tx.AddTxIn(wire.NewTxIn(&wire.OutPoint{Hash: chainhash.Hash{byte(i), byte(i >> 8)}, Index: uint32(i)}, []byte{0x51}, nil))
		tx.AddTxOut(wire.NewTxOut(int64(i), []byte{0x00, 0x14, byte(i), byte(i >> 8), 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18, 19, 20}))
		_ = blk.AddTransaction(tx)
	}
	return blk
}

// The matching of a block is cut in pieces, one grant of the CPU meter
// each, of about matchPieceHashes element hashes as the filter counts
// them: a nearly full filter of 50 hash functions (most tests hash many
// times before finding a bit not set) makes a block many short pieces,
// so a wallet first in line waits for one piece, not a whole block; a
// sparse wallet filter matches the same block in one piece, one grant to
// wait for. The answer is FilterBlock's.
func TestMatchInPiecesPerGrant(t *testing.T) {
	const txs = 2000
	blk := manyTxBlock(txs)
	txids := bloom.BlockTxids(blk)
	for _, tc := range []struct {
		name      string
		fill      byte // every byte of the filter
		hashFuncs uint32
		// wantGrants bounds the grants: [min, max].
		wantGrants [2]int
	}{
		{"sparse wallet filter (13 hash functions, a bit in eight set)", 0x01, 13, [2]int{1, 1}},
		{"maximal filter (50 hash functions, seven bits in eight set)", 0xf7, 50, [2]int{2, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metrics := &grantCounter{}
			s := New(Config{}.WithDefaults(), Env{Now: time.Now, Metrics: metrics})
			p := s.NewPeer(blockproxy.Requester{})
			data := bytes.Repeat([]byte{tc.fill}, 1000)
			p.filter, _ = bloom.Load(wire.NewMsgFilterLoad(data, tc.hashFuncs, 7, wire.BloomUpdateAll))
			wantFilter, _ := bloom.Load(wire.NewMsgFilterLoad(data, tc.hashFuncs, 7, wire.BloomUpdateAll))
			want := bloom.FilterBlock(blk, txids, wantFilter)

			fb, err := s.match(context.Background(), p, &blockproxy.DecodedBlock{Block: blk, Txids: txids})
			if err != nil || fb == nil {
				t.Fatalf("match: %v, %v", fb, err)
			}
			hashes := p.filter.Hashes()
			if metrics.grants < tc.wantGrants[0] || metrics.grants > tc.wantGrants[1] {
				t.Errorf("%d grants of the meter for %d hashes, want %d to %d", metrics.grants, hashes, tc.wantGrants[0], tc.wantGrants[1])
			}
			// Each piece stops once it reached the bound: the pieces are as
			// many as the bound divides the work into, rounded up.
			if wantGrants := int((hashes + txs + matchPieceHashes - 1) / matchPieceHashes); metrics.grants > wantGrants {
				t.Errorf("%d grants for %d hashes, want at most %d", metrics.grants, hashes, wantGrants)
			}
			if !bytes.Equal(fb.MerkleBlock.Bytes(), want.MerkleBlock.Bytes()) || len(fb.Matched) != len(want.Matched) {
				t.Errorf("matched %d, FilterBlock %d; merkleblocks differ", len(fb.Matched), len(want.Matched))
			}
			t.Logf("%d hashes in %d grants", hashes, metrics.grants)
		})
	}
}
