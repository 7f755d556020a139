package blockproxy

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/wireframe"
)

// Fetcher fetches a full block (with witnesses) from the node. Its errors
// are returned to the caller of Get unchanged.
type Fetcher interface {
	FetchBlock(ctx context.Context, hash chainhash.Hash) (*wire.MsgBlock, error)
}

// Proxy serves blocks to peers from the node: through a server-wide gate
// on node fetches (Gate, which takes turns between requesters), with a byte-bounded cache of encoded blocks that
// peers asking for the same block share (a new tip). Safe for concurrent
// use.
type Proxy struct {
	fetcher Fetcher
	gate    *Gate
	pver    uint32
	maxSize int64 // cache bound in bytes of payload
	recency Recency

	mu       sync.Mutex
	size     int64
	order    *list.List // front: most recently used; values are *cachedBlock
	byKey    map[blockKey]*list.Element
	inflight map[blockKey]*blockFetch
}

// blockKey names one encoding of one block.
type blockKey struct {
	hash    chainhash.Hash
	witness bool
}

// Encoded is a block's payload (read-only, shared between peers) and its
// frame checksum.
type Encoded struct {
	Payload []byte
	Sum     [4]byte
}

type cachedBlock struct {
	key   blockKey
	block Encoded
	rank  cacheRank
}

// blockFetch is one fetch in progress; done is closed when block/err are set.
type blockFetch struct {
	done    chan struct{}
	waiters int // callers that joined, guarded by Proxy.mu
	block   Encoded
	err     error
}

// New returns a proxy fetching through gate and caching up to cacheBytes
// of payload; blocks are encoded at protocol version pver.
func New(fetcher Fetcher, gate *Gate, cacheBytes int64, pver uint32) *Proxy {
	return &Proxy{
		fetcher:  fetcher,
		gate:     gate,
		pver:     pver,
		maxSize:  cacheBytes,
		order:    list.New(),
		byKey:    make(map[blockKey]*list.Element),
		inflight: make(map[blockKey]*blockFetch),
	}
}

// WithRecency makes the caches (this one of encoded blocks and the
// DecodedCache over it) keep recent blocks ahead of others (see
// evictionVictim); call it before the proxy is used. It returns c.
func (c *Proxy) WithRecency(r Recency) *Proxy {
	c.recency = r
	return c
}

// Get returns the block's payload, with witnesses or without, from the
// cache or the node; a fetch from the node waits for r's turn at the gate.
// A failed fetch is not cached.
func (c *Proxy) Get(ctx context.Context, r Requester, hash chainhash.Hash, witness bool) (Encoded, error) {
	key := blockKey{hash, witness}
	block, joined, err := c.get(ctx, r, key)
	// The fetch this call joined may have belonged to a peer that left: its
	// cancellation says nothing about the block, so fetch once more.
	if joined && err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		block, _, err = c.get(ctx, r, key)
	}
	return block, err
}

// get returns the block and whether it joined another caller's fetch.
func (c *Proxy) get(ctx context.Context, r Requester, key blockKey) (Encoded, bool, error) {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*cachedBlock).block, false, nil
	}
	f, waiting := c.inflight[key]
	if waiting {
		f.waiters++
	} else {
		f = &blockFetch{done: make(chan struct{})}
		c.inflight[key] = f
	}
	c.mu.Unlock()

	if waiting {
		select {
		case <-f.done:
			return f.block, true, f.err
		case <-ctx.Done():
			return Encoded{}, true, ctx.Err()
		}
	}

	rank := rankOf(c.recency, key.hash)
	f.block, f.err = c.fetch(ctx, r, key, rank.recent)
	c.mu.Lock()
	delete(c.inflight, key)
	if f.err == nil && int64(len(f.block.Payload)) <= c.maxSize {
		c.byKey[key] = c.order.PushFront(&cachedBlock{key: key, block: f.block, rank: rank})
		c.size += int64(len(f.block.Payload))
		for c.size > c.maxSize {
			old := evictionVictim(c.order, func(el *list.Element) cacheRank { return el.Value.(*cachedBlock).rank })
			cb := old.Value.(*cachedBlock)
			c.order.Remove(old)
			delete(c.byKey, cb.key)
			c.size -= int64(len(cb.block.Payload))
		}
	}
	c.mu.Unlock()
	close(f.done)
	return f.block, false, f.err
}

// fetch takes a slot of the gate in r's turn (ahead of historical
// fetches for a recent block), fetches the block and encodes it.
func (c *Proxy) fetch(ctx context.Context, r Requester, key blockKey, recent bool) (Encoded, error) {
	acquire := c.gate.Acquire
	if recent {
		acquire = c.gate.AcquireRecent
	}
	release, err := acquire(ctx, r)
	if err != nil {
		return Encoded{}, err
	}
	blk, err := c.fetcher.FetchBlock(ctx, key.hash)
	release()
	if err != nil {
		return Encoded{}, err
	}
	if got := blk.BlockHash(); got != key.hash {
		return Encoded{}, fmt.Errorf("node returned block %s for %s", got, key.hash)
	}
	enc, size := wire.WitnessEncoding, blk.SerializeSize()
	if !key.witness {
		enc, size = wire.BaseEncoding, blk.SerializeSizeStripped()
	}
	var buf bytes.Buffer
	buf.Grow(size)
	if err := blk.BtcEncode(&buf, c.pver, enc); err != nil {
		return Encoded{}, fmt.Errorf("encode block %s: %w", key.hash, err)
	}
	payload := buf.Bytes()
	return Encoded{Payload: payload, Sum: wireframe.PayloadChecksum(payload)}, nil
}
