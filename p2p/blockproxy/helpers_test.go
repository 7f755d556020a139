package blockproxy

import (
	"bytes"
	"context"
	"errors"
	"math/rand/v2"
	"sync"
	"testing"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/testtime"
)

const (
	ioTimeout = 10 * time.Second
	testPVer  = wire.AddrV2Version
)

var errNoBlock = errors.New("no such block")

// mapNode is a Fetcher over a map of blocks; it counts fetches.
type mapNode struct {
	mu      sync.Mutex
	blocks  map[chainhash.Hash]*wire.MsgBlock
	fetches int
}

func newMapNode(blocks []*wire.MsgBlock) *mapNode {
	n := &mapNode{blocks: make(map[chainhash.Hash]*wire.MsgBlock)}
	for _, b := range blocks {
		n.blocks[b.BlockHash()] = b
	}
	return n
}

func (n *mapNode) FetchBlock(_ context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	n.mu.Lock()
	defer n.mu.Unlock()
	n.fetches++
	b, ok := n.blocks[hash]
	if !ok {
		return nil, errNoBlock
	}
	return b, nil
}

// slowNode blocks FetchBlock until release is closed or ctx ends.
type slowNode struct {
	*mapNode
	started chan struct{}
	release chan struct{}
}

func (n *slowNode) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	n.started <- struct{}{}
	select {
	case <-n.release:
		return n.mapNode.FetchBlock(ctx, hash)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// testBlocks returns n chained blocks of txs transactions each, with
// random inputs (some with witnesses) and outputs.
func testBlocks(n, txs int, seed uint64) []*wire.MsgBlock {
	rng := rand.New(rand.NewPCG(seed, seed))
	var prev chainhash.Hash
	out := make([]*wire.MsgBlock, n)
	for i := range out {
		blk := wire.NewMsgBlock(wire.NewBlockHeader(1, &prev, &chainhash.Hash{}, 0x207fffff, rng.Uint32()))
		for range txs {
			tx := wire.NewMsgTx(2)
			for range 1 + rng.IntN(3) {
				var op chainhash.Hash
				for j := range op {
					op[j] = byte(rng.Uint32())
				}
				in := wire.NewTxIn(wire.NewOutPoint(&op, rng.Uint32N(4)), randBytes(rng, 20+rng.IntN(90)), nil)
				if rng.IntN(2) == 0 {
					in.Witness = wire.TxWitness{randBytes(rng, 72), randBytes(rng, 33)}
				}
				tx.AddTxIn(in)
			}
			for range 1 + rng.IntN(3) {
				tx.AddTxOut(wire.NewTxOut(rng.Int64N(1e8), randBytes(rng, 22+rng.IntN(12))))
			}
			_ = blk.AddTransaction(tx)
		}
		out[i] = blk
		prev = blk.BlockHash()
	}
	return out
}

func randBytes(rng *rand.Rand, n int) []byte {
	b := make([]byte, n)
	for i := range b {
		b[i] = byte(rng.Uint32())
	}
	return b
}

// encodeBlock serialises blk with enc.
func encodeBlock(t testing.TB, blk *wire.MsgBlock, enc wire.MessageEncoding) []byte {
	t.Helper()
	var buf bytes.Buffer
	if err := blk.BtcEncode(&buf, testPVer, enc); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

func waitFor(t testing.TB, what string, timeout time.Duration, cond func() bool) {
	t.Helper()
	timeout = testtime.Scale(timeout)
	deadline := time.Now().Add(timeout)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatalf("timed out after %v waiting for %s", timeout, what)
		}
		time.Sleep(5 * time.Millisecond)
	}
}
