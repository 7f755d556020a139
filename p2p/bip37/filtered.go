package bip37

import (
	"bytes"
	"context"
	"errors"

	"github.com/btcsuite/btcd/chainhash/v2"
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
	b, err := s.blocks.Get(ctx, p.requester, hash, s.work)
	if err != nil {
		if ctx.Err() != nil {
			return false, 0, ctx.Err()
		}
		if !errors.Is(err, s.env.NotFound) {
			s.env.Log.Warn().Err(err).Stringer("block", hash).Msg("fetching block for a filtered-block request failed")
		}
		return false, 0, nil
	}
	pinned := true
	defer func() {
		if pinned {
			s.blocks.Release(b)
		}
	}()

	done, err := s.work(ctx)
	if err != nil {
		return false, 0, err
	}
	p.mu.Lock()
	var fb *bloom.FilteredBlock
	if p.filter != nil {
		fb = bloom.FilterBlock(b.Block, b.Txids, p.filter)
	}
	p.mu.Unlock()
	if fb == nil { // filterclear raced in: no filter, no answer
		done()
		return true, 0, nil
	}
	mb := fb.MerkleBlock.Bytes()
	if len(mb) > maxMerkleBlockPayload {
		done()
		return true, 0, invalidRequest("filtered block %s: the filter matches %d of its %d transactions (a merkleblock of %d bytes, limit %d)",
			hash, len(fb.Matched), len(b.Txids), len(mb), maxMerkleBlockPayload)
	}
	merkle := encodedFrame(s.env.Net, wire.CmdMerkleBlock, mb)
	var frames [][]byte
	matchedBytes := 0
	for _, tx := range fb.Txs {
		matchedBytes += tx.SerializeSizeStripped()
	}
	if matchedBytes <= preserializeMatched {
		for _, tx := range fb.Txs {
			frames = append(frames, txFrame(s.env.Net, tx))
		}
		fb.Txs = nil
	}
	done()
	if fb.Txs == nil {
		s.blocks.Release(b)
		pinned = false
	}
	if err := emit(Out{Command: wire.CmdMerkleBlock, Frame: merkle}); err != nil {
		return true, 0, err
	}
	sent = len(merkle)
	for _, f := range frames {
		if err := emit(Out{Command: wire.CmdTx, Frame: f}); err != nil {
			return true, sent, err
		}
		sent += len(f)
	}
	for _, tx := range fb.Txs {
		f := txFrame(s.env.Net, tx)
		if err := emit(Out{Command: wire.CmdTx, Frame: f}); err != nil {
			return true, sent, err
		}
		sent += len(f)
	}
	s.chargeFrames(1+len(frames)+len(fb.Txs), sent)
	p.served++
	s.metrics.FilteredBlockServed(len(fb.Matched))
	return true, sent, nil
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
