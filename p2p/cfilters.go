package p2p

import (
	"context"
	"errors"
	"fmt"
	"sync"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/internal/wirescan"
	"github.com/cfindexd/cfindexd/wireframe"
)

// BIP-157 request limits, as Bitcoin Core enforces them.
const (
	// MaxGetCFilters is Core's MAX_GETCFILTERS_SIZE: blocks per getcfilters.
	MaxGetCFilters = 1000
	// MaxGetCFHeaders is Core's MAX_GETCFHEADERS_SIZE: blocks per
	// getcfheaders.
	MaxGetCFHeaders = 2000
	// CFCheckptInterval is Core's CFCHECKPT_INTERVAL.
	CFCheckptInterval = 1000
)

// filterRange validates a getcfilters/getcfheaders request the way Core's
// PrepareBlockFilterRequest does: an unknown filter type, a start above the
// stop height or a range over limit disconnect the peer without penalty
// (errInvalidRequest). Unlike Core, an unknown stop hash is waited for and
// then ignored (ok=false). It returns the stop block's height, which its
// hash fixes whatever reorgs follow.
func filterRange(ctx context.Context, env *handlerEnv, ft wire.FilterType, start uint32, stop chainhash.Hash, limit uint32, cmd string) (stopHeight uint32, ok bool, err error) {
	if ft != wire.GCSFilterRegular {
		return 0, false, invalidRequest("%s for unsupported filter type %d", cmd, ft)
	}
	stopHeight, _, ok, err = stopRange(ctx, env, start, stop, limit, cmd)
	return stopHeight, ok, err
}

// stopRange is filterRange for any filter type; active tells whether the
// stop block is on the active chain.
func stopRange(ctx context.Context, env *handlerEnv, start uint32, stop chainhash.Hash, limit uint32, cmd string) (stopHeight uint32, active, ok bool, err error) {
	stopHeight, active, known, err := env.awaitStop(ctx, stop)
	if err != nil || !known {
		return 0, false, false, err
	}
	if start > stopHeight {
		return 0, false, false, invalidRequest("%s start height %d above stop height %d", cmd, start, stopHeight)
	}
	if stopHeight-start >= limit {
		return 0, false, false, invalidRequest("%s for %d blocks, limit %d", cmd, uint64(stopHeight-start)+1, limit)
	}
	return stopHeight, active, true, nil
}

// handleGetCFilters answers with one cfilter per block start..stop,
// streamed: the blocks are fixed in one snapshot, then their filters are
// read from the store a chunk (a chunkCap buffer) at a time, each chunk
// framed under a filter-work slot into one buffer of back-to-back cfilter
// frames and queued as one entry before the next is read. The pieces are
// one request at the filter work: it costs the peer a turn per
// filterWorkQuantum, not one per chunk. A peer that does
// not read therefore holds at most its send budget and one chunk, never
// the whole answer. No filter is hashed and no wire.Message is built: the
// store keeps each cfilter's checksum beside its filter.
func handleGetCFilters(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetCFilters, emit emitFunc) error {
	_, ok, err := filterRange(ctx, env, m.FilterType, m.StartHeight, m.StopHash, MaxGetCFilters, m.Command())
	if err != nil || !ok {
		return err
	}
	hashes, err := env.blockHashesUnderFilterWork(ctx, st, m)
	defer env.hashLists.put(hashes)
	if err != nil {
		return ignoreNotFound(fmt.Errorf("getcfilters %d..%s: %w", m.StartHeight, m.StopHash, err))
	}
	if len(hashes) == 0 || hashes[len(hashes)-1] != m.StopHash {
		return fmt.Errorf("getcfilters %d..%s: view returned %d blocks not ending at stop", m.StartHeight, m.StopHash, len(hashes))
	}
	for next := 0; next < len(hashes); {
		chunk, n, err := env.cfilterChunkUnderFilterWork(ctx, st, m.StartHeight+uint32(next), hashes[next:])
		if err != nil {
			return ignoreNotFound(fmt.Errorf("getcfilters %d..%s at height %d: %w", m.StartHeight, m.StopHash, m.StartHeight+uint32(next), err))
		}
		if err := emit(outbound{Command: wire.CmdCFilter, Frame: chunk.frames, Count: chunk.count, Recycle: env.chunks.put}); err != nil {
			return err
		}
		next += n
	}
	st.markUseful(env.now())
	return nil
}

// blockHashesUnderFilterWork reads the hashes of the blocks m asks for
// under a filter-work slot of the peer, charged a hash's size per block,
// as the first piece of the request (the filters follow).
func (env *handlerEnv) blockHashesUnderFilterWork(ctx context.Context, st *peerState, m *wire.MsgGetCFilters) (hashes []chainhash.Hash, err error) {
	if err := env.acquireFilterWork(ctx, st); err != nil {
		return nil, err
	}
	defer func() { env.releaseFilterWork(st, len(hashes)*chainhash.HashSize, err != nil || len(hashes) == 0) }()
	return env.view.AppendBlockHashes(env.hashLists.get(MaxGetCFilters), m.StopHash, m.StartHeight)
}

// cfilterChunkUnderFilterWork reads the filters of the blocks of hashes
// from height start on, as many as their frames fill a chunk buffer (at
// least one), and frames them into one chunk, under a filter-work slot of
// the peer charged the chunk's bytes, as a piece of the request that ends
// with the last block. n is the blocks it holds.
func (env *handlerEnv) cfilterChunkUnderFilterWork(ctx context.Context, st *peerState, start uint32, hashes []chainhash.Hash) (chunk cfilterChunk, n int, err error) {
	if err := env.acquireFilterWork(ctx, st); err != nil {
		return cfilterChunk{}, 0, err
	}
	chunk = cfilterChunk{pool: &env.chunks}
	defer func() {
		env.releaseFilterWork(st, len(chunk.frames), err != nil || n >= len(hashes))
		if err != nil {
			env.chunks.put(chunk.frames)
		}
	}()
	_, err = env.view.EachFilter(start, hashes, func(i int, filter []byte, sum [4]byte) (bool, error) {
		if !chunk.fits(len(filter)) {
			return false, nil // read again as the next chunk's first
		}
		if err := chunk.add(env.net, &hashes[i], filter, sum); err != nil {
			return false, err
		}
		// Stop before a filter like this one would not fit, so that
		// filters are seldom read twice.
		return chunk.fits(len(filter)), nil
	})
	n = chunk.count
	if err == nil && n == 0 {
		err = errors.New("view read no filter")
	}
	return chunk, n, err
}

// chunkCap is the capacity of the pooled buffers cfilter chunks are
// framed in: room for a few mainnet-sized filters, so that their chunks
// reuse pooled buffers, and a fraction of a peer's reserve of the send
// budget, so that a peer has several chunks in flight. A filter whose
// frame alone is larger gets a buffer of its own.
const chunkCap = 64 << 10

// slicePool keeps slices of one capacity between answers, so a busy
// server answers without allocating or zeroing memory: frame buffers,
// which the writer hands back once written (outbound.Recycle), and the
// block-hash lists of getcfilters answers. Safe for concurrent use; the
// zero value is not ready (size).
type slicePool[T any] struct {
	size int
	pool sync.Pool
}

// framePool is the slicePool of frame buffers.
type framePool = slicePool[byte]

// get returns an empty slice with room for need elements: one of the
// pool's capacity if need fits in it, else one of its own.
func (sp *slicePool[T]) get(need int) []T {
	if need > sp.size {
		return make([]T, 0, need)
	}
	if b, ok := sp.pool.Get().(*[]T); ok {
		return (*b)[:0]
	}
	return make([]T, 0, sp.size)
}

// put takes back a slice nobody uses any more; slices of another capacity
// (grown for a large filter) are left to the collector.
func (sp *slicePool[T]) put(b []T) {
	if cap(b) == sp.size {
		b = b[:0]
		sp.pool.Put(&b)
	}
}

// cfilterChunk is a buffer of complete cfilter frames, back to back, from
// pool: no allocation per filter, and none per chunk once the pool holds
// buffers (unless a filter's frame alone outgrows them).
type cfilterChunk struct {
	pool   *framePool
	frames []byte
	count  int
}

// cfilterFrameSize is the size of the cfilter frame carrying a filter of
// filterLen bytes.
func cfilterFrameSize(filterLen int) int {
	return wireframe.HeaderSize + wireframe.CFilterPrefixLen(filterLen) + filterLen
}

// fits reports whether the frame of a filter of filterLen bytes may join
// the chunk: always as its first, else within its buffer's capacity.
func (c *cfilterChunk) fits(filterLen int) bool {
	return c.count == 0 || cap(c.frames)-len(c.frames) >= cfilterFrameSize(filterLen)
}

// add appends the cfilter frame for blockHash carrying filter, whose
// message checksum is sum: the 24-byte header, then the payload (filter
// type, block hash, CompactSize length, filter), written in place. The
// first frame takes a buffer from the pool; a frame that does not fit
// grows the chunk out of the pool.
func (c *cfilterChunk) add(net wire.BitcoinNet, blockHash *chainhash.Hash, filter []byte, sum [4]byte) error {
	if len(filter) > wire.MaxCFilterDataSize {
		return fmt.Errorf("filter of block %s is %d bytes, over the %d a cfilter carries", blockHash, len(filter), wire.MaxCFilterDataSize)
	}
	prefixLen := wireframe.CFilterPrefixLen(len(filter))
	payloadLen := prefixLen + len(filter)
	size := wireframe.HeaderSize + payloadLen
	if c.frames == nil && c.pool != nil {
		c.frames = c.pool.get(size)
	}
	at := len(c.frames)
	if cap(c.frames)-at < size {
		// Not from the pool, or a frame that does not fit (callers that
		// ask fits first never get here with frames in the chunk).
		grown := make([]byte, at, max(chunkCap, at+size))
		copy(grown, c.frames)
		if c.pool != nil {
			c.pool.put(c.frames)
		}
		c.frames = grown
	}
	c.frames = c.frames[:at+size]
	frame := c.frames[at:]
	wireframe.PutHeader(frame, net, wire.CmdCFilter, payloadLen, sum)
	wireframe.PutCFilterPrefix(frame[wireframe.HeaderSize:], blockHash, len(filter))
	copy(frame[wireframe.HeaderSize+prefixLen:], filter)
	c.count++
	return nil
}

// handleGetCFHeaders answers with one cfheaders: the filter header before
// start and the filter hashes start..stop, which the store keeps beside the
// filter headers, so no filter is read.
func handleGetCFHeaders(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetCFHeaders, emit emitFunc) error {
	stopHeight, ok, err := filterRange(ctx, env, m.FilterType, m.StartHeight, m.StopHash, MaxGetCFHeaders, m.Command())
	if err != nil || !ok {
		return err
	}
	return env.answerUnderFilterWork(ctx, st, emit, func() (outbound, error) {
		count := int(stopHeight-m.StartHeight) + 1
		hashesAt := cfheadersPrefixLen(count)
		frame := env.headerFrames.get(hashesAt + count*chainhash.HashSize)
		prev, frame, err := env.view.AppendFilterHashes(frame[:hashesAt], m.StopHash, m.StartHeight)
		if err != nil {
			env.headerFrames.put(frame)
			return outbound{}, ignoreNotFound(fmt.Errorf("getcfheaders %d..%s: %w", m.StartHeight, m.StopHash, err))
		}
		if got := len(frame) - hashesAt; got != count*chainhash.HashSize {
			env.headerFrames.put(frame)
			return outbound{}, fmt.Errorf("getcfheaders %d..%s: view returned %d bytes of filter hashes, want %d", m.StartHeight, m.StopHash, got, count*chainhash.HashSize)
		}
		finishCFHeadersFrame(frame, env.net, &m.StopHash, &prev, count)
		return outbound{Command: wire.CmdCFHeaders, Frame: frame, Recycle: env.headerFrames.put}, nil
	})
}

// maxCFHeadersFrame is the size of a cfheaders frame with MaxGetCFHeaders
// hashes (whose count is a 3-byte CompactSize), the capacity of the
// buffers cfheaders frames are built in.
const maxCFHeadersFrame = wireframe.HeaderSize + 1 + 2*chainhash.HashSize + 3 + MaxGetCFHeaders*chainhash.HashSize

// cfheadersPrefixLen is the length of a cfheaders frame before its count
// filter hashes: the header, filter type, stop hash, previous filter
// header and CompactSize count.
func cfheadersPrefixLen(count int) int {
	return wireframe.HeaderSize + 1 + 2*chainhash.HashSize + wire.VarIntSerializeSize(uint64(count))
}

// finishCFHeadersFrame fills in the cfheaders frame whose count filter
// hashes follow cfheadersPrefixLen(count) bytes of room: the header (the
// payload hashed once for its checksum), filter type, stop hash, previous
// filter header and count. No wire.Message is built.
func finishCFHeadersFrame(frame []byte, net wire.BitcoinNet, stop, prev *chainhash.Hash, count int) {
	p := frame[wireframe.HeaderSize:wireframe.HeaderSize]
	p = append(p, byte(wire.GCSFilterRegular))
	p = append(p, stop[:]...)
	p = append(p, prev[:]...)
	wirescan.AppendCompactSize(p, uint64(count))
	wireframe.PutHeader(frame, net, wire.CmdCFHeaders, len(frame)-wireframe.HeaderSize, wireframe.PayloadChecksum(frame[wireframe.HeaderSize:]))
}

// handleGetCFCheckpt answers with the filter headers at every
// CFCheckptInterval-th height up to the stop block, on the stop block's
// chain (active or stale), read in one snapshot.
func handleGetCFCheckpt(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetCFCheckpt, emit emitFunc) error {
	if m.FilterType != wire.GCSFilterRegular {
		return invalidRequest("getcfcheckpt for unsupported filter type %d", m.FilterType)
	}
	stopHeight, _, known, err := env.awaitStop(ctx, m.StopHash)
	if err != nil || !known {
		return err
	}
	return env.answerUnderFilterWork(ctx, st, emit, func() (outbound, error) {
		headers, err := env.view.FilterHeaderCheckpoints(m.StopHash, CFCheckptInterval)
		if err != nil {
			return outbound{}, ignoreNotFound(fmt.Errorf("getcfcheckpt %s: %w", m.StopHash, err))
		}
		if want := stopHeight / CFCheckptInterval; uint32(len(headers)) != want {
			return outbound{}, fmt.Errorf("getcfcheckpt %s: view returned %d checkpoints, want %d", m.StopHash, len(headers), want)
		}
		resp := wire.NewMsgCFCheckpt(wire.GCSFilterRegular, &m.StopHash, len(headers))
		for i := range headers {
			resp.FilterHeaders = append(resp.FilterHeaders, &headers[i])
		}
		return env.encode(st, resp)
	})
}

// ignoreNotFound turns a lookup that raced a rollback into "ignore the
// request" (nil); other errors pass through for the caller to log.
func ignoreNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
