package blockproxy

import (
	"bytes"
	"container/list"
	"context"
	"errors"
	"fmt"
	"sync"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
)

// Decoded-block bounds.
const (
	// MaxBlockBytes is Core's MAX_BLOCK_SERIALIZED_SIZE.
	MaxBlockBytes = 4_000_000
	// MaxDecodedBlock bounds what one decoded block and its txids take:
	// the worst case is a block of 16,666 minimal 60-byte transactions
	// (a megabyte without witness), about 7 MB decoded. Blocks are
	// decoded one at a time (DecodedCache.decoding) and accounted before
	// the slot is released, so at most one such block is outside the
	// cache's bound.
	MaxDecodedBlock = 4 * MaxBlockBytes
)

// DecodedBlock is a block decoded for filtering, with its txids, shared
// read-only between peers.
type DecodedBlock struct {
	Block *wire.MsgBlock
	Txids []chainhash.Hash

	hash chainhash.Hash
	cost int64
	rank cacheRank
	refs int // pins, guarded by DecodedCache.mu
	elem *list.Element
}

// decodedBlockCost estimates the heap a decoded block and its txids take
// (a test holds it to the real heap): per transaction the wire.MsgTx, its
// input and output slices, one script buffer, and its txid; per input and
// output their structs; per witness item its slice header and rounding.
func decodedBlockCost(blk *wire.MsgBlock) int64 {
	c := int64(512)
	for _, tx := range blk.Transactions {
		c += 160 + int64(tx.SerializeSize())
		c += int64(len(tx.TxIn))*96 + int64(len(tx.TxOut))*48
		for _, in := range tx.TxIn {
			c += int64(len(in.Witness)) * 32
		}
	}
	return c
}

// DecodedCache keeps decoded blocks and their txids for filtered-block
// requests, so that many wallets asking for the same new block decode it
// and hash its transactions once. Every decoded block alive counts against
// its byte bound, including blocks evicted from the cache but still pinned
// by a peer whose answer is being sent, and a fetch reserves the largest
// block's cost before it starts: a request that does not fit waits for
// bytes to be released. A block comes from the block proxy's cache of
// encoded blocks when it is there (decoded from those bytes), else from
// the node through the proxy's fetch gate.
//
// Safe for concurrent use.
type DecodedCache struct {
	proxy *Proxy
	max   int64

	mu       sync.Mutex
	used     int64      // cost of every decoded block alive plus reservations
	unpinned int64      // cost of the blocks in order
	order    *list.List // unpinned cached blocks, front most recently used
	byHash   map[chainhash.Hash]*DecodedBlock
	inflight map[chainhash.Hash]*decodeFetch
	freed    chan struct{} // closed (and replaced) when bytes are released
	// decoding's one slot is held from a block's decoding until its bytes
	// are accounted (at most one decoded block is outside the bound), and
	// while it is held nothing is waited for; it is granted to the peer
	// with the least recent decoding (shares, by Requester.Peer).
	decoding *peerpolicy.FairQueue
	shares   *peerpolicy.ShareTable
	// decoded, when set (by tests), is called with the requester of each
	// decoding, in the order the slot was granted.
	decoded func(Requester)
	// pins counts the pins held (Get without Release yet).
	pins int
	// decodedRecent holds the recent blocks decoded once already: a
	// recent block's first decoding is shared work (Work), a decoding
	// again (after an eviction) the asking peer's.
	decodedRecent map[chainhash.Hash]struct{}
}

// Work takes the caller's CPU meter for one piece of work and returns
// what ends it (call it once). shared is work done for every peer rather
// than for the caller (the first decoding of a recent block, which every
// peer following the chain reads): the meter charges its time but not to
// the caller's account.
type Work func(ctx context.Context, shared bool) (done func(), err error)

// maxDecodedRecent bounds decodedRecent: once over it, blocks no longer
// recent are forgotten, and while it stays over (more recent blocks than
// that, which a Recency of at most RecentBlocks never gives) no decoding
// is shared.
const maxDecodedRecent = 4 * RecentBlocks

type decodeFetch struct {
	done  chan struct{}
	block *DecodedBlock
	err   error
}

// Decoding fairness: the decode slot's service (bytes decoded) halves
// every decodeHalfLife, and the shares of this many idle peers are kept.
const (
	decodeHalfLife   = 10 * time.Second
	decodeIdleShares = 1024
)

// NewDecodedCache returns a cache of at most max bytes of decoded blocks
// that gets their encodings through proxy; clock is the decode slot's
// fairness clock.
func NewDecodedCache(proxy *Proxy, max int64, clock peerpolicy.Clock) *DecodedCache {
	decoding := peerpolicy.NewFairQueue(1, decodeHalfLife, clock)
	return &DecodedCache{
		proxy:         proxy,
		max:           max,
		order:         list.New(),
		byHash:        make(map[chainhash.Hash]*DecodedBlock),
		inflight:      make(map[chainhash.Hash]*decodeFetch),
		decoding:      decoding,
		decodedRecent: make(map[chainhash.Hash]struct{}),
		shares:        peerpolicy.NewShareTable(decoding, decodeIdleShares),
	}
}

// Get returns the decoded block pinned; call Release when done with it.
// work runs the decoding (and txid hashing) under the caller's CPU meter:
// as shared work (ahead of every peer's own, on nobody's account) for a
// recent block's first decoding, in r's turn and on r's account for any
// other; a fetch from the node waits for r's turn at the proxy's gate (or
// that of another caller waiting for the same block, if it comes first).
func (c *DecodedCache) Get(ctx context.Context, r Requester, hash chainhash.Hash, work Work) (*DecodedBlock, error) {
	for {
		c.mu.Lock()
		if b, ok := c.byHash[hash]; ok {
			c.pinLocked(b)
			c.mu.Unlock()
			return b, nil
		}
		if f, ok := c.inflight[hash]; ok {
			c.mu.Unlock()
			select {
			case <-f.done:
			case <-ctx.Done():
				return nil, ctx.Err()
			}
			if f.err != nil {
				if ctx.Err() == nil && (errors.Is(f.err, context.Canceled) || errors.Is(f.err, context.DeadlineExceeded)) {
					continue // the fetching peer left; try ourselves
				}
				return nil, f.err
			}
			continue // cached now (or already evicted: fetch again)
		}
		f := &decodeFetch{done: make(chan struct{})}
		c.inflight[hash] = f
		c.mu.Unlock()

		f.block, f.err = c.load(ctx, r, hash, work)
		c.mu.Lock()
		delete(c.inflight, hash)
		if f.err == nil {
			c.byHash[hash] = f.block
			f.block.refs = 1
			c.pins++
		}
		c.mu.Unlock()
		close(f.done)
		return f.block, f.err
	}
}

// Cached returns the block pinned if the cache holds it, without waiting,
// fetching or decoding (call Release when done with it): what a peer
// whose turn came asks for a block it released while waiting.
func (c *DecodedCache) Cached(hash chainhash.Hash) (*DecodedBlock, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.byHash[hash]
	if !ok {
		return nil, false
	}
	c.pinLocked(b)
	return b, true
}

// Touch reports whether the cache holds the block of hash, making it the
// most recently used, without pinning it: what a peer asks before it
// waits for its turn, holding nothing meanwhile (Cached pins it when the
// turn comes).
func (c *DecodedCache) Touch(hash chainhash.Hash) bool {
	c.mu.Lock()
	defer c.mu.Unlock()
	b, ok := c.byHash[hash]
	if ok && b.elem != nil {
		c.order.MoveToFront(b.elem)
	}
	return ok
}

// pinLocked takes a reference on a cached block.
func (c *DecodedCache) pinLocked(b *DecodedBlock) {
	if b.refs == 0 && b.elem != nil {
		c.order.Remove(b.elem)
		b.elem = nil
		c.unpinned -= b.cost
	}
	b.refs++
	c.pins++
}

// Release returns a pin; an unpinned block stays cached (most recently
// used first) until the bound needs its bytes.
func (c *DecodedCache) Release(b *DecodedBlock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.refs--
	c.pins--
	if b.refs > 0 {
		return
	}
	if cur, ok := c.byHash[b.hash]; ok && cur == b {
		b.elem = c.order.PushFront(b)
		c.unpinned += b.cost
	} else {
		c.used -= b.cost // evicted while pinned: its bytes are free now
	}
	c.evictLocked(0)
	c.signalLocked()
}

// Pinned returns the pins held: decoded blocks (counted once per pin) that
// callers hold between Get and Release.
func (c *DecodedCache) Pinned() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.pins
}

// evictLocked drops unpinned blocks, blocks that are not recent first
// (evictionVictim), until need more bytes fit (or nothing unpinned is
// left).
func (c *DecodedCache) evictLocked(need int64) {
	for c.used+need > c.max && c.order.Len() > 0 {
		victim := evictionVictim(c.order, func(el *list.Element) cacheRank { return el.Value.(*DecodedBlock).rank })
		b := c.order.Remove(victim).(*DecodedBlock)
		b.elem = nil
		delete(c.byHash, b.hash)
		c.used -= b.cost
		c.unpinned -= b.cost
	}
}

func (c *DecodedCache) signalLocked() {
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
}

// reserve waits until n bytes fit in the bound, evicting unpinned blocks
// only when that makes them fit (or, for n alone over the bound, once
// nothing pinned or reserved is held), and takes them.
func (c *DecodedCache) reserve(ctx context.Context, n int64) error {
	for {
		c.mu.Lock()
		if c.tryReserveLocked(n) {
			c.mu.Unlock()
			return nil
		}
		if c.freed == nil {
			c.freed = make(chan struct{})
		}
		freed := c.freed
		c.mu.Unlock()
		select {
		case <-freed:
		case <-ctx.Done():
			return ctx.Err()
		}
	}
}

// tryReserveLocked takes n bytes if they fit now (reserve's rule).
func (c *DecodedCache) tryReserveLocked(n int64) bool {
	held := c.used - c.unpinned // pinned blocks and reservations
	if held+n > c.max && held != 0 {
		return false
	}
	c.evictLocked(n)
	c.used += n
	return true
}

// unreserve gives back n reserved bytes.
func (c *DecodedCache) unreserve(n int64) {
	if n == 0 {
		return
	}
	c.mu.Lock()
	c.used -= n
	c.evictLocked(0)
	c.signalLocked()
	c.mu.Unlock()
}

// load gets the block's serialization through the block proxy (its cache
// of encoded blocks, shared with getdata for blocks, else the node through
// its fetch gate), then decodes it and hashes its txids under the
// caller's CPU meter in r's turn at the decode slot. The slot is held
// only while decoding and accounting, never while waiting: the meter is
// taken before it, and a block that does not fit is dropped, the slot
// released, and decoded again once its bytes, now known, are reserved.
func (c *DecodedCache) load(ctx context.Context, r Requester, hash chainhash.Hash, work Work) (*DecodedBlock, error) {
	enc, witness, ok := c.proxy.peek(hash)
	if !ok {
		var err error
		if enc, err = c.proxy.Get(ctx, r, hash, false); err != nil {
			return nil, err
		}
	}
	share, put := c.shares.Get(r.Peer)
	defer put()
	rank := rankOf(c.proxy.recency, hash)
	shared := rank.recent && c.firstDecoding(hash)
	var reserved int64
	for {
		b, fits, err := c.decode(ctx, r, share, hash, enc, witness, shared, reserved, work)
		if err != nil {
			c.unreserve(reserved)
			return nil, err
		}
		if fits {
			b.rank = rank
			if shared {
				c.markDecoded(hash)
			}
			return b, nil
		}
		if err := c.reserve(ctx, b.cost-reserved); err != nil {
			c.unreserve(reserved)
			return nil, err
		}
		reserved = b.cost
	}
}

// decode decodes the block under the caller's meter holding the decode
// slot in share's turn, and accounts its bytes (reserved of them already
// reserved) if they fit; a block that does not fit comes back with only
// its cost to know. Shared work goes ahead at the decode slot and is
// charged to neither of the peer's accounts (the meter's, the decode
// slot's).
func (c *DecodedCache) decode(ctx context.Context, r Requester, share *peerpolicy.Share, hash chainhash.Hash, enc Encoded, witness, shared bool, reserved int64, work Work) (b *DecodedBlock, fits bool, err error) {
	done, err := work(ctx, shared)
	if err != nil {
		return nil, false, err
	}
	defer done()
	acquire := share.Acquire
	if shared {
		acquire = share.AcquireAhead
	}
	if err := acquire(ctx); err != nil {
		return nil, false, err
	}
	var cost int64
	defer func() {
		if shared {
			share.Release(0)
			return
		}
		share.Release(float64(cost))
	}()
	if c.decoded != nil {
		c.decoded(r)
	}
	blk, err := decodeBlock(enc.Payload, witness, c.proxy.pver)
	if err != nil {
		return nil, false, fmt.Errorf("decode block %s: %w", hash, err)
	}
	if got := blk.BlockHash(); got != hash {
		return nil, false, fmt.Errorf("block %s decoded as %s", hash, got)
	}
	cost = decodedBlockCost(blk)
	txids := bloom.BlockTxids(blk)
	c.mu.Lock()
	defer c.mu.Unlock()
	switch {
	case reserved >= cost:
		c.used -= reserved - cost
	case !c.tryReserveLocked(cost - reserved):
		return &DecodedBlock{hash: hash, cost: cost}, false, nil
	}
	return &DecodedBlock{hash: hash, Block: blk, Txids: txids, cost: cost}, true, nil
}

// decodeBlock decodes a block this proxy encoded.
func decodeBlock(payload []byte, witness bool, pver uint32) (*wire.MsgBlock, error) {
	enc := wire.BaseEncoding
	if witness {
		enc = wire.WitnessEncoding
	}
	blk := new(wire.MsgBlock)
	r := bytes.NewReader(payload)
	if err := blk.BtcDecode(r, pver, enc); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%d trailing bytes", r.Len())
	}
	return blk, nil
}

// peek returns a cached encoding of the block, the witness one first,
// without fetching it or touching the cache's order.
func (c *Proxy) peek(hash chainhash.Hash) (block Encoded, witness, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range []bool{true, false} {
		if el, found := c.byKey[blockKey{hash, w}]; found {
			return el.Value.(*cachedBlock).block, w, true
		}
	}
	return Encoded{}, false, false
}
