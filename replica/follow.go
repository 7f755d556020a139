package replica

import (
	"context"
	"errors"
	"fmt"
	"math/big"
	"time"

	"github.com/btcsuite/btcd/chainhash/v2"
	"github.com/btcsuite/btcd/wire/v2"
	"github.com/rs/zerolog"

	"github.com/cfindexd/cfindexd/headers"
	"github.com/cfindexd/cfindexd/internal/backoff"
	"github.com/cfindexd/cfindexd/internal/p2pclient"
	"github.com/cfindexd/cfindexd/netparams"
	"github.com/cfindexd/cfindexd/store"
)

// Protocol limits of one round with the primary.
const (
	maxHeadersPerRound = 2000 // a headers message
	maxFiltersPerAsk   = 1000 // a getcfilters request
)

// Observer hears what the Follower learns; *metrics.Metrics implements it
// (the primary plays the node's part for /readyz and /status).
type Observer interface {
	// NodeTip: the primary's tip as last seen.
	NodeTip(height int64, blockTime time.Time)
	// NodeReachable: whether the last round reached the primary.
	NodeReachable(err error)
	// SetIndexedTip: the store's new tip.
	SetIndexedTip(height uint32, blockTime time.Time)
}

// FollowConfig configures a Follower.
type FollowConfig struct {
	// Primary is the primary cfindexd's P2P address, host:port.
	Primary string
	Store   *store.Store
	Network netparams.Network
	// Transport to the primary (v1, v2 or auto).
	Transport p2pclient.Transport
	// PollInterval: how often to ask the primary for new headers once
	// caught up.
	PollInterval time.Duration
	// ReorgSafetyDepth and AllowDeepReorg: as the indexer's, a reorg of
	// the primary deeper than the depth stops the Follower unless allowed.
	ReorgSafetyDepth uint32
	AllowDeepReorg   bool
	Observer         Observer
	Log              zerolog.Logger
}

// Follower keeps the store at its primary's tip as a BIP-157 light client
// of the primary: getheaders from the store's locator, getcfheaders and
// getcfilters for the new headers, each checked (links, proof of work,
// difficulty; each filter against the filter hash cfheaders sent for it,
// chained from the store's filter header), then committed;
// a branch that forks below the tip with more work replaces the stored
// one through store.Reorg.
type Follower struct {
	cfg FollowConfig
	hc  *headerChecker
}

// NewFollower returns a Follower for cfg.
func NewFollower(cfg FollowConfig) *Follower {
	if cfg.PollInterval <= 0 {
		cfg.PollInterval = time.Second
	}
	return &Follower{cfg: cfg, hc: newHeaderChecker(cfg.Network.Params, cfg.Store.HeaderAt)}
}

// Run follows the primary until ctx ends (nil) or a reorg deeper than the
// safety depth or a failing store stops it. A primary that goes away, or
// sends what fails the checks, is dialled again with backoff.
func (f *Follower) Run(ctx context.Context) error {
	bo := backoff.New(500*time.Millisecond, 30*time.Second, nil)
	for ctx.Err() == nil {
		progressed, err := f.session(ctx)
		if ctx.Err() != nil {
			return nil
		}
		if errors.Is(err, ErrDeepReorg) || errors.Is(err, errStore) {
			return err
		}
		f.cfg.Observer.NodeReachable(err)
		f.cfg.Log.Warn().Err(err).Str("primary", f.cfg.Primary).Msg("replica: primary link lost; dialling again")
		if progressed {
			bo.Reset()
		}
		if bo.Wait(ctx) != nil {
			return nil
		}
	}
	return nil
}

// errStore marks a failure of the store, which no reconnect mends.
var errStore = errors.New("store")

// session is one connection to the primary: rounds until an error.
// progressed says whether a round succeeded, so that a primary that
// answered is dialled again soon.
func (f *Follower) session(ctx context.Context) (progressed bool, err error) {
	peer, err := p2pclient.Dial(ctx, f.cfg.Primary, p2pclient.Options{
		Params: f.cfg.Network.Params, Transport: f.cfg.Transport,
		UserAgent: "/cfindexd-replica/", Require: wire.SFNodeCF,
	})
	if err != nil {
		return false, err
	}
	defer peer.Close()
	f.cfg.Log.Info().Str("primary", f.cfg.Primary).Int32("primary_height", peer.Version().LastBlock).Msg("replica: following the primary")
	for {
		caughtUp, err := f.round(ctx, peer, int64(peer.Version().LastBlock))
		if err != nil {
			return progressed, err
		}
		progressed = true
		f.cfg.Observer.NodeReachable(nil)
		if !caughtUp {
			continue
		}
		select {
		case <-ctx.Done():
			return true, nil
		case <-time.After(f.cfg.PollInterval):
		}
	}
}

// round asks the primary for the headers after the store's locator and
// commits what it sends, at most one headers message. caughtUp is true
// when the primary has nothing more. announced is the primary's height at
// the handshake: while a full headers message says there is more, the
// primary's tip is at least that, so /readyz does not call a replica
// half-way through its catch-up ready.
func (f *Follower) round(ctx context.Context, peer *p2pclient.Peer, announced int64) (caughtUp bool, err error) {
	st := f.cfg.Store
	tip, ok := st.Tip()
	if !ok {
		return false, f.genesis(ctx, peer)
	}
	locator, err := f.locator(tip.Height)
	if err != nil {
		return false, err
	}
	hdrs, err := peer.GetHeaders(ctx, locator, chainhash.Hash{})
	if err != nil {
		return false, err
	}
	if len(hdrs) == 0 {
		hdr, err := st.HeaderAt(tip.Height)
		if err != nil {
			return false, fmt.Errorf("%w: %w", errStore, err)
		}
		f.cfg.Observer.NodeTip(int64(tip.Height), hdr.Timestamp)
		return true, nil
	}
	if len(hdrs) > maxHeadersPerRound {
		return false, fmt.Errorf("%w: %d headers in one message", ErrInvalidChain, len(hdrs))
	}
	fork, active, err := st.HeightOf(hdrs[0].PrevBlock)
	if err != nil || !active {
		return false, fmt.Errorf("%w: the primary's headers build on %s, not on the store's chain", ErrInvalidChain, hdrs[0].PrevBlock)
	}
	hashes, err := f.hc.check(fork+1, hdrs[0].PrevBlock, hdrs)
	if err != nil {
		return false, fmt.Errorf("primary's headers: %w", err)
	}
	last := hdrs[len(hdrs)-1]
	primaryTip := int64(fork) + int64(len(hdrs))
	if len(hdrs) == maxHeadersPerRound {
		primaryTip = max(primaryTip, announced)
	}
	f.cfg.Observer.NodeTip(primaryTip, last.Timestamp)
	if fork < tip.Height {
		more, err := f.moreWork(fork, tip.Height, hdrs)
		if err != nil || !more {
			// The primary's branch has no more work than ours (yet):
			// keep ours, as a light client does.
			return true, err
		}
	}
	recs, err := f.filters(ctx, peer, fork, hdrs, hashes)
	if err != nil {
		return false, err
	}
	if fork < tip.Height {
		_, err = st.Reorg(fork, recs)
		f.cfg.Log.Info().Uint32("fork", fork).Uint32("old_tip", tip.Height).Uint32("new_tip", fork+uint32(len(recs))).Msg("replica: the primary reorganised; following")
	} else {
		err = st.CommitBatch(recs)
	}
	if err != nil {
		return false, fmt.Errorf("%w: %w", errStore, err)
	}
	f.cfg.Observer.SetIndexedTip(fork+uint32(len(recs)), last.Timestamp)
	return len(hdrs) < maxHeadersPerRound, nil
}

// locator returns the store's block locator at tip.
func (f *Follower) locator(tip uint32) ([]chainhash.Hash, error) {
	heights := headers.LocatorHeights(tip)
	out := make([]chainhash.Hash, len(heights))
	for i, h := range heights {
		hash, err := f.cfg.Store.HashAt(h)
		if err != nil {
			return nil, fmt.Errorf("%w: locator: %w", errStore, err)
		}
		out[i] = hash
	}
	return out, nil
}

// moreWork reports whether hdrs (from fork+1) carry more work than the
// stored blocks fork+1..tip, and refuses a reorg deeper than the safety
// depth.
func (f *Follower) moreWork(fork, tip uint32, hdrs []wire.BlockHeader) (bool, error) {
	if depth := tip - fork; depth > f.cfg.ReorgSafetyDepth && !f.cfg.AllowDeepReorg {
		return false, fmt.Errorf("%w: the primary's chain forks at height %d, %d blocks below the tip %d; reorgsafetydepth is %d", ErrDeepReorg, fork, depth, tip, f.cfg.ReorgSafetyDepth)
	}
	old, err := f.cfg.Store.Headers(fork+1, tip)
	if err != nil {
		return false, fmt.Errorf("%w: %w", errStore, err)
	}
	oldWork, newWork := new(big.Int), new(big.Int)
	for i := range old {
		oldWork.Add(oldWork, headers.Work(old[i].Bits))
	}
	for i := range hdrs {
		newWork.Add(newWork, headers.Work(hdrs[i].Bits))
	}
	return newWork.Cmp(oldWork) > 0, nil
}

// filters fetches the filter headers and filters of hdrs (from fork+1)
// and checks them against the store's filter header at fork.
func (f *Follower) filters(ctx context.Context, peer *p2pclient.Peer, fork uint32, hdrs []wire.BlockHeader, hashes []chainhash.Hash) ([]store.BlockRecord, error) {
	below, err := storedAnchor(f.cfg.Store, fork)
	if err != nil {
		return nil, fmt.Errorf("%w: %w", errStore, err)
	}
	prevFH, filterHashes, err := peer.GetCFHeaders(ctx, fork+1, hashes[len(hashes)-1])
	if err != nil {
		return nil, err
	}
	if prevFH != below.FilterHeader || len(filterHashes) != len(hdrs) {
		return nil, fmt.Errorf("%w: the primary's cfheaders start from %s with %d filter hashes; the store's filter header at %d is %s, %d blocks asked", ErrInvalidChain, prevFH, len(filterHashes), fork, below.FilterHeader, len(hdrs))
	}
	filters := make([][]byte, 0, len(hdrs))
	for i := 0; i < len(hdrs); i += maxFiltersPerAsk {
		end := min(i+maxFiltersPerAsk, len(hdrs))
		got, err := peer.GetCFilters(ctx, fork+1+uint32(i), hashes[end-1], hashes[i:end])
		if err != nil {
			return nil, err
		}
		filters = append(filters, got...)
	}
	fhs, err := chainFilterHashes(fork+1, prevFH, filters, filterHashes)
	if err != nil {
		return nil, fmt.Errorf("primary's filters: %w", err)
	}
	recs := make([]store.BlockRecord, len(hdrs))
	for i := range recs {
		recs[i] = store.BlockRecord{Height: fork + 1 + uint32(i), Hash: hashes[i], Header: hdrs[i], Filter: filters[i], FilterHeader: fhs[i], FilterHash: filterHashes[i]}
	}
	return recs, nil
}

// genesis commits the genesis block to an empty store: the network's own
// header, and the filter the primary sends for it, checked against the
// filter header it sends.
func (f *Follower) genesis(ctx context.Context, peer *p2pclient.Peer) error {
	params := f.cfg.Network.Params
	hash := *params.GenesisHash
	prevFH, filterHashes, err := peer.GetCFHeaders(ctx, 0, hash)
	if err != nil {
		return err
	}
	filters, err := peer.GetCFilters(ctx, 0, hash, []chainhash.Hash{hash})
	if err != nil {
		return err
	}
	if prevFH != (chainhash.Hash{}) {
		return fmt.Errorf("%w: the primary's cfheaders for genesis start from %s", ErrInvalidChain, prevFH)
	}
	fhs, err := chainFilterHashes(0, prevFH, filters, filterHashes)
	if err != nil {
		return fmt.Errorf("primary's genesis filter: %w", err)
	}
	hdr := params.GenesisBlock.Header
	rec := store.BlockRecord{Height: 0, Hash: hash, Header: hdr, Filter: filters[0], FilterHeader: fhs[0], FilterHash: filterHashes[0]}
	if err := f.cfg.Store.CommitBatch([]store.BlockRecord{rec}); err != nil {
		return fmt.Errorf("%w: %w", errStore, err)
	}
	f.cfg.Observer.SetIndexedTip(0, hdr.Timestamp)
	return nil
}
