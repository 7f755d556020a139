package p2p

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
	"github.com/cfindexd/cfindexd/wireframe"
)

// Filtered-block bounds.
const (
	// maxDecodedBlock bounds what one decoded block and its txids take:
	// the worst case is a block of 16,666 minimal 60-byte transactions
	// (a megabyte without witness), about 7 MB decoded. Blocks are
	// decoded one at a time (decodedCache.decoding) and accounted once
	// decoded, so at most one such block is outside the cache's bound.
	maxDecodedBlock = 4 * maxBlockBytes
	// preserializeMatched: when the matched transactions of a filtered
	// block take at most this many bytes, they are serialized at once and
	// the decoded block is released before the answer waits for the
	// peer's send budget; above it, the block stays pinned in the decoded
	// cache (counted in its bound) while the transactions are sent one at
	// a time.
	preserializeMatched = 64 << 10
	// maxMerkleBlockPayload bounds a merkleblock this server builds (as
	// large as the largest cfilter, so the per-peer frame bound holds): it
	// takes a filter matching about 4,000 transactions of one block to
	// exceed it, which no wallet's filter within Bloom.MaxFPR does; the
	// request is refused (disconnect without penalty). Core has no such
	// limit.
	maxMerkleBlockPayload = maxUnsharedFrame - wireframe.HeaderSize
)

// decodedBlock is a block decoded for filtering, with its txids, shared
// read-only between peers.
type decodedBlock struct {
	hash  chainhash.Hash
	block *wire.MsgBlock
	txids []chainhash.Hash
	cost  int64
	refs  int // pins, guarded by decodedCache.mu
	elem  *list.Element
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

// decodedCache keeps decoded blocks and their txids for filtered-block
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
type decodedCache struct {
	proxy *blockProxy
	max   int64

	mu       sync.Mutex
	used     int64      // cost of every decoded block alive plus reservations
	unpinned int64      // cost of the blocks in order
	order    *list.List // unpinned cached blocks, front most recently used
	byHash   map[chainhash.Hash]*decodedBlock
	inflight map[chainhash.Hash]*decodeFetch
	freed    chan struct{} // closed (and replaced) when bytes are released
	// decoding is held from a block's decoding until its bytes are
	// accounted: at most one decoded block is outside the bound.
	decoding chan struct{}
}

type decodeFetch struct {
	done  chan struct{}
	block *decodedBlock
	err   error
}

func newDecodedCache(proxy *blockProxy, max int64) *decodedCache {
	return &decodedCache{
		proxy:    proxy,
		max:      max,
		order:    list.New(),
		byHash:   make(map[chainhash.Hash]*decodedBlock),
		inflight: make(map[chainhash.Hash]*decodeFetch),
		decoding: make(chan struct{}, 1),
	}
}

// get returns the decoded block pinned; call release when done with it.
// work runs the decoding (and txid hashing) under the caller's CPU meter.
func (c *decodedCache) get(ctx context.Context, hash chainhash.Hash, work func(context.Context) (func(), error)) (*decodedBlock, error) {
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

		f.block, f.err = c.load(ctx, hash, work)
		c.mu.Lock()
		delete(c.inflight, hash)
		if f.err == nil {
			c.byHash[hash] = f.block
			f.block.refs = 1
		}
		c.mu.Unlock()
		close(f.done)
		return f.block, f.err
	}
}

// pinLocked takes a reference on a cached block.
func (c *decodedCache) pinLocked(b *decodedBlock) {
	if b.refs == 0 && b.elem != nil {
		c.order.Remove(b.elem)
		b.elem = nil
		c.unpinned -= b.cost
	}
	b.refs++
}

// release returns a pin; an unpinned block stays cached (most recently
// used first) until the bound needs its bytes.
func (c *decodedCache) release(b *decodedBlock) {
	c.mu.Lock()
	defer c.mu.Unlock()
	b.refs--
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

// evictLocked drops unpinned blocks, oldest first, until need more bytes
// fit (or nothing unpinned is left).
func (c *decodedCache) evictLocked(need int64) {
	for c.used+need > c.max && c.order.Len() > 0 {
		b := c.order.Remove(c.order.Back()).(*decodedBlock)
		b.elem = nil
		delete(c.byHash, b.hash)
		c.used -= b.cost
		c.unpinned -= b.cost
	}
}

func (c *decodedCache) signalLocked() {
	if c.freed != nil {
		close(c.freed)
		c.freed = nil
	}
}

// reserve waits until n bytes fit in the bound, evicting unpinned blocks
// only when that makes them fit (or, for n alone over the bound, once
// nothing pinned or reserved is held), and takes them.
func (c *decodedCache) reserve(ctx context.Context, n int64) error {
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
func (c *decodedCache) load(ctx context.Context, hash chainhash.Hash, work func(context.Context) (func(), error)) (*decodedBlock, error) {
	enc, witness, ok := c.proxy.peek(hash)
	if !ok {
		var err error
		if enc, err = c.proxy.Get(ctx, hash, false); err != nil {
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
	blk, err := decodeBlock(enc.payload, witness)
	if err != nil {
		done()
		return nil, fmt.Errorf("decode block %s: %w", hash, err)
	}
	if got := blk.BlockHash(); got != hash {
		done()
		return nil, fmt.Errorf("block %s decoded as %s", hash, got)
	}
	b := &decodedBlock{hash: hash, block: blk, txids: bloom.BlockTxids(blk), cost: decodedBlockCost(blk)}
	done()
	if err := c.reserve(ctx, b.cost); err != nil {
		return nil, err
	}
	return b, nil
}

// decodeBlock decodes a block this server encoded.
func decodeBlock(payload []byte, witness bool) (*wire.MsgBlock, error) {
	enc := wire.BaseEncoding
	if witness {
		enc = wire.WitnessEncoding
	}
	blk := new(wire.MsgBlock)
	r := bytes.NewReader(payload)
	if err := blk.BtcDecode(r, ProtocolVersion, enc); err != nil {
		return nil, err
	}
	if r.Len() != 0 {
		return nil, fmt.Errorf("%d trailing bytes", r.Len())
	}
	return blk, nil
}

// serveFilteredBlock answers one MSG_FILTERED_BLOCK as Core's
// ProcessGetBlockData does: the block must be one the view knows (else it
// goes in the notfound, as every block answer of this server); once the
// upload target is reached, a filtered block request disconnects the peer
// whatever the block's age (unless whitelisted); without a filter loaded
// there is no answer at all; otherwise the merkleblock, then each matched
// transaction without witness, the filter updating as its nFlags ask. The
// matching runs under the server-wide BIP-37 CPU meter; the answer's bytes
// count against the peer's send budget and the upload target.
func serveFilteredBlock(ctx context.Context, env *handlerEnv, st *peerState, iv *wire.InvVect, emit emitFunc) (found bool, err error) {
	bs, bp := env.bloom, st.bloom
	if env.blocks == nil || bs.blocks == nil {
		return false, nil
	}
	if _, _, err := env.view.HeaderByHash(iv.Hash); err != nil {
		return false, ignoreNotFound(err)
	}
	if env.blocks.upload.Reached(env.now()) && !st.whitelisted {
		env.metrics.UploadTargetRefused()
		return false, fmt.Errorf("%w (filtered block)", errUploadTarget)
	}
	bp.mu.Lock()
	loaded := bp.filter != nil
	bp.mu.Unlock()
	if !loaded {
		return true, nil // Core: no response
	}
	b, err := bs.blocks.get(ctx, iv.Hash, bs.work)
	if err != nil {
		if ctx.Err() != nil {
			return false, ctx.Err()
		}
		if !errors.Is(err, ErrNotFound) {
			env.log.Warn().Err(err).Stringer("block", iv.Hash).Msg("fetching block for a filtered-block request failed")
		}
		return false, nil
	}
	pinned := true
	defer func() {
		if pinned {
			bs.blocks.release(b)
		}
	}()

	done, err := bs.work(ctx)
	if err != nil {
		return false, err
	}
	bp.mu.Lock()
	var fb *bloom.FilteredBlock
	if bp.filter != nil {
		fb = bloom.FilterBlock(b.block, b.txids, bp.filter)
	}
	bp.mu.Unlock()
	if fb == nil { // filterclear raced in: no filter, no answer
		done()
		return true, nil
	}
	mb := fb.MerkleBlock.Bytes()
	if len(mb) > maxMerkleBlockPayload {
		done()
		return true, invalidRequest("filtered block %s: the filter matches %d of its %d transactions (a merkleblock of %d bytes, limit %d)",
			iv.Hash, len(fb.Matched), len(b.txids), len(mb), maxMerkleBlockPayload)
	}
	merkle := encodedFrame(env.net, wire.CmdMerkleBlock, mb)
	var frames [][]byte
	matchedBytes := 0
	for _, tx := range fb.Txs {
		matchedBytes += tx.SerializeSizeStripped()
	}
	if matchedBytes <= preserializeMatched {
		for _, tx := range fb.Txs {
			frames = append(frames, txFrame(env.net, tx))
		}
		fb.Txs = nil
	}
	done()
	if fb.Txs == nil {
		bs.blocks.release(b)
		pinned = false
	}
	if err := emit(outbound{Command: wire.CmdMerkleBlock, Frame: merkle}); err != nil {
		return true, err
	}
	sent := len(merkle)
	for _, f := range frames {
		if err := emit(outbound{Command: wire.CmdTx, Frame: f}); err != nil {
			return true, err
		}
		sent += len(f)
	}
	for _, tx := range fb.Txs {
		f := txFrame(env.net, tx)
		if err := emit(outbound{Command: wire.CmdTx, Frame: f}); err != nil {
			return true, err
		}
		sent += len(f)
	}
	env.blocks.upload.Add(sent, env.now())
	bs.chargeFrames(1+len(frames)+len(fb.Txs), sent)
	bp.served++
	bs.metrics.FilteredBlockServed(len(fb.Matched))
	return true, nil
}

// txFrame is a tx frame carrying tx without witness.
func txFrame(net wire.BitcoinNet, tx *wire.MsgTx) []byte {
	var buf bytes.Buffer
	buf.Grow(wireframe.HeaderSize + tx.SerializeSizeStripped())
	buf.Write(make([]byte, wireframe.HeaderSize))
	_ = tx.SerializeNoWitness(&buf)
	frame := buf.Bytes()
	wireframe.PutHeader(frame, net, wire.CmdTx, len(frame)-wireframe.HeaderSize, wireframe.PayloadChecksum(frame[wireframe.HeaderSize:]))
	return frame
}

// Frame costs charged to the BIP-37 meter for what happens outside it: the
// request's lookups, the writer's copy and syscall, per frame and per byte
// (estimates, so that sending is not free beside the matching).
const (
	bloomFrameCost = 8 * time.Microsecond
	bloomByteCost  = 2 * time.Nanosecond
)

// chargeFrames charges frames frames of bytes bytes sent to BIP-37 peers.
func (bs *bloomServer) chargeFrames(frames, bytes int) {
	d := time.Duration(frames)*bloomFrameCost + time.Duration(bytes)*bloomByteCost
	bs.meter.Charge(d)
	bs.metrics.BloomWork(d)
}

// work takes the BIP-37 CPU meter and returns the function that charges
// the time spent and reports it.
func (bs *bloomServer) work(ctx context.Context) (func(), error) {
	done, err := bs.meter.Acquire(ctx)
	if err != nil {
		return nil, err
	}
	began := time.Now()
	return func() {
		done()
		bs.metrics.BloomWork(time.Since(began))
	}, nil
}

// peek returns a cached encoding of the block, the witness one first,
// without fetching it or touching the cache's order.
func (c *blockProxy) peek(hash chainhash.Hash) (block encodedBlock, witness, ok bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, w := range []bool{true, false} {
		if el, found := c.byKey[blockKey{hash, w}]; found {
			return el.Value.(*cachedBlock).block, w, true
		}
	}
	return encodedBlock{}, false, false
}
