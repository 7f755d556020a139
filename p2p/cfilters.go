package p2p

import (
	"context"
	"errors"
	"fmt"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
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
	// maxStaleWalk bounds the walk from a stale stop hash back to the
	// active chain in getcfcheckpt.
	maxStaleWalk = 10_000
)

// filterRange validates a getcfilters/getcfheaders request the way Core's
// PrepareBlockFilterRequest does, except that an unknown stop hash is
// waited for and then ignored (ok=false) instead of punished.
func filterRange(ctx context.Context, env *handlerEnv, ft wire.FilterType, start uint32, stop chainhash.Hash, limit uint32, cmd string) (ok bool, err error) {
	if ft != wire.GCSFilterRegular {
		return false, misbehaving("%s for unsupported filter type %d", cmd, ft)
	}
	stopHeight, _, known, err := env.awaitStop(ctx, stop)
	if err != nil || !known {
		return false, err
	}
	if start > stopHeight {
		return false, misbehaving("%s start height %d above stop height %d", cmd, start, stopHeight)
	}
	if stopHeight-start >= limit {
		return false, misbehaving("%s for %d blocks, limit %d", cmd, uint64(stopHeight-start)+1, limit)
	}
	return true, nil
}

// handleGetCFilters answers with one cfilter per block start..stop.
func handleGetCFilters(ctx context.Context, env *handlerEnv, m *wire.MsgGetCFilters, emit emitFunc) error {
	ok, err := filterRange(ctx, env, m.FilterType, m.StartHeight, m.StopHash, MaxGetCFilters, m.Command())
	if err != nil || !ok {
		return err
	}
	release, err := env.acquireFilterWork(ctx)
	if err != nil {
		return err
	}
	recs, err := env.view.FiltersForStop(m.StopHash, m.StartHeight)
	release()
	if err != nil {
		return ignoreNotFound(fmt.Errorf("getcfilters %d..%s: %w", m.StartHeight, m.StopHash, err))
	}
	if len(recs) == 0 || recs[len(recs)-1].Hash != m.StopHash || recs[0].Height != m.StartHeight {
		return fmt.Errorf("getcfilters %d..%s: view returned %d records not ending at stop", m.StartHeight, m.StopHash, len(recs))
	}
	for i := range recs {
		msg := wire.NewMsgCFilter(wire.GCSFilterRegular, &recs[i].Hash, recs[i].Filter)
		if err := emit(outbound{Msg: msg, Enc: wire.BaseEncoding}); err != nil {
			return err
		}
	}
	return nil
}

// handleGetCFHeaders answers with one cfheaders: the filter header before
// start and the filter hashes start..stop.
func handleGetCFHeaders(ctx context.Context, env *handlerEnv, m *wire.MsgGetCFHeaders, emit emitFunc) error {
	ok, err := filterRange(ctx, env, m.FilterType, m.StartHeight, m.StopHash, MaxGetCFHeaders, m.Command())
	if err != nil || !ok {
		return err
	}
	release, err := env.acquireFilterWork(ctx)
	if err != nil {
		return err
	}
	defer release()
	recs, err := env.view.FiltersForStop(m.StopHash, m.StartHeight)
	if err != nil {
		return ignoreNotFound(fmt.Errorf("getcfheaders %d..%s: %w", m.StartHeight, m.StopHash, err))
	}
	if len(recs) == 0 || recs[len(recs)-1].Hash != m.StopHash || recs[0].Height != m.StartHeight {
		return fmt.Errorf("getcfheaders %d..%s: view returned %d records not ending at stop", m.StartHeight, m.StopHash, len(recs))
	}
	resp := &wire.MsgCFHeaders{
		FilterType:   wire.GCSFilterRegular,
		StopHash:     m.StopHash,
		FilterHashes: make([]*chainhash.Hash, len(recs)),
	}
	if m.StartHeight > 0 {
		// The filter header before start, on the stop block's chain: read
		// through the parent of the first block so that no read spans more
		// than MaxGetCFHeaders heights.
		hdr, _, err := env.view.HeaderByHash(recs[0].Hash)
		if err != nil {
			return ignoreNotFound(fmt.Errorf("getcfheaders header at %d: %w", m.StartHeight, err))
		}
		prev, err := env.view.FilterHeadersForStop(hdr.PrevBlock, m.StartHeight-1)
		if err != nil || len(prev) != 1 {
			return ignoreNotFound(fmt.Errorf("getcfheaders prev header at %d: %w", m.StartHeight-1, err))
		}
		resp.PrevFilterHeader = prev[0]
	}
	for i := range recs {
		h := chainhash.DoubleHashH(recs[i].Filter)
		resp.FilterHashes[i] = &h
	}
	return emit(outbound{Msg: resp, Enc: wire.BaseEncoding})
}

// handleGetCFCheckpt answers with the filter headers at every
// CFCheckptInterval-th height up to the stop block, on the stop block's
// chain (active or stale).
func handleGetCFCheckpt(ctx context.Context, env *handlerEnv, m *wire.MsgGetCFCheckpt, emit emitFunc) error {
	if m.FilterType != wire.GCSFilterRegular {
		return misbehaving("getcfcheckpt for unsupported filter type %d", m.FilterType)
	}
	stopHeight, _, known, err := env.awaitStop(ctx, m.StopHash)
	if err != nil || !known {
		return err
	}
	release, err := env.acquireFilterWork(ctx)
	if err != nil {
		return err
	}
	defer release()
	headers, err := checkpoints(env.view, m.StopHash, stopHeight)
	if err != nil {
		return ignoreNotFound(fmt.Errorf("getcfcheckpt %s: %w", m.StopHash, err))
	}
	resp := wire.NewMsgCFCheckpt(wire.GCSFilterRegular, &m.StopHash, len(headers))
	for i := range headers {
		resp.FilterHeaders = append(resp.FilterHeaders, &headers[i])
	}
	return emit(outbound{Msg: resp, Enc: wire.BaseEncoding})
}

// checkpoints returns the filter headers at heights CFCheckptInterval,
// 2·CFCheckptInterval, … ≤ stopHeight on the chain ending at stop. Heights
// on the active chain are read by height; for a stale stop, the walk back
// to the active chain notes the branch's block at each checkpoint height,
// whose filter header is then read by hash. Every read is of one height.
func checkpoints(view ChainView, stop chainhash.Hash, stopHeight uint32) ([]chainhash.Hash, error) {
	count := stopHeight / CFCheckptInterval
	if count == 0 {
		return nil, nil
	}
	// Walk back from stop to the newest ancestor on the active chain.
	type branchPoint struct {
		height uint32
		hash   chainhash.Hash
	}
	var branch []branchPoint // stale checkpoints, highest first
	fork, forkHeight := stop, stopHeight
	for steps := 0; ; steps++ {
		_, active, err := view.HeightOf(fork)
		if err != nil {
			return nil, err
		}
		if active {
			break
		}
		if steps == maxStaleWalk || forkHeight == 0 {
			return nil, fmt.Errorf("stale branch of %s longer than %d: %w", stop, maxStaleWalk, ErrNotFound)
		}
		if forkHeight%CFCheckptInterval == 0 {
			branch = append(branch, branchPoint{forkHeight, fork})
		}
		hdr, _, err := view.HeaderByHash(fork)
		if err != nil {
			return nil, err
		}
		fork, forkHeight = hdr.PrevBlock, forkHeight-1
	}
	out := make([]chainhash.Hash, 0, count)
	for h := uint32(CFCheckptInterval); h <= forkHeight; h += CFCheckptInterval {
		fh, err := view.FilterHeadersByHeight(h, h)
		if err != nil {
			return nil, err
		}
		if len(fh) != 1 {
			return nil, fmt.Errorf("filter header at %d: %d results", h, len(fh))
		}
		out = append(out, fh[0])
	}
	for i := len(branch) - 1; i >= 0; i-- {
		fh, err := view.FilterHeadersForStop(branch[i].hash, branch[i].height)
		if err != nil {
			return nil, err
		}
		if len(fh) != 1 {
			return nil, fmt.Errorf("filter header of %s: %d results", branch[i].hash, len(fh))
		}
		out = append(out, fh[0])
	}
	// A reorg below the fork while reading would have mixed two chains.
	if hash, err := view.HashAt(forkHeight); err != nil || hash != fork {
		return nil, fmt.Errorf("chain changed under checkpoint read: %w", ErrNotFound)
	}
	if uint32(len(out)) != count {
		return nil, fmt.Errorf("%d checkpoints for stop height %d", len(out), stopHeight)
	}
	return out, nil
}

// ignoreNotFound turns a lookup that raced a rollback into "ignore the
// request" (nil); other errors pass through for the caller to log.
func ignoreNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
