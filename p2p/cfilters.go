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
)

// filterRange validates a getcfilters/getcfheaders request the way Core's
// PrepareBlockFilterRequest does, except that an unknown stop hash is
// waited for and then ignored (ok=false) instead of punished. It returns
// the stop block's height, which its hash fixes whatever reorgs follow.
func filterRange(ctx context.Context, env *handlerEnv, ft wire.FilterType, start uint32, stop chainhash.Hash, limit uint32, cmd string) (stopHeight uint32, ok bool, err error) {
	if ft != wire.GCSFilterRegular {
		return 0, false, misbehaving("%s for unsupported filter type %d", cmd, ft)
	}
	stopHeight, _, known, err := env.awaitStop(ctx, stop)
	if err != nil || !known {
		return 0, false, err
	}
	if start > stopHeight {
		return 0, false, misbehaving("%s start height %d above stop height %d", cmd, start, stopHeight)
	}
	if stopHeight-start >= limit {
		return 0, false, misbehaving("%s for %d blocks, limit %d", cmd, uint64(stopHeight-start)+1, limit)
	}
	return stopHeight, true, nil
}

// handleGetCFilters answers with one cfilter per block start..stop.
func handleGetCFilters(ctx context.Context, env *handlerEnv, m *wire.MsgGetCFilters, emit emitFunc) error {
	_, ok, err := filterRange(ctx, env, m.FilterType, m.StartHeight, m.StopHash, MaxGetCFilters, m.Command())
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
// start and the filter hashes start..stop, which the store keeps beside the
// filter headers, so no filter is read.
func handleGetCFHeaders(ctx context.Context, env *handlerEnv, m *wire.MsgGetCFHeaders, emit emitFunc) error {
	stopHeight, ok, err := filterRange(ctx, env, m.FilterType, m.StartHeight, m.StopHash, MaxGetCFHeaders, m.Command())
	if err != nil || !ok {
		return err
	}
	release, err := env.acquireFilterWork(ctx)
	if err != nil {
		return err
	}
	prev, hashes, err := env.view.FilterHashesForStop(m.StopHash, m.StartHeight)
	release()
	if err != nil {
		return ignoreNotFound(fmt.Errorf("getcfheaders %d..%s: %w", m.StartHeight, m.StopHash, err))
	}
	if want := uint64(stopHeight) - uint64(m.StartHeight) + 1; uint64(len(hashes)) != want {
		return fmt.Errorf("getcfheaders %d..%s: view returned %d filter hashes, want %d", m.StartHeight, m.StopHash, len(hashes), want)
	}
	resp := &wire.MsgCFHeaders{
		FilterType:       wire.GCSFilterRegular,
		StopHash:         m.StopHash,
		PrevFilterHeader: prev,
		FilterHashes:     make([]*chainhash.Hash, len(hashes)),
	}
	for i := range hashes {
		resp.FilterHashes[i] = &hashes[i]
	}
	return emit(outbound{Msg: resp, Enc: wire.BaseEncoding})
}

// handleGetCFCheckpt answers with the filter headers at every
// CFCheckptInterval-th height up to the stop block, on the stop block's
// chain (active or stale), read in one snapshot.
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
	headers, err := env.view.FilterHeaderCheckpoints(m.StopHash, CFCheckptInterval)
	release()
	if err != nil {
		return ignoreNotFound(fmt.Errorf("getcfcheckpt %s: %w", m.StopHash, err))
	}
	if want := stopHeight / CFCheckptInterval; uint32(len(headers)) != want {
		return fmt.Errorf("getcfcheckpt %s: view returned %d checkpoints, want %d", m.StopHash, len(headers), want)
	}
	resp := wire.NewMsgCFCheckpt(wire.GCSFilterRegular, &m.StopHash, len(headers))
	for i := range headers {
		resp.FilterHeaders = append(resp.FilterHeaders, &headers[i])
	}
	return emit(outbound{Msg: resp, Enc: wire.BaseEncoding})
}

// ignoreNotFound turns a lookup that raced a rollback into "ignore the
// request" (nil); other errors pass through for the caller to log.
func ignoreNotFound(err error) error {
	if errors.Is(err, ErrNotFound) {
		return nil
	}
	return err
}
