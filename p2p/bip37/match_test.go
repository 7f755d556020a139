package bip37

import (
	"bytes"
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/internal/testtime"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// mapNode is a node holding blks, counting its fetches.
type mapNode struct {
	blks    map[chainhash.Hash]*wire.MsgBlock
	fetches int
}

func (n *mapNode) FetchBlock(_ context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	n.fetches++
	if b, ok := n.blks[hash]; ok {
		return b, nil
	}
	return nil, fmt.Errorf("no block %s", hash)
}

// serverWithBlocks is a BIP-37 server whose decoded-block cache (of
// cacheBytes) gets blks from a node and whose encoded-block cache keeps
// nothing, so a block evicted from the decoded cache is fetched again.
func serverWithBlocks(t *testing.T, metrics Metrics, cacheBytes int64, blks ...*wire.MsgBlock) *Server {
	t.Helper()
	node := &mapNode{blks: map[chainhash.Hash]*wire.MsgBlock{}}
	for _, b := range blks {
		node.blks[b.BlockHash()] = b
	}
	proxy := blockproxy.New(node, blockproxy.NewGate(1, nil), 0, wire.ProtocolVersion)
	cache := blockproxy.NewDecodedCache(proxy, cacheBytes, peerpolicy.WallClock(time.Now))
	return New(Config{}.WithDefaults(), Env{Now: time.Now, Metrics: metrics, Blocks: cache})
}

// warm has s decode blk into its cache.
func warm(t *testing.T, s *Server, blk *wire.MsgBlock) {
	t.Helper()
	b, err := s.getBlock(context.Background(), s.NewPeer(blockproxy.Requester{}), blk.BlockHash())
	if err != nil {
		t.Fatal(err)
	}
	s.blocks.Release(b)
}

// grantCounter counts the grants of the CPU meter (one BloomWork each).
type grantCounter struct {
	nopMetrics
	grants int
}

func (g *grantCounter) BloomWork(time.Duration) { g.grants++ }

// manyTxBlock is a block of n one-input one-output transactions.
func manyTxBlock(n int) *wire.MsgBlock {
	blk := wire.NewMsgBlock(&wire.BlockHeader{Version: 1, Nonce: uint32(n)}) // a hash of its own per size
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
			s := serverWithBlocks(t, metrics, 64<<20, blk)
			p := s.NewPeer(blockproxy.Requester{})
			warm(t, s, blk) // decoded once: the grants counted are the matching's
			metrics.grants = 0
			data := bytes.Repeat([]byte{tc.fill}, 1000)
			p.filter, _ = bloom.Load(wire.NewMsgFilterLoad(data, tc.hashFuncs, 7, wire.BloomUpdateAll))
			wantFilter, _ := bloom.Load(wire.NewMsgFilterLoad(data, tc.hashFuncs, 7, wire.BloomUpdateAll))
			want := bloom.FilterBlock(blk, txids, wantFilter)

			fb, b, err := s.match(context.Background(), p, blk.BlockHash())
			if err != nil || fb == nil {
				t.Fatalf("match: %v, %v", fb, err)
			}
			s.blocks.Release(b)
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

// A peer waiting for its turn at the CPU meter holds no decoded block:
// with the meter held by another peer, a peer asking for a cached block
// queues with nothing pinned (before, it pinned the block first and held
// it through every wait, so 32 peers in line pinned 32 blocks and the
// cache evicted what wallets read). A block evicted while the peer waits
// is decoded again in its turn: the answer is FilterBlock's either way.
func TestMatchHoldsNoPinWhileWaiting(t *testing.T) {
	blk, other := manyTxBlock(2000), manyTxBlock(1999)
	data := bytes.Repeat([]byte{0xf7}, 1000)
	for _, tc := range []struct {
		name  string
		evict bool
		bound int64
	}{
		{"block stays cached", false, 64 << 20},
		// About 0.8 MB each decoded: one fits, not two.
		{"block evicted while the peer waits", true, 1 << 20},
	} {
		t.Run(tc.name, func(t *testing.T) {
			s := serverWithBlocks(t, nil, tc.bound, blk, other)
			warm(t, s, blk)
			p := s.NewPeer(blockproxy.Requester{})
			p.filter, _ = bloom.Load(wire.NewMsgFilterLoad(data, 50, 7, wire.BloomUpdateAll))
			wantFilter, _ := bloom.Load(wire.NewMsgFilterLoad(data, 50, 7, wire.BloomUpdateAll))
			want := bloom.FilterBlock(blk, bloom.BlockTxids(blk), wantFilter)

			holder := s.NewPeer(blockproxy.Requester{})
			held, err := s.work(context.Background(), holder)
			if err != nil {
				t.Fatal(err)
			}
			type result struct {
				fb  *bloom.FilteredBlock
				b   *blockproxy.DecodedBlock
				err error
			}
			got := make(chan result, 1)
			go func() {
				fb, b, err := s.match(context.Background(), p, blk.BlockHash())
				got <- result{fb, b, err}
			}()
			testtime.WaitFor(t, "the peer to queue at the meter", 10*time.Second, func() bool { return s.meter.Waiting() == 1 })
			if n := s.blocks.Pinned(); n != 0 {
				t.Fatalf("%d decoded blocks pinned while the peer waits for its turn, want 0", n)
			}
			if tc.evict {
				// The cache holds one block: decoding another (outside the
				// meter, which the holder has) evicts blk.
				noMeter := func(context.Context, bool) (func(), error) { return func() {}, nil }
				b, err := s.blocks.Get(context.Background(), blockproxy.Requester{}, other.BlockHash(), noMeter)
				if err != nil {
					t.Fatal(err)
				}
				s.blocks.Release(b)
				if s.blocks.Touch(blk.BlockHash()) {
					t.Fatal("the block was not evicted: the test's cache bound is wrong")
				}
			}
			held()
			r := <-got
			if r.err != nil || r.fb == nil {
				t.Fatalf("match: %v, %v", r.fb, r.err)
			}
			defer s.blocks.Release(r.b)
			if !bytes.Equal(r.fb.MerkleBlock.Bytes(), want.MerkleBlock.Bytes()) || len(r.fb.Matched) != len(want.Matched) {
				t.Fatalf("matched %d, FilterBlock %d; merkleblocks differ", len(r.fb.Matched), len(want.Matched))
			}
		})
	}
}
