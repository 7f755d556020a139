package p2p

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Filtered-block bounds.
const (
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
	if env.upload.Reached(env.now()) && !st.whitelisted {
		env.metrics.UploadTargetRefused()
		return false, fmt.Errorf("%w (filtered block)", errUploadTarget)
	}
	bp.mu.Lock()
	loaded := bp.filter != nil
	bp.mu.Unlock()
	if !loaded {
		return true, nil // Core: no response
	}
	b, err := bs.blocks.Get(ctx, iv.Hash, bs.work)
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
			bs.blocks.Release(b)
		}
	}()

	done, err := bs.work(ctx)
	if err != nil {
		return false, err
	}
	bp.mu.Lock()
	var fb *bloom.FilteredBlock
	if bp.filter != nil {
		fb = bloom.FilterBlock(b.Block, b.Txids, bp.filter)
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
			iv.Hash, len(fb.Matched), len(b.Txids), len(mb), maxMerkleBlockPayload)
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
		bs.blocks.Release(b)
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
	env.upload.Add(sent, env.now())
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
