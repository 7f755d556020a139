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

	"github.com/cfindexd/cfindexd/bloom"
)

// Decoded-block bounds.
const (
	// MaxBlockBytes is Core's MAX_BLOCK_SERIALIZED_SIZE.
	MaxBlockBytes = 4_000_000
	// MaxDecodedBlock bounds what one decoded block and its txids take:
	// the worst case is a block of 16,666 minimal 60-byte transactions
	// (a megabyte without witness), about 7 MB decoded. Blocks are
	// decoded one at a time (DecodedCache.decoding) and accounted once
	// decoded, so at most one such block is outside the cache's bound.
	MaxDecodedBlock = 4 * MaxBlockBytes
)

// DecodedBlock is a block decoded for filtering, with its txids, shared
// read-only between peers.
type DecodedBlock struct {
	Block *wire.MsgBlock
	Txids []chainhash.Hash

	hash chainhash.Hash
	cost int64
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
	// decoding is held from a block's decoding until its bytes are
	// accounted: at most one decoded block is outside the bound.
	decoding chan struct{}
	// pins counts the pins held (Get without Release yet).
	pins int
}

type decodeFetch struct {
	done  chan struct{}
	block *DecodedBlock
	err   error
}

// NewDecodedCache returns a cache of at most max bytes of decoded blocks
// that gets their encodings through proxy.
func NewDecodedCache(proxy *Proxy, max int64) *DecodedCache {
	return &DecodedCache{
		proxy:    proxy,
		max:      max,
		order:    list.New(),
		byHash:   make(map[chainhash.Hash]*DecodedBlock),
		inflight: make(map[chainhash.Hash]*decodeFetch),
		decoding: make(chan struct{}, 1),
	}
}

// Get returns the decoded block pinned; call Release when done with it.
// work runs the decoding (and txid hashing) under the caller's CPU meter;
// a fetch from the node waits for r's turn at the proxy's gate.
func (c *DecodedCache) Get(ctx context.Context, r Requester, hash chainhash.Hash, work func(context.Context) (func(), error)) (*DecodedBlock, error) {
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

// evictLocked drops unpinned blocks, oldest first, until need more bytes
// fit (or nothing unpinned is left).
func (c *DecodedCache) evictLocked(need int64) {
	for c.used+need > c.max && c.order.Len() > 0 {
		b := c.order.Remove(c.order.Back()).(*DecodedBlock)
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
		held := c.used - c.unpinned // pinned blocks and reservations
		if held+n <= c.max || held == 0 {
			c.evictLocked(n)
			c.used += n
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

// load gets the block's serialization through the block proxy (its cache
// of encoded blocks, shared with getdata for blocks, else the node through
// its fetch gate), decodes it and hashes its txids under the caller's CPU
// meter, one block at a time, and accounts its bytes, waiting for room
// before the next block may be decoded.
func (c *DecodedCache) load(ctx context.Context, r Requester, hash chainhash.Hash, work func(context.Context) (func(), error)) (*DecodedBlock, error) {
	enc, witness, ok := c.proxy.peek(hash)
	if !ok {
		var err error
		if enc, err = c.proxy.Get(ctx, r, hash, false); err != nil {
			return nil, err
		}
	}
	select {
	case c.decoding <- struct{}{}:
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	defer func() { <-c.decoding }()
	done, err := work(ctx)
	if err != nil {
		return nil, err
	}
	blk, err := decodeBlock(enc.Payload, witness, c.proxy.pver)
	if err != nil {
		done()
		return nil, fmt.Errorf("decode block %s: %w", hash, err)
	}
	if got := blk.BlockHash(); got != hash {
		done()
		return nil, fmt.Errorf("block %s decoded as %s", hash, got)
	}
	b := &DecodedBlock{hash: hash, Block: blk, Txids: bloom.BlockTxids(blk), cost: decodedBlockCost(blk)}
	done()
	if err := c.reserve(ctx, b.cost); err != nil {
		return nil, err
	}
	return b, nil
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
