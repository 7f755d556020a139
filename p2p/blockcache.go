package p2p

import (
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
)

// blockCache is a bounded LRU cache of blocks fetched from the node. Peers
// asking for the same block at once (a new tip) share one fetch. Cached
// blocks are shared read-only between peers.
type blockCache struct {
	fetcher BlockFetcher
	size    int

	mu       sync.Mutex
	order    *list.List // front: most recently used; values are *cachedBlock
	byHash   map[chainhash.Hash]*list.Element
	inflight map[chainhash.Hash]*blockFetch
}

type cachedBlock struct {
	hash  chainhash.Hash
	block *wire.MsgBlock
}

// blockFetch is one fetch in progress; done is closed when block/err are set.
type blockFetch struct {
	done    chan struct{}
	waiters int // callers that joined, guarded by blockCache.mu
	block   *wire.MsgBlock
	err     error
}

// newBlockCache returns a cache of up to size blocks in front of fetcher.
func newBlockCache(fetcher BlockFetcher, size int) *blockCache {
	return &blockCache{
		fetcher:  fetcher,
		size:     size,
		order:    list.New(),
		byHash:   make(map[chainhash.Hash]*list.Element),
		inflight: make(map[chainhash.Hash]*blockFetch),
	}
}

// Get returns the block from the cache, or fetches it. A failed fetch is
// not cached.
func (c *blockCache) Get(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error) {
	block, joined, err := c.get(ctx, hash)
	// The fetch this call joined may have belonged to a peer that left: its
	// cancellation says nothing about the block, so fetch once more.
	if joined && err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		block, _, err = c.get(ctx, hash)
	}
	return block, err
}

// get returns the block and whether it joined another caller's fetch.
func (c *blockCache) get(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, bool, error) {
	c.mu.Lock()
	if el, ok := c.byHash[hash]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*cachedBlock).block, false, nil
	}
	f, waiting := c.inflight[hash]
	if waiting {
		f.waiters++
	} else {
		f = &blockFetch{done: make(chan struct{})}
		c.inflight[hash] = f
	}
	c.mu.Unlock()

	if waiting {
		select {
		case <-f.done:
			return f.block, true, f.err
		case <-ctx.Done():
			return nil, true, ctx.Err()
		}
	}

	f.block, f.err = c.fetcher.FetchBlock(ctx, hash)
	if f.err == nil && f.block.BlockHash() != hash {
		f.block, f.err = nil, fmt.Errorf("node returned block %s for %s", f.block.BlockHash(), hash)
	}
	c.mu.Lock()
	delete(c.inflight, hash)
	if f.err == nil {
		c.byHash[hash] = c.order.PushFront(&cachedBlock{hash: hash, block: f.block})
		for c.order.Len() > c.size {
			old := c.order.Back()
			c.order.Remove(old)
			delete(c.byHash, old.Value.(*cachedBlock).hash)
		}
	}
	c.mu.Unlock()
	close(f.done)
	return f.block, false, f.err
}
