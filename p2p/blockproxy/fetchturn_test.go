package blockproxy

import (
	"context"
	"sync"
	"testing"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// orderNode is a Fetcher that records the order of the blocks fetched.
type orderNode struct {
	*mapNode
	mu    sync.Mutex
	order []chainhash.Hash
}

func (n *orderNode) FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	n.mu.Lock()
	n.order = append(n.order, hash)
	n.mu.Unlock()
	return n.mapNode.FetchBlock(ctx, hash)
}

// A fetch is made in the best turn among the callers waiting for its
// block: a wallet asking block X, which a greedy peer asked first, is
// granted the gate's slot ahead of a middling peer's block Y and fetches
// X for both. (Were the fetch held to its first caller's turn, Y would be
// fetched first: the middling peer has had less than the greedy one.)
func TestFetchInTheBestWaitersTurn(t *testing.T) {
	blks := testBlocks(2, 5, 51)
	x, y := blks[0].BlockHash(), blks[1].BlockHash()
	node := &orderNode{mapNode: newMapNode(blks)}
	gate := NewGate(1, nil)
	proxy := New(node, gate, 64<<20, testPVer)
	greedy, middling, wallet, holder := Requester{Group: 1, Peer: 1}, Requester{Group: 2, Peer: 2}, Requester{Group: 3, Peer: 3}, Requester{Group: 4, Peer: 4}
	ctx := context.Background()
	for r, grants := range map[Requester]int{greedy: 4, middling: 2} {
		for range grants {
			release, err := gate.Acquire(ctx, r)
			if err != nil {
				t.Fatal(err)
			}
			release()
		}
	}
	release, err := gate.Acquire(ctx, holder)
	if err != nil {
		t.Fatal(err)
	}
	var wg sync.WaitGroup
	get := func(r Requester, h chainhash.Hash) {
		wg.Go(func() {
			if _, err := proxy.Get(ctx, r, h, false); err != nil {
				t.Error(err)
			}
		})
	}
	get(greedy, x)
	waitFor(t, "the greedy peer queued", ioTimeout, func() bool { return gate.waiting() == 1 })
	get(middling, y)
	waitFor(t, "the middling peer queued", ioTimeout, func() bool { return gate.waiting() == 2 })
	get(wallet, x)
	waitFor(t, "the wallet joined the greedy peer's fetch", ioTimeout, func() bool {
		proxy.mu.Lock()
		defer proxy.mu.Unlock()
		f := proxy.inflight[blockKey{x, false}]
		return f != nil && f.waiters == 1
	})
	waitFor(t, "the wallet queued", ioTimeout, func() bool { return gate.waiting() == 3 })
	release()
	wg.Wait()
	node.mu.Lock()
	defer node.mu.Unlock()
	if len(node.order) != 2 || node.order[0] != x || node.order[1] != y {
		t.Fatalf("fetched %v, want X (%s) once, then Y", node.order, x)
	}
}
