package p2p

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"

	"github.com/cfindexd/cfindexd/p2p/spfilter"
	"github.com/cfindexd/cfindexd/wireframe"
)

// Sizes of the silent-payment type's answers. spChunkBytes is how many
// bytes of its cfilter frames are built before they are queued, as chunks
// of basic filters are; a chunk is at most that plus one frame
// (spMaxQueueEntry). spAnswerBuild bounds a chunk being built under a
// filter-work slot: the chunk, grown at most twice over, and the block's
// data as the view returned it.
const (
	spChunkBytes    = 64 << 10
	spMaxFrame      = wireframe.HeaderSize + 1 + chainhash.HashSize + 5 + spfilter.MaxDataSize
	spMaxQueueEntry = spChunkBytes + spMaxFrame
	spAnswerBuild   = 2*spMaxQueueEntry + spfilter.MaxDataSize
)

// dispatchSP answers getcfilters, getcfheaders and getcfcheckpt of the
// silent-payment filter type (package spfilter) when the index is served.
// handled=false leaves msg to dispatch, which refuses the type as unknown
// (disconnect without penalty, as Core) when the index is off. Requests
// are checked as for basic filters (same limits, same stop-hash wait) and
// answered under filter-work slots within the send budgets; one reaching
// outside the index or onto a stale branch is ignored.
func dispatchSP(ctx context.Context, env *handlerEnv, st *peerState, msg wire.Message, emit emitFunc) (handled bool, err error) {
	if env.sp == nil {
		return false, nil
	}
	switch m := msg.(type) {
	case *wire.MsgGetCFilters:
		if m.FilterType == spfilter.FilterType {
			return true, handleSPGetCFilters(ctx, env, st, m, emit)
		}
	case *wire.MsgGetCFHeaders:
		if m.FilterType == spfilter.FilterType {
			return true, handleSPGetCFHeaders(ctx, env, st, m, emit)
		}
	case *wire.MsgGetCFCheckpt:
		if m.FilterType == spfilter.FilterType {
			return true, handleSPGetCFCheckpt(ctx, env, st, m, emit)
		}
	}
	return false, nil
}

// spRange checks a request of the type as filterRange does, then that
// start..stop lies on the active chain inside the index (ok=false:
// ignore).
func spRange(ctx context.Context, env *handlerEnv, start uint32, stop chainhash.Hash, limit uint32, cmd string) (stopHeight uint32, ok bool, err error) {
	stopHeight, active, ok, err := stopRange(ctx, env, start, stop, limit, cmd)
	if err != nil || !ok || !active || !env.sp.Covers(start, stopHeight) {
		return 0, false, err
	}
	return stopHeight, true, nil
}

// handleSPGetCFilters streams one cfilter per block start..stop, framed
// spChunkBytes at a time under filter-work slots, as handleGetCFilters.
func handleSPGetCFilters(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetCFilters, emit emitFunc) error {
	if _, ok, err := spRange(ctx, env, m.StartHeight, m.StopHash, MaxGetCFilters, m.Command()); err != nil || !ok {
		return err
	}
	hashes, err := env.blockHashesUnderFilterWork(ctx, st, m)
	defer env.hashLists.put(hashes)
	if err != nil {
		return ignoreSPNotFound(fmt.Errorf("getcfilters %d..%s: %w", m.StartHeight, m.StopHash, err))
	}
	if len(hashes) == 0 || hashes[len(hashes)-1] != m.StopHash {
		return fmt.Errorf("getcfilters %d..%s: view returned %d blocks not ending at stop", m.StartHeight, m.StopHash, len(hashes))
	}
	for next := 0; next < len(hashes); {
		var n int
		out, err := env.pieceUnderFilterWork(ctx, st, func() (outbound, bool, error) {
			frames, k, err := env.sp.AppendCFilters(nil, m.StartHeight+uint32(next), hashes[next:], spChunkBytes)
			n = k
			return outbound{Command: wire.CmdCFilter, Frame: frames, Count: k}, next+k >= len(hashes), err
		})
		if err != nil {
			return ignoreSPNotFound(fmt.Errorf("getcfilters %d..%s at height %d: %w", m.StartHeight, m.StopHash, m.StartHeight+uint32(next), err))
		}
		if err := emit(out); err != nil {
			return err
		}
		next += n
	}
	st.markUseful(env.now())
	return nil
}

// handleSPGetCFHeaders answers with one cfheaders of commitment hashes.
func handleSPGetCFHeaders(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetCFHeaders, emit emitFunc) error {
	stopHeight, ok, err := spRange(ctx, env, m.StartHeight, m.StopHash, MaxGetCFHeaders, m.Command())
	if err != nil || !ok {
		return err
	}
	return ignoreSPNotFound(env.answerUnderFilterWork(ctx, st, emit, func() (outbound, error) {
		frame, err := env.sp.CFHeaders(m.StartHeight, stopHeight, m.StopHash)
		return outbound{Command: wire.CmdCFHeaders, Frame: frame}, err
	}))
}

// handleSPGetCFCheckpt answers with the commitment headers at every
// CFCheckptInterval-th height up to an active stop block the index covers.
func handleSPGetCFCheckpt(ctx context.Context, env *handlerEnv, st *peerState, m *wire.MsgGetCFCheckpt, emit emitFunc) error {
	stopHeight, active, known, err := env.awaitStop(ctx, m.StopHash)
	if err != nil || !known || !active || !env.sp.Covers(stopHeight, stopHeight) {
		return err
	}
	return ignoreSPNotFound(env.answerUnderFilterWork(ctx, st, emit, func() (outbound, error) {
		frame, err := env.sp.CFCheckpt(stopHeight, m.StopHash)
		return outbound{Command: wire.CmdCFCheckpt, Frame: frame}, err
	}))
}

// ignoreSPNotFound is ignoreNotFound for the index's misses too.
func ignoreSPNotFound(err error) error {
	if errors.Is(err, spfilter.ErrNotFound) {
		return nil
	}
	return ignoreNotFound(err)
}
