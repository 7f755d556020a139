package bip37

import (
	"bytes"
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/bloom"
	"github.com/cfindexd/cfindexd/p2p/blockproxy"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Filtered-block bounds.
const (
	// matchedBatchBytes bounds the matched transactions of a filtered
	// block serialized at a time: they are encoded while the decoded block
	// is pinned, then the pin is released before the frames wait for the
	// peer's send budget, and the block pinned again (decoded again if it
	// was evicted meanwhile, charged to the peer) for the next batch. So a
	// peer that does not read holds no decoded block, only one batch (or
	// one larger transaction's frame).
	matchedBatchBytes = 64 << 10
	// maxMerkleBlockPayload bounds a merkleblock this server builds (as
	// large as the largest cfilter payload, so the per-peer frame bound
	// holds): it takes a filter matching about 4,000 transactions of one
	// block to exceed it, which no wallet's filter within Config.MaxFPR
	// does; the request is refused (disconnect without penalty). Core has
	// no such limit.
	maxMerkleBlockPayload = 1 + chainhash.HashSize + 5 + wire.MaxCFilterDataSize
)

// Out is one answer for the peer: a message the peer encodes without
// witness, or a complete frame of Command.
type Out struct {
	Msg     wire.Message
	Command string
	Frame   []byte
}

// Emit queues an answer for the peer; it blocks while the peer's send
// budget is used up and fails when the peer is gone or stalls.
type Emit func(Out) error

// FilteredBlock answers one MSG_FILTERED_BLOCK for a block the caller
// knows, once the caller's checks passed (the block is known, the upload
// target): without a filter loaded there is no answer at all (found, as
// Core sends nothing); a block that cannot be had is not found; otherwise
// the merkleblock, then each matched transaction without witness, the
// filter updating as its nFlags ask. The matching runs under the
// server-wide CPU meter. sent is the bytes emitted, for the upload target.
func (s *Server) FilteredBlock(ctx context.Context, p *Peer, hash chainhash.Hash, emit Emit) (found bool, sent int, err error) {
	if s.blocks == nil {
		return false, 0, nil
	}
	if !p.Loaded() {
		return true, 0, nil // Core: no response
	}
	frames, matched, next, err := s.firstBatch(ctx, p, hash)
	var unavailable *unavailableError
	switch {
	case errors.As(err, &unavailable):
		if !errors.Is(err, s.env.NotFound) {
			s.env.Log.Warn().Err(unavailable.err).Stringer("block", hash).Msg("fetching block for a filtered-block request failed")
		}
		return false, 0, nil
	case err != nil:
		return ctx.Err() == nil, 0, err
	case frames == nil:
		return true, 0, nil
	}
	count := 0
	for {
		batchBytes := 0
		for i, f := range frames {
			cmd := wire.CmdTx
			if count == 0 {
				cmd = wire.CmdMerkleBlock
			}
			if err := emit(Out{Command: cmd, Frame: f}); err != nil {
				s.chargeFrames(p, i, batchBytes)
				return true, sent, err
			}
			sent += len(f)
			batchBytes += len(f)
			count++
		}
		// Charged a batch at a time: the meter's debt grows by a batch's
		// cost, not a whole answer's, so whoever is next in line waits
		// for as little.
		s.chargeFrames(p, len(frames), batchBytes)
		if next == len(matched) {
			break
		}
		// The next batch, from the block pinned again.
		b, err := s.blocks.Get(ctx, p.requester, hash, s.workFor(p))
		if err != nil {
			if ctx.Err() != nil {
				return true, sent, ctx.Err()
			}
			return true, sent, fmt.Errorf("filtered block %s: block gone after %d of %d matched transactions: %w", hash, next, len(matched), err)
		}
		next, frames = s.nextBatch(b, matched, next, frames[:0])
	}
	p.served++
	s.metrics.FilteredBlockServed(len(matched))
	return true, sent, nil
}

// unavailableError is a block the cache could not get (the node does not
// have it, or the fetch failed): the request is answered as not found.
type unavailableError struct{ err error }

func (e *unavailableError) Error() string { return e.err.Error() }
func (e *unavailableError) Unwrap() error { return e.err }

// getBlock gets the block of hash pinned, fetched and decoded on p's
// account if it must be; a failure other than ctx's is an
// unavailableError.
func (s *Server) getBlock(ctx context.Context, p *Peer, hash chainhash.Hash) (*blockproxy.DecodedBlock, error) {
	b, err := s.blocks.Get(ctx, p.requester, hash, s.workFor(p))
	if err != nil {
		if ctx.Err() != nil {
			return nil, ctx.Err()
		}
		return nil, &unavailableError{err: err}
	}
	return b, nil
}

// firstBatch matches the block of hash against p's filter under the CPU
// meter and returns the merkleblock frame and the first batch of tx
// frames, the indexes of the matched transactions and where the next
// batch starts; no frames is no answer (the filter was cleared). No pin
// is held when it returns.
func (s *Server) firstBatch(ctx context.Context, p *Peer, hash chainhash.Hash) (frames [][]byte, matched []int, next int, err error) {
	fb, b, err := s.match(ctx, p, hash)
	if err != nil || fb == nil {
		return nil, nil, 0, err
	}
	defer s.blocks.Release(b)
	mb := fb.MerkleBlock.Bytes()
	if len(mb) > maxMerkleBlockPayload {
		return nil, nil, 0, invalidRequest("filtered block %s: the filter matches %d of its %d transactions (a merkleblock of %d bytes, limit %d)",
			hash, len(fb.Matched), len(b.Txids), len(mb), maxMerkleBlockPayload)
	}
	frames = [][]byte{encodedFrame(s.env.Net, wire.CmdMerkleBlock, mb)}
	next, frames = s.matchedFrames(b, fb.Matched, 0, frames)
	return frames, fb.Matched, next, nil
}

// matchPieceHashes bounds the work of one grant of the CPU meter while
// matching a block: about this many element hashes, as the filter counts
// them (bloom.BlockMatcher.MatchHashes). The meter starts a piece only out
// of debt, so the wallet first in line waits at most about one piece's
// time over the share, however expensive the filter of the peer served
// before it; and a wallet's sparse filter (a hash or two per element)
// matches a block of a few thousand transactions in one piece, so it
// waits for one grant per block, not one per few hundred transactions.
const matchPieceHashes = 1 << 15

// match matches the block of hash against p's filter, a piece
// (matchPieceHashes) per grant of the CPU meter, and returns the filtered
// block with the block pinned (release it); nil when the filter was
// cleared or replaced meanwhile (no answer). A peer waiting for its turn
// holds no pin: the block is pinned from the grant to the end of the
// piece, so the decoded-block cache holds what peers are working on and
// what it chooses to keep, never a decoded block for each peer in line (a
// block evicted meanwhile is decoded again on the peer's account). The
// one wait with a pin held is the turn after the block was fetched or
// decoded for p, so that what p paid for is matched.
func (s *Server) match(ctx context.Context, p *Peer, hash chainhash.Hash) (*bloom.FilteredBlock, *blockproxy.DecodedBlock, error) {
	p.mu.Lock()
	f := p.filter
	p.mu.Unlock()
	if f == nil {
		return nil, nil, nil
	}
	var b *blockproxy.DecodedBlock
	if !s.blocks.Touch(hash) {
		var err error
		if b, err = s.getBlock(ctx, p, hash); err != nil {
			return nil, nil, err
		}
	}
	var m *bloom.BlockMatcher
	for {
		done, err := s.work(ctx, p)
		if err != nil {
			if b != nil {
				s.blocks.Release(b)
			}
			return nil, nil, err
		}
		if b == nil {
			var cached bool
			if b, cached = s.blocks.Cached(hash); !cached {
				done()
				if b, err = s.getBlock(ctx, p, hash); err != nil {
					return nil, nil, err
				}
				continue
			}
		}
		if m == nil {
			m = bloom.NewBlockMatcher(b.Block, b.Txids, f)
		} else if !m.Attach(b.Block, b.Txids) {
			done()
			s.blocks.Release(b)
			return nil, nil, fmt.Errorf("filtered block %s: the cache gave a different block", hash)
		}
		p.mu.Lock()
		current := p.filter == f
		finished := current && m.MatchHashes(matchPieceHashes)
		p.mu.Unlock()
		done()
		switch {
		case !current: // filterclear or filterload raced in: no answer
			s.blocks.Release(b)
			return nil, nil, nil
		case finished:
			return m.Result(), b, nil
		}
		m.Detach()
		s.blocks.Release(b)
		b = nil
	}
}

// nextBatch is matchedFrames from b, which it releases.
func (s *Server) nextBatch(b *blockproxy.DecodedBlock, matched []int, next int, frames [][]byte) (int, [][]byte) {
	defer s.blocks.Release(b)
	return s.matchedFrames(b, matched, next, frames)
}

// matchedFrames appends to frames the tx frames of the matched
// transactions of b from matched[next] on, at most matchedBatchBytes of
// them (or the one frame, if larger), and returns where the next batch
// starts.
func (s *Server) matchedFrames(b *blockproxy.DecodedBlock, matched []int, next int, frames [][]byte) (int, [][]byte) {
	size := 0
	for ; next < len(matched); next++ {
		tx := b.Block.Transactions[matched[next]]
		n := wireframe.HeaderSize + tx.SerializeSizeStripped()
		if size > 0 && size+n > matchedBatchBytes {
			break
		}
		frames = append(frames, txFrame(s.env.Net, tx))
		size += n
	}
	return next, frames
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

// encodedFrame returns a complete frame of cmd carrying payload.
func encodedFrame(net wire.BitcoinNet, cmd string, payload []byte) []byte {
	frame := make([]byte, wireframe.HeaderSize+len(payload))
	wireframe.PutHeader(frame, net, cmd, len(payload), wireframe.PayloadChecksum(payload))
	copy(frame[wireframe.HeaderSize:], payload)
	return frame
}
