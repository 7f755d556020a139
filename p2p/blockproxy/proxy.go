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
	// parties are the callers queued at the gate for it (the first and
	// those that joined) that have not left, and claimed is set once one
	// of them was granted a slot and fetches; guarded by Proxy.mu.
	parties int
	claimed bool
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

// get returns the block and whether another caller fetched it.
//
// Every caller waiting for a block the cache lacks queues at the gate in
// its own turn, and the first of them granted a slot fetches it for all:
// a fetch is made in the best turn among those who want the block, so a
// wallet asking a block that a greedy peer asked first is not held to
// that peer's turn (a priority inversion when the fetch waited in its
// first caller's turn only).
func (c *Proxy) get(ctx context.Context, r Requester, key blockKey) (Encoded, bool, error) {
	c.mu.Lock()
	if el, ok := c.byKey[key]; ok {
		c.order.MoveToFront(el)
		c.mu.Unlock()
		return el.Value.(*cachedBlock).block, false, nil
	}
	f, joined := c.inflight[key]
	if joined {
		f.waiters++
	} else {
		f = &blockFetch{done: make(chan struct{})}
		c.inflight[key] = f
	}
	f.parties++
	c.mu.Unlock()

	rank := rankOf(c.recency, key.hash)
	release, err := c.queue(ctx, r, rank.recent, f)
	if err != nil {
		c.leave(key, f, err)
		return Encoded{}, true, err
	}
	if release == nil { // another caller fetched it
		return f.block, true, f.err
	}
	f.block, f.err = c.fetch(ctx, key, release)
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

// queue waits at the gate in r's turn (ahead of historical fetches for a
// recent block) until r is granted a slot and claims f's fetch (release
// is the slot's), or f is done by another caller (nil release, nil
// error), or ctx ends (its error).
func (c *Proxy) queue(ctx context.Context, r Requester, recent bool, f *blockFetch) (release func(), err error) {
	acquire := c.gate.Acquire
	if recent {
		acquire = c.gate.AcquireRecent
	}
	gctx, cancel := context.WithCancel(ctx)
	defer cancel()
	go func() {
		select {
		case <-f.done:
			cancel()
		case <-gctx.Done():
		}
	}()
	release, err = acquire(gctx, r)
	if err != nil {
		select {
		case <-f.done:
			return nil, nil
		default:
			return nil, ctx.Err()
		}
	}
	c.mu.Lock()
	claimed := f.claimed
	f.claimed = true
	c.mu.Unlock()
	if !claimed {
		return release, nil
	}
	release() // another caller fetches it: wait for that
	select {
	case <-f.done:
		return nil, nil
	case <-ctx.Done():
		return nil, ctx.Err()
	}
}

// leave takes a caller whose ctx ended (err) out of f's parties; the last
// to leave before anyone claimed the fetch ends it with err, so that a
// later caller starts afresh.
func (c *Proxy) leave(key blockKey, f *blockFetch, err error) {
	c.mu.Lock()
	f.parties--
	end := f.parties == 0 && !f.claimed
	if end {
		f.claimed = true
		delete(c.inflight, key)
		f.err = err
	}
	c.mu.Unlock()
	if end {
		close(f.done)
	}
}

// fetch fetches the block holding the gate's slot (release frees it)
// and encodes it.
func (c *Proxy) fetch(ctx context.Context, key blockKey, release func()) (Encoded, error) {
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
