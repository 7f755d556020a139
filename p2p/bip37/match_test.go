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
// each, of fewer transactions the more hash functions the filter has: a
// maximal filter's block is many short pieces, so a wallet first in line
// waits for one piece, not a whole block; the answer is FilterBlock's.
func TestMatchInPiecesPerGrant(t *testing.T) {
	const txs = 2000
	blk := manyTxBlock(txs)
	txids := bloom.BlockTxids(blk)
	for _, tc := range []struct {
		name      string
		hashFuncs uint32
	}{
		{"wallet filter (10 hash functions)", 10},
		{"maximal filter (50 hash functions)", 50},
	} {
		t.Run(tc.name, func(t *testing.T) {
			metrics := &grantCounter{}
			s := New(Config{}.WithDefaults(), Env{Now: time.Now, Metrics: metrics})
			p := s.NewPeer(blockproxy.Requester{})
			data := bytes.Repeat([]byte{0xf7}, 1000)
			p.filter, _ = bloom.Load(wire.NewMsgFilterLoad(data, tc.hashFuncs, 7, wire.BloomUpdateAll))
			wantFilter, _ := bloom.Load(wire.NewMsgFilterLoad(data, tc.hashFuncs, 7, wire.BloomUpdateAll))
			want := bloom.FilterBlock(blk, txids, wantFilter)

			fb, err := s.match(context.Background(), p, &blockproxy.DecodedBlock{Block: blk, Txids: txids})
			if err != nil || fb == nil {
				t.Fatalf("match: %v, %v", fb, err)
			}
			per := pieceTxs(tc.hashFuncs)
			if wantGrants := (txs + per - 1) / per; metrics.grants != wantGrants {
				t.Errorf("%d grants of the meter, want %d (pieces of %d transactions)", metrics.grants, wantGrants, per)
			}
			if per*int(tc.hashFuncs)*8 > matchPieceHashes && per > 1 {
				t.Errorf("a piece of %d transactions hashes more than %d elements", per, matchPieceHashes)
			}
			if !bytes.Equal(fb.MerkleBlock.Bytes(), want.MerkleBlock.Bytes()) || len(fb.Matched) != len(want.Matched) {
				t.Errorf("matched %d, FilterBlock %d; merkleblocks differ", len(fb.Matched), len(want.Matched))
			}
		})
	}
}
