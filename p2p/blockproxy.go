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

	"github.com/cfindexd/cfindexd/p2p/peerpolicy"
	"github.com/cfindexd/cfindexd/wireframe"
)

// errUploadTarget ends a peer that asks for a historical block after the
// upload target was reached (Core disconnects such a peer too).
var errUploadTarget = fmt.Errorf("%w: historical block requested with the upload target reached", errDisconnect)

// blockProxy serves blocks to peers from the node: through a server-wide
// gate on node fetches (fetchGate), with a byte-bounded cache of encoded
// blocks that peers asking for the same block share (a new tip), and an
// upload target over the bytes served.
type blockProxy struct {
	fetcher BlockFetcher
	gate    *fetchGate
	upload  *peerpolicy.UploadTarget
	maxSize int64 // cache bound in bytes of payload

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

// encodedBlock is a block's payload (read-only, shared between peers) and
// its frame checksum.
type encodedBlock struct {
	payload []byte
	sum     [4]byte
}

type cachedBlock struct {
	key   blockKey
	block encodedBlock
}

// blockFetch is one fetch in progress; done is closed when block/err are set.
type blockFetch struct {
	done    chan struct{}
	waiters int // callers that joined, guarded by blockProxy.mu
	block   encodedBlock
	err     error
}

func newBlockProxy(fetcher BlockFetcher, gate *fetchGate, upload *peerpolicy.UploadTarget, cacheBytes int64) *blockProxy {
	return &blockProxy{
		fetcher:  fetcher,
		gate:     gate,
		upload:   upload,
		maxSize:  cacheBytes,
		order:    list.New(),
		byKey:    make(map[blockKey]*list.Element),
		inflight: make(map[blockKey]*blockFetch),
	}
}

// Get returns the block's payload, with witnesses or without, from the
// cache or the node. A failed fetch is not cached.
func (c *blockProxy) Get(ctx context.Context, hash chainhash.Hash, witness bool) (encodedBlock, error) {
	key := blockKey{hash, witness}
	block, joined, err := c.get(ctx, key)
	// The fetch this call joined may have belonged to a peer that left: its
	// cancellation says nothing about the block, so fetch once more.
	if joined && err != nil && ctx.Err() == nil && (errors.Is(err, context.Canceled) || errors.Is(err, context.DeadlineExceeded)) {
		block, _, err = c.get(ctx, key)
	}
	return block, err
}

// get returns the block and whether it joined another caller's fetch.
func (c *blockProxy) get(ctx context.Context, key blockKey) (encodedBlock, bool, error) {
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
			return encodedBlock{}, true, ctx.Err()
		}
	}

	f.block, f.err = c.fetch(ctx, key)
	c.mu.Lock()
	delete(c.inflight, key)
	if f.err == nil && int64(len(f.block.payload)) <= c.maxSize {
		c.byKey[key] = c.order.PushFront(&cachedBlock{key: key, block: f.block})
		c.size += int64(len(f.block.payload))
		for c.size > c.maxSize {
			old := c.order.Back()
			cb := old.Value.(*cachedBlock)
			c.order.Remove(old)
			delete(c.byKey, cb.key)
			c.size -= int64(len(cb.block.payload))
		}
	}
	c.mu.Unlock()
	close(f.done)
	return f.block, false, f.err
}

// fetch takes a slot of the gate, fetches the block and encodes it.
func (c *blockProxy) fetch(ctx context.Context, key blockKey) (encodedBlock, error) {
	if err := c.gate.acquire(ctx); err != nil {
		return encodedBlock{}, err
	}
	blk, err := c.fetcher.FetchBlock(ctx, key.hash)
	c.gate.release()
	if err != nil {
		return encodedBlock{}, err
	}
	if got := blk.BlockHash(); got != key.hash {
		return encodedBlock{}, fmt.Errorf("node returned block %s for %s", got, key.hash)
	}
	enc, size := wire.WitnessEncoding, blk.SerializeSize()
	if !key.witness {
		enc, size = wire.BaseEncoding, blk.SerializeSizeStripped()
	}
	var buf bytes.Buffer
	buf.Grow(size)
	if err := blk.BtcEncode(&buf, ProtocolVersion, enc); err != nil {
		return encodedBlock{}, fmt.Errorf("encode block %s: %w", key.hash, err)
	}
	payload := buf.Bytes()
	return encodedBlock{payload: payload, sum: wireframe.PayloadChecksum(payload)}, nil
}

// historicalRefused reports whether a block with header time blockTime
// must be refused: the upload target is reached, the peer is not
// whitelisted, and the block is more than a week older than the tip (Core's
// rule; recent blocks are always served).
func (c *blockProxy) historicalRefused(blockTime, tipTime time.Time, whitelisted bool, now time.Time) bool {
	return !whitelisted && tipTime.Sub(blockTime) > peerpolicy.HistoricalBlockAge && c.upload.Reached(now)
}

// fetchGate bounds node fetches in progress across peers: at most max, and
// one while busy reports true (the indexer is catching up and needs the
// node). Waiters are served in arrival order. Safe for concurrent use.
type fetchGate struct {
	max  int
	busy func() bool

	mu       sync.Mutex
	inFlight int
	waiters  []chan struct{}
}

func newFetchGate(max int, busy func() bool) *fetchGate { return &fetchGate{max: max, busy: busy} }

// limit is the number of fetches allowed now.
func (g *fetchGate) limit() int {
	if g.busy != nil && g.busy() {
		return 1
	}
	return g.max
}

// acquire waits for a slot or the end of ctx.
func (g *fetchGate) acquire(ctx context.Context) error {
	g.mu.Lock()
	if len(g.waiters) == 0 && g.inFlight < g.limit() {
		g.inFlight++
		g.mu.Unlock()
		return nil
	}
	ch := make(chan struct{})
	g.waiters = append(g.waiters, ch)
	g.mu.Unlock()
	select {
	case <-ch:
		return nil
	case <-ctx.Done():
		g.mu.Lock()
		defer g.mu.Unlock()
		for i, w := range g.waiters {
			if w == ch {
				g.waiters = append(g.waiters[:i], g.waiters[i+1:]...)
				return ctx.Err()
			}
		}
		// Granted meanwhile: hand the slot on.
		g.inFlight--
		g.grantLocked()
		return ctx.Err()
	}
}

// release returns a slot.
func (g *fetchGate) release() {
	g.mu.Lock()
	g.inFlight--
	g.grantLocked()
	g.mu.Unlock()
}

func (g *fetchGate) grantLocked() {
	for len(g.waiters) > 0 && g.inFlight < g.limit() {
		ch := g.waiters[0]
		g.waiters[0] = nil
		g.waiters = g.waiters[1:]
		g.inFlight++
		close(ch)
	}
}
